"""account.created reaches the product as a signed Standard Webhook and is never lost (issue 20).

The receiver verifies every delivery with `standardwebhooks` from PyPI, the specification's
reference implementation, not our code. It is down while 20 accounts are created; when it comes
up, all 20 arrive, each verified, none missing. Then, with the receiver down again and events
pending, the server is killed with SIGKILL; after a restart they are delivered. No browser:
plain HTTP, as programs send.
"""
import base64
import http.client
import http.server
import os
import re
import subprocess
import tempfile
import threading
import urllib.parse

from standardwebhooks.webhooks import Webhook

import conftest
from conftest import SERVER, STRONG_PASSWORD, free_port, wait_for

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()


class Receiver:
    """The product's webhook endpoint on a fixed port; start and stop it at will."""

    def __init__(self, port):
        self.port = port
        self.verified = {}      # webhook-id -> the event's data
        self.deliveries = 0     # every POST, duplicates included
        self.refused = []       # signatures the reference implementation rejected
        self.httpd = None
        self.lock = threading.Lock()

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                try:
                    event = Webhook(SECRET).verify(body, dict(self.headers.items()))
                except Exception as error:  # noqa: BLE001 - any refusal is a failure here
                    with receiver.lock:
                        receiver.refused.append(str(error))
                    self.send_response(400)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.deliveries += 1
                    receiver.verified[self.headers["webhook-id"]] = event
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def usernames(self):
        with self.lock:
            return sorted(event["data"]["username"] for event in self.verified.values())


class Server(conftest.Server):
    """signup-server announcing to the receiver, configured by its flags alone."""

    def __init__(self, directory, receiver_port):
        super().__init__(directory, [
            "--log-level", "error", "--argon2-preset", "owasp-minimum", "--signups-per-address", "off",
            # Plain posts, many at once: no proof of work asked (see conftest).
            "--no-javascript-signups", "off", "--proof-max-level", "0",
            "--webhook-url", f"http://127.0.0.1:{receiver_port}/hooks/livesignup",
            "--webhook-first-retry-seconds", "1"],
            environment={"LIVESIGNUP_WEBHOOK_SECRET": SECRET}, inherit_settings=False, seed_demo=False,
            name="signup-server-with-webhooks", start=False)

    def sign_up(self, username):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        connection.request("GET", "/")
        token = re.search(r'name="token" value="([^"]+)"', connection.getresponse().read().decode()).group(1)
        body = urllib.parse.urlencode({"token": token, "username": username, "email": f"{username}@example.org",
                                       "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD})
        connection.request("POST", "/signup", body=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
        response = connection.getresponse()
        response.read()
        assert response.status == 303, f"sign-up of {username}: {response.status}"

    def metric(self, name):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request("GET", "/metrics")
        match = re.search(rf"^{re.escape(name)} (\S+)$", connection.getresponse().read().decode(), re.MULTILINE)
        return float(match.group(1)) if match else None


def test_every_account_is_announced_once_verified_through_outages_and_a_kill():
    receiver = Receiver(free_port())
    with tempfile.TemporaryDirectory() as directory:
        server = Server(directory, receiver.port)
        server.start()
        try:
            names = [f"hooked{index:02d}" for index in range(20)]
            for name in names:
                server.sign_up(name)  # the receiver is down: no sign-up waits for it
            assert wait_for(lambda: (server.metric("livesignup_webhooks_pending") or 0) == 20, 10), \
                "20 events wait in the outbox"

            receiver.start()
            assert wait_for(lambda: receiver.usernames() == names, 60), \
                f"delivered after the receiver came up: {receiver.usernames()}"
            assert receiver.refused == [], f"the reference implementation refused: {receiver.refused[:3]}"
            event = next(iter(receiver.verified.values()))
            assert event["type"] == "account.created"
            assert set(event["data"]) == {"id", "username", "email", "created_at", "email_verified", "method", "profile"}
            assert event["data"]["method"] == "password"
            assert event["data"]["email_verified"] is False, "made without a proof (no mail transport here)"
            assert wait_for(lambda: server.metric("livesignup_webhooks_pending") == 0, 10)

            # Events pending when the process dies are sent after a restart.
            receiver.stop()
            for name in ("killed1", "killed2", "killed3"):
                server.sign_up(name)
            server.kill()
            receiver.start()
            server.start()
            assert wait_for(lambda: receiver.usernames() == sorted(names + ["killed1", "killed2", "killed3"]), 60), \
                f"pending events survived the kill: {receiver.usernames()}"
            assert receiver.refused == []
            assert len(receiver.verified) == 23, "one webhook-id per account"
        finally:
            server.stop()
            receiver.stop()


def test_a_bad_url_or_secret_stops_the_start_with_a_reason():
    cases = [
        (["--webhook-url", "ftp://example.org/x"], SECRET, "--webhook-url must be an http(s) URL"),
        (["--webhook-url", "https://example.org/x"], None, "needs LIVESIGNUP_WEBHOOK_SECRET"),
        (["--webhook-url", "https://example.org/x"], "secret", "must start with whsec_"),
        (["--webhook-url", "https://example.org/x"], "whsec_" + base64.b64encode(b"short").decode(), "24 to 64 bytes"),
        ([], SECRET, "--webhook-url is not"),
    ]
    for arguments, secret, reason in cases:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("LIVESIGNUP_")}
        if secret:
            environment["LIVESIGNUP_WEBHOOK_SECRET"] = secret
        with tempfile.TemporaryDirectory() as directory:
            result = subprocess.run([str(SERVER), "--port", "0", "--database", f"{directory}/a.sqlite", *arguments],
                                    capture_output=True, text=True, env=environment, timeout=30)
        assert result.returncode != 0, arguments
        assert reason in result.stderr + result.stdout, f"{arguments}: {result.stderr}"
