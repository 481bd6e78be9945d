"""Records Chromium's passkey responses for CeremonyTests' fixture (see README.md here).

    python3 Tests/WebAuthnTests/Fixtures/capture.py   # after swift build; writes /tmp/chromium-passkeys.json
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "Tests/Browser"))
from conftest import SERVER, make_driver
from test_passkeys import add_authenticator
database = Path(tempfile.mkdtemp()) / "capture.sqlite"
srv = subprocess.Popen([str(SERVER), "--port", "0", "--database", str(database),
    "--public-directory", str(ROOT / "Public"), "--templates-directory", str(ROOT / "Templates"), "--log-level", "warning"],
    stdout=subprocess.PIPE, text=True)
port = re.search(r":(\d+)", srv.stdout.readline()).group(1)
d = make_driver()
fixtures = {}
try:
    d.get(f"http://localhost:{port}/")
    add_authenticator(d)
    for alg in (-7, -257):
        reg = d.execute_async_script("""
          var done = arguments[arguments.length - 1], alg = arguments[0];
          var challenge = new Uint8Array(32); for (var i = 0; i < 32; i++) challenge[i] = i;
          var user = new Uint8Array(16); for (var j = 0; j < 16; j++) user[j] = 255 - j;
          navigator.credentials.create({publicKey: {challenge: challenge, rp: {id: "localhost", name: "LiveSignup"},
            user: {id: user, name: "ada", displayName: "ada"}, pubKeyCredParams: [{type: "public-key", alg: alg}],
            authenticatorSelection: {residentKey: "required", userVerification: "preferred"}, attestation: "none"}})
          .then(function (c) { done(c.toJSON()); }, function (e) { done({error: String(e)}); });
        """, alg)
        got = d.execute_async_script("""
          var done = arguments[arguments.length - 1], id = arguments[0];
          var challenge = new Uint8Array(32); for (var i = 0; i < 32; i++) challenge[i] = 100 + i;
          function b64u(s) { s = s.replace(/-/g, '+').replace(/_/g, '/'); while (s.length % 4) s += '='; var b = atob(s), a = new Uint8Array(b.length); for (var i = 0; i < b.length; i++) a[i] = b.charCodeAt(i); return a; }
          navigator.credentials.get({publicKey: {challenge: challenge, rpId: "localhost",
            allowCredentials: [{type: "public-key", id: b64u(id)}], userVerification: "preferred"}})
          .then(function (c) { done(c.toJSON()); }, function (e) { done({error: String(e)}); });
        """, reg["id"])
        fixtures[str(alg)] = {"origin": f"http://localhost:{port}", "rpId": "localhost", "registration": reg, "assertion": got}
finally:
    d.quit(); srv.terminate()
json.dump(fixtures, open("/tmp/chromium-passkeys.json", "w"), indent=1)
print({k: (list(v["registration"].keys()), list(v["assertion"]["response"].keys())) for k, v in fixtures.items()})
