#!/usr/bin/env python3
"""Writes the hand-made seeds of Tests/Fuzz/corpus/ (`seed-…` files): what browsers, programs,
providers and DNS servers really send, taken from the tests, the protocol docs and, for DNS,
from dnslib (a DNS implementation we did not write). The seeds a target makes itself (minted
tokens, recorded passkeys) come from `signup-fuzz seed TARGET FOLDER`; `make fuzz-seeds` runs
both. Inputs fuzzing found and kept are the corpus's other files (named by their SHA-1).

A target taking several values reads them NUL-separated (FuzzInput.texts)."""
import base64
import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "Tests" / "Fuzz" / "corpus"
SESSION = "q8Vd2Zr0bq3x6mWk1dJ8n7cT5yG4aP0sLhE9uQwXz2M"  # 43 URL-safe base64 characters


def nul(*parts):
    return "\0".join(parts)


def form_bodies():
    return {
        "edit": "token=web1.0123456789abcdef&field=username&value=ada&seq=3",
        "edit-touched": "token=web1.x&field=email&value=ada%40example.org&seq=12&touched=1",
        "password": "token=web1.x&field=password&value=Lantern-Orbit-7%21&seq=4",
        "unicode": "token=web1.x&field=username&value=%E6%97%A5%E6%9C%AC+%D8%B9%D8%B1%D8%A8%D9%8A&seq=1",
        "credential": "token=web1.x&field=credential&value=passkey&seq=2",
        "plus-and-empty": "a=&=b&&c+d=e+f&g",
        "bad-escape": "field=%zz&value=%E6%97",
    }


def cookies():
    return {
        "session": nul("livesignup_auth", f"theme=dark; livesignup_auth={SESSION}; lang=fr"),
        "host-prefix": nul("__Host-livesignup_auth", f"__Host-livesignup_auth={SESSION}"),
        "two": nul("livesignup_auth", f"livesignup_auth={SESSION}; livesignup_auth={SESSION[::-1]}"),
        "spaces": nul("livesignup_provider_flow", "  livesignup_provider_flow = x ;\tother=1"),
    }


def languages():
    return {
        "browser": nul("", "fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5"),
        "requested": nul("ar", "en-US,en;q=0.9"),
        "traditional": nul("", "zh-TW,zh;q=0.9,en;q=0.1"),
        "weights": nul("pt", "ja;q=0, ko;q=NaN, pl;q=inf, tr;q=1.0000"),
    }


def return_targets():
    return {
        "path": nul("/account?tab=devices#top", "https://signup.example.com", "same-origin"),
        "app": nul("https://app.example.com/orders?id=7&x=%2F", "", ""),
        "port": nul("https://signup.example.com:443/welcome", "null", "same-origin"),
        "evil": nul("//evil.example/%2e%2e", "https://evil.example", "cross-site"),
        "encoded": nul("/%2F%2Fevil.example", "null", "cross-site"),
        "userinfo": nul("https://signup.example.com@evil.example/", "", "same-site"),
    }


def event_streams():
    return {
        "snapshot": ("retry: 2000\n\nevent: snapshot\nid: 1\ndata: {\"rev\":0,\"requirements\":{\"username.length\":\"unmet\"},"
                     "\"messages\":{\"username\":\"\"},\"strength\":{\"score\":0,\"label\":\"\"},\"submit\":{\"enabled\":false},"
                     "\"lang\":\"en\"}\n\n"),
        "requirement": "event: requirement\r\nid: 7\r\ndata: {\"rev\":7,\"id\":\"password.length\",\"state\":\"met\"}\r\n\r\n",
        "message": "\ufeffevent: message\ndata: {\"rev\":3,\"field\":\"username\",\"text\":\"That name is taken.\"}\n\n: keep-alive\n\n",
        "submit": "event: submit\ndata: {\"rev\":9,\"enabled\":true}\n\nevent: unknown-later\ndata: x\ndata: y\n\n",
    }


def policies():
    seeds = {}
    for path in (ROOT / "Sources" / "SignupDomain" / "Resources" / "policies").glob("*.yaml"):
        seeds[path.stem] = path.read_text()
    seeds["json"] = json.dumps({"name": "json", "username": {"min_length": 3, "max_length": 20},
                                "password": {"min_length": 12}, "email": {"required": True}})
    return seeds


def settings():
    return {path.stem: path.read_text() for path in (ROOT / "docs" / "examples").glob("*.yaml")} | {
        "kinds": "server:\n  host: 0.0.0.0\n  port: 8443\n  public_origin: [https://signup.example.com]\n"
                 "store:\n  engine: postgres\nlimits:\n  edits_per_second: 2.5\nlogging:\n  json: true\n"
                 "policy:\n  rules:\n    username: {min_length: 3}\n",
    }


