"""The email address is proved before the account exists (issue 21), against a real SMTP server
(aiosmtpd on loopback, STARTTLS required before AUTH): the tests read each code from the message
the server received. Each person posts from a loopback address of their own (127.0.X.Y), so the
default per-address limits stay on and a control person can be shown undisturbed.
"""
import http.client
import re
import sqlite3
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from selenium.webdriver.common.by import By

from conftest import SERVER, STRONG_PASSWORD, Person, Server, free_port, make_driver, Page, wait_for
from test_accessibility import audit
from test_mail_transport import Mailbox, authenticate

SMTP_PASSWORD = "s3cret-pass"


class NotifyingMailbox(Mailbox):
    """A mailbox that wakes whoever waits for a mail, so tests wait on the arrival itself."""

    def __init__(self):
        super().__init__()
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        answer = await super().handle_DATA(server, session, envelope)
        with self.arrived:
            self.arrived.notify_all()
        return answer


class SMTPServer:
    """aiosmtpd with STARTTLS and AUTH on a fixed port, which can be stopped and started again."""

    def __init__(self, directory):
        certificate, key = Path(directory) / "cert.pem", Path(directory) / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                        str(certificate), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True)
        self.certificate = str(certificate)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(str(certificate), str(key))
        self.mailbox = NotifyingMailbox()
        self.port = free_port()
        self.controller = None
        self.start()

    def start(self):
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port, tls_context=self.context,
                                     require_starttls=True, authenticator=authenticate, auth_require_tls=True)
        self.controller.start()

    def stop(self):
        if self.controller:
            self.controller.stop()
            self.controller = None

    def mails_to(self, address):
        return [m for m in self.mailbox.messages if m["To"].lower() == address.lower()]

    def wait_for_mails(self, address, count, timeout=30):
        """Waits (at most `timeout` seconds) until `address` has `count` mails; returns them."""
        with self.mailbox.arrived:
            arrived = self.mailbox.arrived.wait_for(lambda: len(self.mails_to(address)) >= count, timeout)
        assert arrived, f"{address}: {len(self.mails_to(address))} mails, expected {count}"
        return self.mails_to(address)


def text_of(message):
    return next(part.get_content() for part in message.walk() if part.get_content_type() == "text/plain")


def code_in(message):
    return re.search(r"^\s+(\d{6})\s*$", text_of(message), re.M).group(1)


def link_in(message):
    return re.search(r"(http://\S+/verify\?link=[A-Za-z0-9_-]+)", text_of(message)).group(1)


@pytest.fixture
def mail_setup():
    """An SMTP server and a factory for LiveSignup servers sending through it."""
    assert SERVER.exists(), f"build the server first (swift build): {SERVER}"
    with tempfile.TemporaryDirectory() as directory:
        smtp = SMTPServer(directory)
        servers = []

        def start(*extra, environment=None):
            server = Server(Path(directory) / f"mail{len(servers)}", [
                "--smtp-url", f"smtp://mailer@127.0.0.1:{smtp.port}", "--smtp-require-tls",
                "--smtp-ca-file", smtp.certificate, "--mail-from", "Example Sign-up <noreply@example.org>",
                "--mail-first-retry-seconds", "1",
                # Plain posts (ten at once while the mail server is down): no proof of work
                # asked of them (see conftest); the browser test still solves its own.
                "--no-javascript-signups", "off"] + list(extra),
                environment={"LIVESIGNUP_SMTP_PASSWORD": SMTP_PASSWORD, **(environment or {})},
                inherit_settings=False, seed_demo=False, name="signup-server-with-mail")
            servers.append(server)
            return server.port, server.database

        yield smtp, start
        for server in servers:
            server.stop()
        smtp.stop()


def accounts(database):
    with sqlite3.connect(database) as db:
        return {row[0]: row[1] for row in db.execute("SELECT username, email FROM users WHERE password_hash <> '!'")}


