"""What an attacker's page or a too-fast client meets, in a real browser: another site cannot
sign a visitor in or create an account, and a page over a limit says so calmly and recovers."""
import http.server
import threading
import urllib.parse
import urllib.request

import pytest
from selenium.webdriver.common.by import By

from conftest import STRONG_PASSWORD


class AttackerSite:
    """A page on another origin (another port is another origin) that auto-posts a form."""

    def __init__(self, html):
        body = html.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def auto_post(action, fields):
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    return (f'<!DOCTYPE html><html><body><form id="f" method="post" action="{action}">{inputs}</form>'
            '<script>document.getElementById("f").submit();</script></body></html>')


def post(url, fields):
    """A plain program's post (no Origin header): allowed, as for any non-browser client."""
    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def account_count(server):
    import sqlite3
    with sqlite3.connect(server.database) as db:
        return db.execute("SELECT COUNT(*) FROM users").fetchone()[0]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_another_site_cannot_sign_a_visitor_in(server, browser):
    # The attacker owns an account and wants the victim's browser signed in to it.
    page = urllib.request.urlopen(server.url + "/").read().decode()
    token = page.split('name="token" value="')[1].split('"')[0]
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(urllib.request.Request(server.url + "/signup", method="POST", data=urllib.parse.urlencode({
            "token": token, "username": "mallory", "email": "m@example.com",
            "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD}).encode()))
    except urllib.error.HTTPError as error:
        assert error.code == 303, error.code
    attacker = AttackerSite(auto_post(server.url + "/signin",
                                      {"username": "mallory", "password": STRONG_PASSWORD}))
    try:
        browser.open(attacker.url)
        browser.until(lambda: browser.driver.current_url.startswith(server.url + "/signin"), "the post arrived")
        body = browser.driver.find_element(By.TAG_NAME, "body").text
        assert "another website" in body
        # Not signed in: the welcome page sends the visitor to sign in.
        browser.open(server.url + "/welcome")
        browser.until(lambda: browser.driver.current_url.endswith("/signin"), "redirected to sign in")
    finally:
        attacker.close()


def test_another_site_cannot_create_an_account(server, browser):
    before = account_count(server)
    page = urllib.request.urlopen(server.url + "/").read().decode()
    token = page.split('name="token" value="')[1].split('"')[0]
    attacker = AttackerSite(auto_post(server.url + "/signup", {
        "token": token, "username": "planted", "email": "p@example.com",
        "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD}))
    try:
        browser.open(attacker.url)
        browser.until(lambda: browser.driver.current_url.startswith(server.url + "/signup"), "the post arrived")
        assert "another website" in browser.driver.find_element(By.TAG_NAME, "body").text
        assert account_count(server) == before
    finally:
        attacker.close()


def test_a_page_over_its_edit_limit_says_so_calmly_and_recovers(server_with, browser):
    server = server_with(["--edits-per-session", "1/s,burst=4"])
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    status = browser.driver.find_element(By.CSS_SELECTOR, "[data-connection]")
    browser.type("username", "quickfingers")
    browser.until(lambda: status.is_displayed() and "Lots of activity" in status.text, "the calm slow-down notice")
    # Waits as told, re-sends the values, and the checklist catches up with what was typed.
    browser.until_state("username.length", "met")
    browser.until_state("username.available", "met")
    browser.until(lambda: not status.is_displayed(), "the notice goes away")
