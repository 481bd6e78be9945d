"""LiveSignup in front of an application through nginx's auth_request (issue 20), with the
shipped deploy/nginx/livesignup-protect.conf: an anonymous visitor is sent to sign in with
`return_to`, signs up, comes back to the application, which sees who they are in the
`X-Auth-Request-*` headers; a restart of LiveSignup keeps them signed in; signing out makes them
anonymous again. Once with plain HTTP requests (every status and header checked), once in
Chromium (the round trip a person makes).

Two nginx servers on loopback: one proxies LiveSignup (livesignup-proxy.conf), one protects a
small application (livesignup-protect.conf) that echoes the headers it was given. Browsers send
a host's cookies to every port of it, so the two share the sign-in cookie as sibling hosts do
with `--cookie-domain`.
"""
import http.server
import re
import subprocess
import tempfile
import threading
import urllib.parse
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from conftest import STRONG_PASSWORD, Server, free_port, prerequisite_missing
from instances import NGINX, NGINX_DIR, http_call, http_status, nginx_configuration, poll, read_text

class EchoApplication:
    """The application behind the proxy: answers every request with the headers it got."""

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = (f"<!DOCTYPE html><title>App</title><p id=user>{self.headers.get('X-Auth-Request-User', '')}</p>"
                        f"<p id=email>{self.headers.get('X-Auth-Request-Email', '')}</p>"
                        f"<p id=verified>{self.headers.get('X-Auth-Request-Email-Verified', '')}</p>"
                        f"<p id=preferred>{self.headers.get('X-Auth-Request-Preferred-Username', '')}</p>"
                        f"<p id=cookie>{self.headers.get('Cookie', '')}</p>"
                        f"<p id=account>{self.headers.get('X-Auth-Request-Id', '')}</p>"
                        f"<p id=path>{self.path}</p>").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


class ProtectingNginx:
    """nginx with the shipped snippets: LiveSignup on one port, the protected app on another."""

    def __init__(self, directory, livesignup_port, app_port, signup_port, protected_port):
        self.directory = Path(directory) / "nginx"
        self.directory.mkdir()
        self.signup_port, self.app_port = signup_port, protected_port
        self.error_log = self.directory / "error.log"
        (self.directory / "nginx.conf").write_text(nginx_configuration(self.directory, self.error_log, f"""
    upstream livesignup {{ server 127.0.0.1:{livesignup_port}; keepalive 8; }}
    upstream livesignup_auth {{ server 127.0.0.1:{livesignup_port}; keepalive 8; }}
    map $arg_token $livesignup_upstream {{ default livesignup; }}
    server {{
        listen 127.0.0.1:{self.signup_port};
        include {NGINX_DIR / "livesignup-proxy.conf"};
    }}
    server {{
        listen 127.0.0.1:{self.app_port};
        set $livesignup_signin http://127.0.0.1:{self.signup_port}/signin;
        set $livesignup_app http://127.0.0.1:{app_port};
        include {NGINX_DIR / "livesignup-protect.conf"};
    }}"""))
        self.process = subprocess.Popen(
            [str(NGINX), "-p", str(self.directory), "-e", str(self.error_log), "-c", str(self.directory / "nginx.conf")],
            stdout=subprocess.DEVNULL, stderr=open(self.directory / "stderr.log", "w"), stdin=subprocess.DEVNULL)
        poll(lambda: http_status(f"http://127.0.0.1:{self.signup_port}/healthz") == 200, 30, "nginx in front of LiveSignup")

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def log(self):
        return read_text(self.directory / "stderr.log") + read_text(self.error_log)


@pytest.fixture
def deployment():
    if not NGINX.exists():
        prerequisite_missing(f"nginx is not installed at {NGINX} (make test installs Debian's nginx-light)")
    app = EchoApplication()
    signup_port, protected_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as directory:
        server = Server(directory, ["--return-to-allow", f"http://127.0.0.1:{protected_port}",
                                    "--argon2-preset", "owasp-minimum"])
        nginx = None
        try:
            nginx = ProtectingNginx(directory, server.port, app.port, signup_port, protected_port)
            yield server, nginx, app
        finally:
            if nginx:
                nginx.stop()
            server.stop()
            app.close()


