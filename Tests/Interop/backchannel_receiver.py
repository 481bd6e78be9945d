"""An application's back-channel logout endpoint, for OpenIDLogoutTests: prints its port,
then each logout token it receives verified by joserfc against the provider's published key
set (OpenID Connect Back-Channel Logout 1.0 §2.6), as one JSON line of claims. Answers 200 to
a good token and 400 to anything else (which the provider parks, not retries).

Its one argument is a file holding the key set's URL, read at each token: the receiver starts
before the provider, whose address is its back-channel URI's other end."""
import json
import sys
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

from joserfc import jwt
from joserfc.jwk import KeySet

jwks_file = sys.argv[1]
EVENT = "http://schemas.openid.net/event/backchannel-logout"


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        try:
            token = urllib.parse.parse_qs(body)["logout_token"][0]
            with open(jwks_file) as file:
                jwks_uri = file.read().strip()
            keys = KeySet.import_key_set(json.load(urllib.request.urlopen(jwks_uri, timeout=10)))
            claims = jwt.decode(token, keys, algorithms=["ES256"]).claims
            assert EVENT in claims["events"] and "nonce" not in claims and claims.get("sid") and claims.get("jti")
            print(json.dumps(claims), flush=True)
            self.send_response(200)
        except Exception as error:  # noqa: BLE001 — any refusal is a 400, said on stderr
            print(f"refused: {error!r}", file=sys.stderr, flush=True)
            self.send_response(400)
        self.end_headers()

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
server.serve_forever()
