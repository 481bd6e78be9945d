"""OpenID providers on loopback for the provider tests (issue 45).

`MockProvider` is oidc-provider-mock (PyPI), an Authlib provider we did not write, as it
ships: discovery, its own RS256 key, the authorization form and the token endpoint.

`TamperingProvider` is the same provider behind a WSGI layer that can lie the ways a broken
or hostile provider would: it publishes its own key set (an RS256 and an ES256 key, made and
used by joserfc, a JOSE library we did not write either) and re-signs each ID token the
provider issues, valid by default or with one fault: another nonce, expired, signed by a key
not in the set, for another audience, or by a key that rotated in. It also holds the code's
exchange to PKCE (RFC 7636, S256), which oidc-provider-mock does not check: a relying party
that sent no verifier, or the wrong one, gets `invalid_grant`.

Run as a script, it serves the tampering provider: `python3 oidc_providers.py PORT`, and
`POST /fault` with the fault's name as the body switches it (`none` for honest answers).
"""
import base64
import hashlib
import io
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

HERE = Path(__file__).resolve().parent



def wait_for_discovery(issuer, process, timeout=20):
    """Waits (bounded, on the answer itself) until the provider serves its discovery document."""
    from conftest import wait_for

    def answers():
        assert process.poll() is None, f"the provider at {issuer} exited"
        try:
            with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False  # not listening yet

    assert wait_for(answers, timeout), f"the provider at {issuer} did not answer discovery within {timeout} s"


class _Process:
    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def put_user(self, sub, claims):
        """The claims the provider says about `sub` (oidc-provider-mock's PUT /users/<sub>)."""
        request = urllib.request.Request(f"{self.issuer}/users/{sub}", data=json.dumps(claims).encode(), method="PUT",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 204


class MockProvider(_Process):
    def __init__(self, log):
        from conftest import free_port  # oidc-provider-mock takes a port; it cannot be told 0
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "oidc_provider_mock", "--port", str(self.port)],
                                        stdout=log, stderr=log)
        wait_for_discovery(self.issuer, self.process)


class TamperingProvider(_Process):
    def __init__(self, log):
        from conftest import free_port
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, str(HERE / "oidc_providers.py"), str(self.port)],
                                        stdout=log, stderr=log)
        wait_for_discovery(self.issuer, self.process)

    def fault(self, name):
        request = urllib.request.Request(f"{self.issuer}/fault", data=name.encode(), method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200

    def token_calls(self):
        """How many times its token endpoint was asked."""
        with urllib.request.urlopen(f"{self.issuer}/token_calls", timeout=10) as answer:
            return int(answer.read())


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _claims_of(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def serve_tampering(port):
    import oidc_provider_mock
    from joserfc import jwt
    from joserfc.jwk import ECKey, KeySet, RSAKey
    from werkzeug.serving import make_server
    from werkzeug.wrappers import Request, Response

    inner = oidc_provider_mock.app()
    keys = {"rsa": RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "use": "sig", "alg": "RS256"}),
            "ec": ECKey.generate_key("P-256", parameters={"kid": "ec-1", "use": "sig", "alg": "ES256"}),
            "rotated": RSAKey.generate_key(2048, parameters={"kid": "rsa-2", "use": "sig", "alg": "RS256"}),
            # Same kid as the published RSA key, never published: a forged signature.
            "stranger": RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "use": "sig", "alg": "RS256"})}
    state = {"fault": "none", "challenges": {}, "token_calls": 0}

    def published():
        chosen = [keys["rsa"], keys["ec"]] + ([keys["rotated"]] if state["fault"] == "rotated" else [])
        return KeySet(chosen).as_dict(private=False)

    def tampered(claims):
        fault, now = state["fault"], int(time.time())
        claims = dict(claims)
        if fault == "wrong_nonce":
            claims["nonce"] = "not-the-nonce-that-was-sent"
        elif fault == "expired":
            claims["iat"], claims["exp"] = now - 7200, now - 3600
        elif fault == "wrong_audience":
            claims["aud"] = "someone-else"
        key, alg = {"es256": (keys["ec"], "ES256"), "bad_signature": (keys["stranger"], "RS256"),
                    "rotated": (keys["rotated"], "RS256")}.get(fault, (keys["rsa"], "RS256"))
        return jwt.encode({"alg": alg, "kid": key.kid}, claims, key)

    def app(environ, start_response):
        # The body read once and put back, for the provider behind to read again.
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(raw)
        request = Request(environ)
        if request.path == "/fault" and request.method == "POST":
            state["fault"] = raw.decode().strip()
            return Response("ok")(environ, start_response)
        if request.path == "/token_calls":
            return Response(str(state["token_calls"]))(environ, start_response)
        if request.path == "/jwks":
            return Response(json.dumps(published()), content_type="application/json",
                            headers={"Cache-Control": "max-age=3600"})(environ, start_response)
        if request.path == "/oauth2/token" and request.method == "POST":
            state["token_calls"] += 1
            form = {name: values[0] for name, values in parse_qs(raw.decode()).items()}
            challenge = state["challenges"].pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            if challenge is None or _b64url(hashlib.sha256(verifier.encode()).digest()) != challenge:
                return Response(json.dumps({"error": "invalid_grant", "error_description": "PKCE verifier does not match"}),
                                status=400, content_type="application/json")(environ, start_response)
        captured = {}

        def capture(status, headers, exc_info=None):
            captured["status"], captured["headers"] = status, headers
            return lambda data: None

        body = b"".join(inner.wsgi_app(environ, capture))
        headers = dict(captured["headers"])
        if request.path == "/oauth2/authorize" and request.method == "POST" and "Location" in headers:
            # The code the provider issued, and the challenge its request carried.
            code = parse_qs(urlparse(headers["Location"]).query).get("code", [None])[0]
            if code and request.args.get("code_challenge_method") == "S256":
                state["challenges"][code] = request.args.get("code_challenge")
        if request.path == "/.well-known/openid-configuration":
            # Its own keys sign with both algorithms, and it holds codes to PKCE.
            document = json.loads(body)
            document["id_token_signing_alg_values_supported"] = ["RS256", "ES256"]
            document["code_challenge_methods_supported"] = ["S256"]
            body = json.dumps(document).encode()
            headers["Content-Length"] = str(len(body))
        if request.path == "/oauth2/token" and captured["status"].startswith("200"):
            answer = json.loads(body)
            answer["id_token"] = tampered(_claims_of(answer["id_token"]))
            body = json.dumps(answer).encode()
            headers["Content-Length"] = str(len(body))
        start_response(captured["status"], list(headers.items()))
        return [body]

    make_server("127.0.0.1", port, app, threaded=True).serve_forever()


if __name__ == "__main__":
    serve_tampering(int(sys.argv[1]))