def test_no_account_until_the_code_from_the_mail_then_signed_in(mail_setup):
    smtp, start = mail_setup
    port, database = start()
    ada = Person(port, "127.0.1.1")
    status, headers, _ = ada.sign_up("ada_proves", "ada@example.org")
    assert status == 303 and headers["location"] == f"/verify?token={ada.token}"
    status, _, page = ada.request("GET", headers["location"])
    assert status == 200 and "a…@example.org" in page and 'autocomplete="one-time-code"' in page
    assert accounts(database) == {}, "no account row before the proof"

    message = smtp.wait_for_mails("ada@example.org", 1)[0]
    session = smtp.mailbox.sessions[-1]
    assert session["tls"] and session["from"] == "noreply@example.org", "STARTTLS, the operator's sender"
    assert message["Auto-Submitted"] == "auto-generated" and message["Message-ID"].endswith("@example.org>")
    kinds = {part.get_content_type() for part in message.walk()}
    assert {"text/plain", "text/html"} <= kinds
    code = code_in(message)
    assert code in message["Subject"]

    # What the store keeps proves nothing: hashes, and a sealed mail emptied once sent (the
    # server records the delivery just after the mail server's answer).
    def mail_bodies():
        with sqlite3.connect(database) as db:
            return [row[0] for row in db.execute("SELECT body FROM outbox WHERE channel = 'mail'")]
    assert wait_for(lambda: mail_bodies() == [""], 10), "the delivered mail's body is gone"
    with sqlite3.connect(database) as db:
        pending = db.execute("SELECT code_hash, link_hash FROM pending_signups").fetchall()
    assert len(pending) == 1 and code not in pending[0][0] and len(pending[0][0]) == 64
    assert link_in(message).rsplit("=", 1)[1] not in pending[0][1]

    status, headers, _ = ada.verify(code)
    assert status == 303 and headers["location"] == "/welcome"
    assert "livesignup_auth" in ada.cookies
    status, headers, _ = ada.request("GET", "/auth")
    assert status == 200 and headers["x-auth-request-email"] == "ada@example.org"
    assert accounts(database) == {"ada_proves": "ada@example.org"}
    # The code worked once.
    status, _, page = ada.verify(code)
    assert status == 410 and 'data-problem="verification_expired"' in page


def test_ten_sign_ups_while_the_mail_server_is_down_all_arrive_once_and_verify(mail_setup):
    smtp, start = mail_setup
    port, database = start()
    smtp.stop()
    people = []
    for index in range(10):
        person = Person(port, f"127.0.2.{index + 1}")
        began = time.monotonic()
        status, headers, _ = person.sign_up(f"patient{index}", f"patient{index}@example.org")
        assert status == 303 and headers["location"].startswith("/verify?token="), "nobody waits for the mail server"
        assert time.monotonic() - began < 5
        people.append(person)
    assert smtp.mailbox.messages == []
    status, _, body = people[0].request("GET", "/readyz")
    assert status == 200, f"readiness does not depend on the mail server: {body}"
    smtp.start()
    for index, person in enumerate(people):
        mails = smtp.wait_for_mails(f"patient{index}@example.org", 1, timeout=60)
        assert len(mails) == 1, "one mail per sign-up, never two"
        status, headers, _ = person.verify(code_in(mails[0]))
        assert status == 303 and headers["location"] == "/welcome"
    assert len({m["Message-ID"] for m in smtp.mailbox.messages}) == 10
    assert len(accounts(database)) == 10