def discovery():
    issuer = "https://provider.example.com"
    return {
        "provider": json.dumps({
            "issuer": issuer, "authorization_endpoint": issuer + "/authorize", "token_endpoint": issuer + "/token",
            "jwks_uri": issuer + "/jwks", "userinfo_endpoint": issuer + "/userinfo",
            "response_types_supported": ["code"], "id_token_signing_alg_values_supported": ["ES256", "RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "authorization_response_iss_parameter_supported": True}),
        "http-loopback": json.dumps({"issuer": "http://127.0.0.1:9000", "authorization_endpoint": "http://127.0.0.1:9000/a",
                                     "token_endpoint": "http://127.0.0.1:9000/t", "jwks_uri": "http://127.0.0.1:9000/k"}),
    }


def key_sets():
    return {
        "ec-and-rsa": json.dumps({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "ec-1", "use": "sig", "alg": "ES256",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "RSA", "kid": "rsa-1", "alg": "RS256", "e": "AQAB",
             "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3"
                  "oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdA"
                  "ZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-"
                  "kEgU8awapJzKnqDKgw"},
            {"kty": "RSA", "kid": "enc-1", "use": "enc", "e": "AQAB", "n": "AQAB"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed-1", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}),
    }


def pwned_ranges():
    return {
        "answer": "0018A45C4D1DEF81644B54AB7F969B88D65:10\r\n00D4F6E8FA6EECAD2A3AA415EEC418D38EC:2\r\n"
                  "011053FD0102E94D6AE2F8B83D76FAF94F6:0\r\n012A7CA357541F0AC487871FEEC1891C49C:3730471\r\n",
        "lf": "0018a45c4d1def81644b54ab7f969b88d65:10\n",
        "html": "<html><body>502 Bad Gateway</body></html>\n",
    }


def dns_answers():
    from dnslib import AAAA, CNAME, DNSRecord, MX, QTYPE, RR, A
    seeds = {}
    question = DNSRecord.question("example.org", "MX")
    answer = question.reply()
    answer.add_answer(RR("example.org", QTYPE.MX, rdata=MX("mx1.example.org", 10), ttl=300))
    answer.add_answer(RR("example.org", QTYPE.MX, rdata=MX("mx2.example.org", 20), ttl=300))
    seeds["mx"] = answer.pack()
    null = question.reply()
    null.add_answer(RR("example.org", QTYPE.MX, rdata=MX(".", 0), ttl=300))
    seeds["null-mx"] = null.pack()
    cname = question.reply()
    cname.add_answer(RR("example.org", QTYPE.CNAME, rdata=CNAME("mail.example.net"), ttl=300))
    seeds["cname-only"] = cname.pack()
    a = DNSRecord.question("example.org", "A").reply()
    a.add_answer(RR("example.org", QTYPE.A, rdata=A("192.0.2.1"), ttl=60))
    seeds["a"] = a.pack()
    aaaa = DNSRecord.question("example.org", "AAAA").reply()
    aaaa.add_answer(RR("example.org", QTYPE.AAAA, rdata=AAAA("2001:db8::1"), ttl=60))
    seeds["aaaa"] = aaaa.pack()
    return seeds


def addresses():
    return {name: value for name, value in {
        "plain": "ada@example.org", "typo": "ada@gmial.com", "disposable": "x@mailinator.com",
        "subdomain": "a.b+tag@mail.sub.example.co.uk", "spaces": "  Ada@Example.ORG ", "unicode": "ádá@exämple.org",
    }.items()}


def usernames():
    return {
        "ascii": "ada_lovelace", "cyrillic-a": "p\u0430ypal", "bidi": "ali\u202ece", "japanese": "日本語の名前",
        "fullwidth": "Ａｌｉｃｅ", "nul": "a\0p\u0430ypal", "combining": "e\u0301cole", "digits": "user\u0661\u0662",
    }


def messages():
    # Byte 0 picks a language, bytes 1-2 a text; then NUL-separated values ("#n" a count).
    return {f"text-{i}": bytes([i % 12, 0, i * 17 % 256]) + b"#5\0Ada\0{n, plural, one {# x} other {# y}}" for i in range(6)}


def authorize_requests():
    challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    return {
        "web": f"response_type=code&client_id=app&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&scope=openid+email+profile"
               f"&state=af0ifjsldkj&nonce=n-0S6&code_challenge={challenge}&code_challenge_method=S256&prompt=consent&max_age=300"
               f"&ui_locales=fr+de&login_hint=ada",
        "public": f"response_type=code&client_id=Kiosk&redirect_uri=http%3A%2F%2F127.0.0.1%3A8000%2Fcb%3Fx%3D1&scope=openid"
                  f"&code_challenge={challenge}&code_challenge_method=S256&prompt=none",
        "repeated": "client_id=app&client_id=app&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback",
    }


def token_requests():
    basic = base64.b64encode(b"app:s3cret-s3cret-s3cret-s3cret-s3cret").decode()
    return {
        "basic": nul("Basic " + basic, "grant_type=authorization_code&code=abc&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback"),
        "post": nul("", "grant_type=refresh_token&refresh_token=x&client_id=app&client_secret=s3cret-s3cret-s3cret-s3cret-s3cret"),
        "public": nul("Basic " + base64.b64encode(b"Kiosk:").decode(), "grant_type=authorization_code&client_id=Kiosk"),
        "encoded": nul("Basic " + base64.b64encode(b"app:s3cret%2Ds3cret-s3cret-s3cret-s3cret").decode(), ""),
    }


SEEDS = {
    "form-body": form_bodies, "field-edit": form_bodies, "cookie": cookies, "accept-language": languages,
    "return-to": return_targets, "event-stream": event_streams, "policy-file": policies, "settings-file": settings,
    "openid-discovery": discovery, "openid-keys": key_sets, "pwned-range": pwned_ranges, "dns-answer": dns_answers,
    "mail-address": addresses, "username": usernames, "message-format": messages, "authorize-request": authorize_requests,
    "token-request": token_requests,
}

if __name__ == "__main__":
    for target, make in SEEDS.items():
        folder = CORPUS / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in make().items():
            (folder / f"seed-{name}").write_bytes(bytes(value) if isinstance(value, (bytes, bytearray)) else value.encode())
    print(f"wrote seeds for {len(SEEDS)} targets under {os.path.relpath(CORPUS)}", file=sys.stderr)
