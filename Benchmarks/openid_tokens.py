#!/usr/bin/env python3
"""LiveSignup as an OpenID provider (issue 56): what one sign-in through an application costs
the server, phase by phase, on one core. A first-party client (confidential, PKCE), one
signed-in person; each round is what an application does for a person: the browser's
authorize (a code stored), the code's redemption (spent once, two tokens stored, an ES256 ID
token signed by jwt-kit), userinfo, one refresh (rotated, a new ID token) and a revocation.
Server on CPU 0, this client on CPU 1, sequential requests on fresh connections; medians and
99th percentiles over the rounds.

    python3 Benchmarks/openid_tokens.py .build-bench/release/signup-server [rounds]

Neither the Hummingbird peer nor the floor speaks OpenID Connect, so there is no beside:
the figure is for comparing builds of this one (Benchmarks/figures/issue56-openid-tokens.txt).
"""
import base64, hashlib, http.client, json, os, re, secrets, statistics, subprocess, sys, tempfile, time, urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
SECRET = secrets.token_hex(32)
REDIRECT = "http://127.0.0.1:9/callback"
d = tempfile.mkdtemp()
with open(f"{d}/policy.yaml", "w") as f:
    f.write(f"name: bench\nclients:\n  - id: wiki\n    name: Wiki\n    redirect_uris: [{REDIRECT}]\n"
            "    first_party: true\n    client_secret_env: BENCH_SECRET\n")
env = dict(os.environ, BENCH_SECRET=SECRET, LIVESIGNUP_NO_JAVASCRIPT_SIGNUPS="off", LIVESIGNUP_PROOF_MAX_LEVEL="0")
server = subprocess.Popen(["taskset", "-c", "0", BIN, "--port", "0", "--database", f"{d}/a.sqlite", "--policy", f"{d}/policy.yaml",
                           "--public-directory", f"{ROOT}/Public", "--templates-directory", f"{ROOT}/Templates",
                           "--log-level", "warning", "--access-log", "off", "--argon2-preset", "owasp-minimum",
                           "--pages-per-address", "off", "--token-requests-per-address", "off"],
                          stdout=subprocess.PIPE, text=True, env=env)
os.sched_setaffinity(0, {1})
port = int(re.search(r":(\d+)", server.stdout.readline()).group(1))


def req(method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    started = time.perf_counter()
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    b = r.read()
    return time.perf_counter() - started, r.status, {k.lower(): v for k, v in r.getheaders()}, b.decode(errors="replace")


form = {"Content-Type": "application/x-www-form-urlencoded"}
basic = {"Authorization": "Basic " + base64.b64encode(f"wiki:{SECRET}".encode()).decode(), **form}
_, _, _, page = req("GET", "/")
token = re.search(r'name="token" value="([^"]+)"', page).group(1)
pw = "Lantern-Orbit-Quietly-42"
_, status, h, _ = req("POST", "/signup", urllib.parse.urlencode(
    {"token": token, "username": "benchuser", "email": "b@example.org", "password": pw, "confirm": pw}), form)
cookie = h["set-cookie"].split(";")[0]
phases = {name: [] for name in ["authorize", "token (code)", "userinfo", "token (refresh)", "revoke"]}
verifier = secrets.token_urlsafe(48)
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
query = urllib.parse.urlencode({"response_type": "code", "client_id": "wiki", "redirect_uri": REDIRECT,
                                "scope": "openid email profile", "state": "s", "nonce": "n",
                                "code_challenge": challenge, "code_challenge_method": "S256"})
for _ in range(ROUNDS):
    t, status, h, _ = req("GET", "/oauth2/authorize?" + query, headers={"Cookie": cookie})
    assert status == 303, status
    phases["authorize"].append(t)
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(h["location"]).query)["code"][0]
    t, status, _, body = req("POST", "/oauth2/token", urllib.parse.urlencode(
        {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}), basic)
    assert status == 200, body
    phases["token (code)"].append(t)
    tokens = json.loads(body)
    t, status, _, _ = req("GET", "/oauth2/userinfo", headers={"Authorization": "Bearer " + tokens["access_token"]})
    assert status == 200
    phases["userinfo"].append(t)
    t, status, _, body = req("POST", "/oauth2/token", urllib.parse.urlencode(
        {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}), basic)
    assert status == 200, body
    phases["token (refresh)"].append(t)
    t, status, _, _ = req("POST", "/oauth2/revoke", urllib.parse.urlencode({"token": json.loads(body)["refresh_token"]}), basic)
    assert status == 200
    phases["revoke"].append(t)
server.terminate()
server.wait()
print(f"{ROUNDS} rounds, sequential, server on CPU 0, client on CPU 1 ({time.strftime('%Y-%m-%d')})")
print(f"{'phase':<18}{'median ms':>10}{'p99 ms':>10}")
for name, times in phases.items():
    times.sort()
    print(f"{name:<18}{statistics.median(times) * 1000:>10.2f}{times[int(len(times) * 0.99) - 1] * 1000:>10.2f}")