def test_wrong_codes_used_up_resend_replayed_link_and_a_control_person(mail_setup):
    smtp, start = mail_setup
    # No cooldown here (the mail limits still apply): the cooldown has its own test below.
    port, database = start("--verification-resend-seconds", "0")
    control = Person(port, "127.0.3.1")
    assert control.sign_up("control_person", "control@example.org")[0] == 303
    mallory = Person(port, "127.0.3.2")
    assert mallory.sign_up("guessed_name", "guess@example.org")[0] == 303
    right = code_in(smtp.wait_for_mails("guess@example.org", 1)[0])
    wrong = f"{(int(right) + 1) % 1_000_000:06d}"

    status, _, page = mallory.verify("12a45")
    assert status == 422 and "Enter the 6 digits from the mail" in page, "the shape, without spending a try"
    for left in (4, 3, 2, 1):
        status, _, page = mallory.verify(wrong)
        assert status == 422 and ("1 try left" if left == 1 else f"{left} tries left") in page
    status, _, page = mallory.verify(wrong)
    assert status == 422 and "Too many wrong codes" in page
    status, _, page = mallory.verify(right)
    assert status == 422 and "Too many wrong codes" in page, "even the right code, once the tries are used up"
    assert "guessed_name" not in accounts(database)

    # A new code (after the cooldown) replaces the old one and the tries start again.
    assert mallory.request("POST", "/verify/resend", {"token": mallory.token})[0] == 303
    mails = smtp.wait_for_mails("guess@example.org", 2)
    fresh = code_in(mails[1])
    if fresh != right:
        assert mallory.verify(right)[0] == 422, "the old code stopped working"
    # The link, on another device: its secret leaves the URL at once (a cookie for /verify and
    # a 303 to the clean URL); GET only shows a button naming the account (mail scanners
    # follow links); the POST, with the cookie alone, makes the account.
    other_device = Person(port, "127.0.3.3")
    link = urllib.parse.urlsplit(link_in(mails[1]))
    token = urllib.parse.parse_qs(link.query)["link"][0]
    status, headers, _ = other_device.request("GET", f"{link.path}?{link.query}")
    assert status == 303 and headers["location"] == "/verify" and headers["referrer-policy"] == "no-referrer"
    assert other_device.cookies.get("livesignup_verify_link") == token
    status, _, page = other_device.request("GET", "/verify")
    assert status == 200 and "guessed_name" in page and token not in page and "guessed_name" not in accounts(database)
    status, headers, _ = other_device.request("POST", "/verify", {})
    assert status == 303 and headers["location"] == "/welcome" and "livesignup_auth" in other_device.cookies
    status, _, _ = other_device.request("POST", "/verify", {"link": token})
    assert status == 410, "a link works once"
    assert mallory.verify(fresh)[0] == 410, "and so does the sign-up it proved"

    # The control person was not disturbed by any of it.
    status, headers, _ = control.verify(code_in(smtp.wait_for_mails("control@example.org", 1)[0]))
    assert status == 303 and headers["location"] == "/welcome"
    assert set(accounts(database)) == {"control_person", "guessed_name"}


def test_an_address_with_an_account_answers_as_a_new_one_and_tells_its_owner(mail_setup):
    smtp, start = mail_setup
    port, database = start()
    owner = Person(port, "127.0.4.1")
    owner.sign_up("the_owner", "owner@example.org")
    assert owner.verify(code_in(smtp.wait_for_mails("owner@example.org", 1)[0]))[0] == 303

    copycat = Person(port, "127.0.4.2")
    status, headers, _ = copycat.sign_up("the_copycat", "Owner@Example.ORG")
    assert status == 303 and headers["location"] == f"/verify?token={copycat.token}", "the same answer as for a new address"
    status, _, page = copycat.request("GET", headers["location"])
    assert status == 200 and "O…@Example.ORG" in page
    notice = smtp.wait_for_mails("owner@example.org", 2)[1]
    assert "tried to sign up" in notice["Subject"] and "/signin" in text_of(notice)
    assert not re.search(r"^\s+\d{6}\s*$", text_of(notice), re.M), "no code in the notice"
    for guess in ("000000", "123456"):
        assert copycat.verify(guess)[0] == 422
    assert set(accounts(database)) == {"the_owner"}, "no second account on the address"


def test_nobody_can_mail_bomb_an_address_through_the_form(mail_setup):
    smtp, start = mail_setup
    port, database = start()
    victim = "victim@example.org"
    answers = []
    for index in range(6):
        bomber = Person(port, f"127.0.5.{index + 1}")
        status, headers, page = bomber.sign_up(f"bomber{index}", victim)
        answers.append((status, headers.get("retry-after")))
    assert [status for status, _ in answers[:3]] == [303] * 3
    assert all(status == 429 and int(retry) > 60 for status, retry in answers[3:]), answers
    smtp.wait_for_mails(victim, 3)
    # Asking for new codes at once is refused, with the reason.
    bomber = Person(port, "127.0.5.9")
    bomber.sign_up("bomber_resend", "another@example.org")
    status, _, page = bomber.request("POST", "/verify/resend", {"token": bomber.token})
    assert status == 429 and "A new code can be sent in" in page, "the cooldown"
    # A control person on another address is served as usual.
    control = Person(port, "127.0.5.200")
    assert control.sign_up("calm_person", "calm@example.org")[0] == 303
    assert control.verify(code_in(smtp.wait_for_mails("calm@example.org", 1)[0]))[0] == 303
    assert len(smtp.mails_to(victim)) == 3