request = http_call


def test_a_visitor_signs_up_comes_back_signed_in_stays_through_a_restart_and_signs_out(deployment):
    server, nginx, _ = deployment
    wanted = "/reports?year=2026&team=blue"
    app_url = f"http://127.0.0.1:{nginx.app_port}{wanted}"

    status, headers, _ = request(nginx.app_port, "GET", wanted)
    assert status == 302, nginx.log()
    signin = f"http://127.0.0.1:{nginx.signup_port}/signin?return_to={app_url}"
    assert headers["location"] == signin, "anonymous: sent to sign in, with where they were going"

    _, _, page = request(nginx.signup_port, "GET", signin.split(str(nginx.signup_port), 1)[1])
    escaped = app_url.replace("&", "&amp;")
    assert f'name="return_to" value="{escaped}"' in page, "the sign-in form carries it"
    signup_link = re.search(r'<a href="(/\?return_to=[^"]+)"', page).group(1)
    assert urllib.parse.unquote(signup_link.split("return_to=", 1)[1]) == app_url, "and so does its sign-up link"

    _, _, signup_page = request(nginx.signup_port, "GET", signup_link)
    token = re.search(r'name="token" value="([^"]+)"', signup_page).group(1)
    assert f'name="return_to" value="{escaped}"' in signup_page
    body = urllib.parse.urlencode({"token": token, "username": "protected", "email": "protected@example.org",
                                   "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD, "return_to": app_url})
    status, headers, _ = request(nginx.signup_port, "POST", "/signup", body=body)
    assert status == 303
    assert headers["location"] == app_url, "signed up: back where they were going"
    cookie = headers["set-cookie"].split(";")[0]

    status, _, shown = request(nginx.app_port, "GET", wanted, cookie=f"theme=dark; {cookie}; lang=de")
    assert status == 200, nginx.log()
    assert "<p id=user>protected</p>" in shown and "<p id=preferred>protected</p>" in shown
    # Nobody proved the address (this server mails nothing): the application gets no address
    # to map the person by, and is told why.
    assert "<p id=email></p>" in shown and "<p id=verified>false</p>" in shown
    assert "<p id=cookie>theme=dark; lang=de</p>" in shown, "the sign-in cookie stays with LiveSignup"
    assert re.search(r"<p id=account>\d+</p>", shown), "the account's stable id"
    assert f"<p id=path>{wanted}</p>" in shown

    forged = request(nginx.app_port, "GET", "/", cookie="livesignup_auth=" + "A" * 43)
    assert forged[0] == 302, "a made-up cookie gets nobody in"

    server.restart()
    status, _, shown = request(nginx.app_port, "GET", wanted, cookie=cookie)
    assert status == 200 and "<p id=user>protected</p>" in shown, "still signed in after LiveSignup restarted"

    status, _, _ = request(nginx.signup_port, "POST", "/signout", cookie=cookie)
    assert status == 303
    status, headers, _ = request(nginx.app_port, "GET", wanted, cookie=cookie)
    assert status == 302 and headers["location"].startswith(f"http://127.0.0.1:{nginx.signup_port}/signin"), \
        "signed out: anonymous again, even with the old cookie"


def test_the_round_trip_in_a_browser(deployment, browser):
    _, nginx, _ = deployment
    app_url = f"http://127.0.0.1:{nginx.app_port}/inbox?folder=1&sort=new"
    browser.open(app_url)
    browser.until(lambda: "/signin" in browser.driver.current_url, "the browser is sent to sign in")
    browser.driver.find_element(By.CSS_SELECTOR, 'a[href^="/?return_to="]').click()
    browser.until_live()
    browser.fill_valid("browsertrip")
    browser.until(browser.button_enabled, "the form is ready")
    browser.button().click()
    browser.until(lambda: browser.driver.current_url == app_url, "back at the application after signing up")
    assert browser.driver.find_element(By.ID, "user").text == "browsertrip"
    assert browser.driver.find_element(By.ID, "email").text == "", "an unproved address is not handed on"
    assert browser.driver.find_element(By.ID, "verified").text == "false"
    assert "livesignup_auth" not in browser.driver.find_element(By.ID, "cookie").text