def sign_up_in_browser(page, url, username, address):
    """Types a sign-up into the live page as a person would, submits it, and waits for /verify."""
    page.open(url)
    page.until(lambda: not page.button_enabled(), "live")
    page.type("username", username)
    page.type("email", address)
    page.type("password", STRONG_PASSWORD)
    page.type("confirm", STRONG_PASSWORD, leave=True)
    page.until(page.button_enabled, "ready")
    page.button().click()
    page.until(lambda: "/verify" in page.driver.current_url, "on /verify")


def test_in_a_browser_the_code_from_the_mail_signs_the_person_in(mail_setup):
    smtp, start = mail_setup
    port, _ = start()
    driver = make_driver(javascript=True)
    try:
        page = Page(driver)
        sign_up_in_browser(page, f"http://127.0.0.1:{port}/", "browser_person", "browser@example.org")
        audit(page, "verify-en")
        code = code_in(smtp.wait_for_mails("browser@example.org", 1)[0])
        field = driver.find_element(By.NAME, "code")
        page.keys(field, list(code[:3]) + ["x", "x", "x"])
        assert field.get_attribute("aria-invalid") == "true", "six characters that are not six digits"
        page.keys(field, ["\ue003"] * 3 + list(code[3:]))  # Backspace, then the rest
        assert field.get_attribute("aria-invalid") is None, "the message goes once the shape is right"
        driver.find_element(By.CSS_SELECTOR, ".verify-form button[type=submit]").click()
        page.until(lambda: driver.current_url.endswith("/welcome"), "signed in")
        assert "browser_person" in driver.find_element(By.TAG_NAME, "h1").text

        # German, with the shape message showing, also at zero violations.
        sign_up_in_browser(page, f"http://127.0.0.1:{port}/?lang=de", "browser_zwei", "zwei@example.org")
        assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "de"
        field = driver.find_element(By.NAME, "code")
        page.keys(field, list("12345"))
        field.send_keys("\ue004")  # Tab: leaving a short code shows the shape message
        assert field.get_attribute("aria-invalid") == "true"
        audit(page, "verify-de-shape")
        subject = smtp.wait_for_mails("zwei@example.org", 1)[0]["Subject"]
        assert "ist Ihr Code für" in subject, f"the mail in the person's language: {subject}"
    finally:
        driver.quit()


def test_in_a_browser_the_mailed_link_leaves_the_address_bar_and_the_button_makes_the_account(mail_setup):
    """Issue 40, item 7, in Chromium: the link's secret is out of the URL before the page shows
    (a cookie for /verify, then the clean /verify), the page names the account, nothing is made
    until the button is pressed, and the button works from a page that sends no Referer (the
    browser's Origin is then "null"; its Sec-Fetch-Site says same-origin)."""
    smtp, start = mail_setup
    port, database = start()
    driver = make_driver(javascript=True)
    try:
        page = Page(driver)
        sign_up_in_browser(page, f"http://127.0.0.1:{port}/", "linked_browser", "linked@example.org")
        link = link_in(smtp.wait_for_mails("linked@example.org", 1)[0])
        secret = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["link"][0]
        driver.get(link)
        clean = urllib.parse.urlsplit(link)._replace(path="/verify", query="").geturl()
        page.until(lambda: driver.current_url == clean, f"the clean URL {clean}")
        assert secret not in driver.current_url and secret not in driver.page_source
        assert "linked_browser" in driver.find_element(By.CSS_SELECTOR, ".lead").text, "the page names the account"
        assert "linked_browser" not in accounts(database), "opening the link makes nothing"
        audit(page, "verify-link-confirm")
        driver.find_element(By.ID, "confirm").click()
        page.until(lambda: driver.current_url.endswith("/welcome"), "signed in")
        assert "linked_browser" in accounts(database)
    finally:
        driver.quit()
