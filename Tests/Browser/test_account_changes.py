"""The account page's changes (issue 43), in Chromium against the real binary, a real SMTP
server (aiosmtpd on loopback, STARTTLS and AUTH) and a webhook receiver that checks every
delivery with `standardwebhooks` (the specification's reference implementation, not ours):
a person changes the password on the live form, adds a passkey (Chromium's virtual
authenticator), names and removes it, takes their data away and deletes the account; each
change mails a notice and sends its webhook; another browser of the account is signed out by
the password change; axe finds nothing in any state, in English and German. Without
JavaScript the same changes work, a stale sign-in confirms first and continues; an old
cookie and another site's post change nothing.
"""
import http.client
import json
import os
import sqlite3

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import STRONG_PASSWORD, Page, free_port, make_driver, wait_for, Person
from test_accessibility import audit
from test_email_verification import mail_setup, text_of  # noqa: F401 (a fixture)
from test_passkeys import add_authenticator
from test_recovery import proved_account, signed_in
from test_webhooks import SECRET, Receiver

NEW_PASSWORD = "Lantern-Orchard-Quietly-58"


@pytest.fixture
def changes(mail_setup):
    """A server that mails through aiosmtpd and sends its webhooks to a verifying receiver."""
    smtp, start = mail_setup
    receiver = Receiver(free_port())
    receiver.start()
    port, database = start("--webhook-url", f"http://127.0.0.1:{receiver.port}/hooks", "--webhook-first-retry-seconds", "1",
                           "--argon2-preset", "owasp-minimum", environment={"LIVESIGNUP_WEBHOOK_SECRET": SECRET})
    try:
        yield smtp, port, database, receiver
    finally:
        receiver.stop()


def webhook_types(receiver):
    with receiver.lock:
        return sorted(event["type"] for event in receiver.verified.values())


def until_webhook(receiver, kind):
    assert wait_for(lambda: kind in webhook_types(receiver), 15), f"{kind} arrives, verified ({webhook_types(receiver)}; refused {receiver.refused})"
    with receiver.lock:
        return next(event for event in receiver.verified.values() if event["type"] == kind)


def subjects(smtp, address, count):
    return [message["Subject"] for message in smtp.wait_for_mails(address, count)]


def get(port, path, cookie, origin=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    headers = {"Cookie": cookie}
    if origin:
        headers["Origin"] = origin
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read().decode()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def sign_in(page, base, username, password=STRONG_PASSWORD):
    page.open(f"{base}/signin")
    page.type("username", username)
    page.type("password", password)
    page.driver.find_element(By.CSS_SELECTOR, ".signin-form button[type=submit]").click()
    page.until(lambda: "/welcome" in page.driver.current_url, "signed in")


def clear(page, name):
    field = page.field(name)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)


@pytest.fixture
def account_page(changes):
    """changer_js, proved by mail and signed in elsewhere too, on /account in a Chromium with a
    virtual authenticator, just signed in (so changes are open). Yields (page, base, other
    browser's cookie, smtp, port, database, receiver)."""
    smtp, port, database, receiver = changes
    base = f"http://localhost:{port}"   # WebAuthn does not take IP addresses as sites
    proved_account(smtp, port, "127.0.8.1", "changer_js", "changer@example.org")
    other = signed_in(port, "127.0.9.1", "changer_js")
    driver = make_driver(javascript=True)
    add_authenticator(driver)
    page = Page(driver)
    try:
        sign_in(page, base, "changer_js")
        page.open(f"{base}/account")
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-open-until]"), "a fresh sign-in opens changes")
        yield page, base, other, smtp, port, database, receiver
        assert not receiver.refused, "every webhook verified"
    finally:
        driver.quit()


def test_with_javascript_a_sign_in_elsewhere_appears_live_on_the_account_page(account_page):
    page, base, other, smtp, port, database, receiver = account_page
    driver = page.driver
    audit(page, "account-open-en")
    shown = len(driver.find_elements(By.CSS_SELECTOR, "[data-device]"))
    driver.execute_script("window.__sameDocument = true")
    third = signed_in(port, "127.0.9.5", "changer_js")
    page.until(lambda: len(driver.find_elements(By.CSS_SELECTOR, "[data-device]")) == shown + 1, "the new sign-in appears")
    assert driver.execute_script("return window.__sameDocument === true"), "the same page, not a reload"
    assert "127.0.9.0/24" in driver.find_element(By.CSS_SELECTOR, "[data-devices]").text
    audit(page, "account-live-devices")
    assert get(port, "/auth", third)[0] == 200


def test_with_javascript_a_new_password_is_checked_live_saved_told_and_signs_other_browsers_out(account_page):
    page, base, other, smtp, port, database, receiver = account_page
    driver = page.driver
    # The account's own name is refused as it is typed.
    driver.find_element(By.CSS_SELECTOR, 'a[data-change="password"]').click()
    page.until(lambda: driver.current_url.endswith("/account/password"), "the change form")
    page.until_live()
    page.type("current_password", STRONG_PASSWORD)
    page.type("password", "Changer_JS-2024!")
    page.until_state("password.personal", "unmet")
    audit(page, "account-password-refused-live")
    clear(page, "password")
    page.type("password", NEW_PASSWORD)
    page.type("confirm", NEW_PASSWORD)
    page.until_state("password.personal", "met")
    page.until_state("password.not_current", "met")
    page.until(lambda: page.submit_enabled() == "true", "ready to save")
    audit(page, "account-password-ready")
    page.button().click()
    page.until(lambda: "password=changed" in driver.current_url, "saved")
    assert "Password changed." in driver.find_element(By.CSS_SELECTOR, ".notice").text
    status, _, _ = get(port, "/auth", other)
    assert status == 401, "the other browser is signed out at once"
    assert any("password was changed" in subject for subject in subjects(smtp, "changer@example.org", 2))
    changed = until_webhook(receiver, "account.password_changed")
    assert changed["data"]["username"] == "changer_js" and changed["data"]["by"] == "owner"
    assert NEW_PASSWORD not in json.dumps(changed)


def test_with_javascript_a_passkey_is_added_named_and_removed_and_each_is_told(account_page):
    page, base, other, smtp, port, database, receiver = account_page
    driver = page.driver
    page.until(lambda: driver.find_element(By.CSS_SELECTOR, "[data-passkey-add-button]").is_displayed(), "add offered")
    driver.find_element(By.CSS_SELECTOR, "[data-passkey-add-button]").click()
    page.until(lambda: "passkey=added" in driver.current_url, "added, the list shown again")
    page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-passkey]"), "listed")
    audit(page, "account-passkey-added")
    until_webhook(receiver, "account.passkey_added")
    assert any("passkey was added" in subject for subject in subjects(smtp, "changer@example.org", 2))
    handle = driver.find_element(By.CSS_SELECTOR, "[data-passkey]").get_attribute("data-passkey")
    clear(page, "name")
    page.type("name", "Work key")
    driver.find_element(By.CSS_SELECTOR, ".passkey-rename button").click()
    page.until(lambda: "passkey=renamed" in driver.current_url, "renamed")
    assert "Work key" in driver.find_element(By.CSS_SELECTOR, f'[data-passkey="{handle}"] .passkey-name').text
    driver.find_element(By.CSS_SELECTOR, "[data-remove-passkey]").click()
    page.until(lambda: "passkey=removed" in driver.current_url, "removed")
    assert not driver.find_elements(By.CSS_SELECTOR, "[data-passkey]")
    until_webhook(receiver, "account.passkey_removed")
    assert any("passkey was removed" in subject for subject in subjects(smtp, "changer@example.org", 3))


def test_the_german_account_pages_pass_axe_and_the_export_holds_no_secret(account_page):
    page, base, other, smtp, port, database, receiver = account_page
    driver = page.driver
    for path, german, name in [("/account", "Passwort ändern", "account-open-de"),
                               ("/account/password", "Aktuelles Passwort", "account-password-de"),
                               ("/account/email", "E-Mail-Adresse ändern", "account-email-de"),
                               ("/account/delete", "Konto löschen", "account-delete-de")]:
        page.open(f"{base}{path}?lang=de")
        assert german in driver.page_source, path
        audit(page, name)

    # The export: the account's data, no secret.
    cookie = f"livesignup_auth={driver.get_cookie('livesignup_auth')['value']}"
    status, headers, body = get(port, "/account/export", cookie)
    assert status == 200 and "attachment" in headers["content-disposition"]
    export = json.loads(body)
    assert export["account"]["username"] == "changer_js" and export["account"]["email_verified_at"]
    with sqlite3.connect(database) as db:
        (password_hash,) = db.execute("SELECT password_hash FROM users WHERE username = 'changer_js'").fetchone()
        session_hashes = [row[0] for row in db.execute("SELECT id_hash FROM sign_in_sessions")]
    assert session_hashes, "the sessions whose hashes must stay out"
    for secret in [password_hash, "argon2", driver.get_cookie("livesignup_auth")["value"], *session_hashes, STRONG_PASSWORD]:
        assert secret not in body, "the export holds no secret"


def test_with_javascript_leaving_needs_the_username_typed_and_is_told(account_page):
    page, base, other, smtp, port, database, receiver = account_page
    driver = page.driver
    driver.find_element(By.CSS_SELECTOR, 'a[data-change="delete"]').click()
    page.until(lambda: "/account/delete" in driver.current_url, "the deletion page")
    preview = lambda: driver.find_element(By.CSS_SELECTOR, "[data-preview-sessions]").text  # noqa: E731
    before = preview()
    count = int(before.rsplit(" ", 1)[1])
    # Live: another sign-in shows in what deleting would end.
    signed_in(port, "127.0.9.6", "changer_js")
    page.until(lambda: preview() == f"Signed-in browsers: {count + 1}", f"the preview counts the new sign-in ({before})")
    audit(page, "account-delete")
    page.type("confirm_username", "changer")
    driver.find_element(By.CSS_SELECTOR, "[data-delete-account]").click()
    page.until(lambda: "Type your username exactly" in driver.page_source, "a mismatch refused")
    audit(page, "account-delete-mismatch")
    page.type("confirm_username", "changer_js")
    driver.find_element(By.CSS_SELECTOR, "[data-delete-account]").click()
    page.until(lambda: "Your account was deleted" in driver.page_source, "deleted")
    audit(page, "account-deleted")
    deleted = until_webhook(receiver, "account.deleted")
    assert deleted["data"]["username"] == "changer_js"
    assert any("was deleted" in subject for subject in subjects(smtp, "changer@example.org", 2))
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM users WHERE username = 'changer_js'").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM passkeys").fetchone() == (0,)
    assert Person(port, "127.0.9.2").request("POST", "/signin", {"username": "changer_js",
                                                                 "password": STRONG_PASSWORD})[0] == 401


def test_without_javascript_a_stale_sign_in_confirms_first_and_each_change_still_works(changes):
    smtp, port, database, receiver = changes
    base = f"http://127.0.0.1:{port}"
    proved_account(smtp, port, "127.0.8.2", "steady_nojs", "steady@example.org")
    driver = make_driver(javascript=False)
    page = Page(driver)
    try:
        sign_in(page, base, "steady_nojs")
        before = f"livesignup_auth={driver.get_cookie('livesignup_auth')['value']}"
        other = signed_in(port, "127.0.9.3", "steady_nojs")
        # Long after the sign-in: its proof moved back in the store.
        with sqlite3.connect(database) as db:
            db.execute("UPDATE sign_in_sessions SET authenticated_at = '2000-01-01 00:00:00.000'")
        page.open(f"{base}/account")
        driver.find_element(By.CSS_SELECTOR, 'a[data-change="password"]').click()
        page.until(lambda: "continue=password" in driver.current_url, "sent to confirm first")
        assert "to continue" in driver.find_element(By.CSS_SELECTOR, ".changes").text
        page.type("password", STRONG_PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "[data-confirm]").click()
        page.until(lambda: driver.current_url.endswith("/account/password"), "continued to the change")
        page.type("current_password", "not-it")
        page.type("password", NEW_PASSWORD)
        page.type("confirm", NEW_PASSWORD)
        page.button().click()
        page.until(lambda: "The current password is incorrect" in driver.page_source, "a wrong current password refused")
        page.type("current_password", STRONG_PASSWORD)
        page.type("password", NEW_PASSWORD)
        page.type("confirm", NEW_PASSWORD)
        page.button().click()
        page.until(lambda: "password=changed" in driver.current_url, "saved without JavaScript")
        until_webhook(receiver, "account.password_changed")

        # The other browser's old cookie opens nothing now.
        status, headers, _ = get(port, "/account", other)
        assert status == 303 and headers["location"].startswith("/signin")
        status, _, _ = get(port, "/account/export", other)
        assert status == 303

        # Another site's post deletes nothing, and says why.
        cookie = f"livesignup_auth={driver.get_cookie('livesignup_auth')['value']}"
        assert cookie == before, "this browser keeps its session through its own change"
        attacker = Person(port, "127.0.9.4")
        attacker.cookies = {"livesignup_auth": cookie.split("=", 1)[1]}
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        connection.request("POST", "/account/delete", body="confirm_username=steady_nojs",
                           headers={"Cookie": cookie, "Origin": "https://evil.example",
                                    "Content-Type": "application/x-www-form-urlencoded"})
        refused = connection.getresponse()
        refused_body = refused.read().decode()
        assert refused.status == 403 and "<html" in refused_body
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT count(*) FROM users WHERE username = 'steady_nojs'").fetchone() == (1,)

        # A new address without JavaScript: the server's checks, the code, the account page.
        page.open(f"{base}/account/email")
        page.type("email", "not-an-address")
        page.button().click()
        page.until(lambda: "/account/email" in driver.current_url and "error-summary" in driver.page_source, "refused readably")
        page.open(f"{base}/account/email")
        page.type("email", "steady.moved@example.org")
        page.button().click()
        page.until(lambda: "/account/email/code" in driver.current_url, "the code page")
        code_mail = smtp.wait_for_mails("steady.moved@example.org", 1)[0]
        code = __import__("re").search(r"^\s+(\d{6})\s*$", text_of(code_mail), __import__("re").M).group(1)
        page.type("code", code)
        driver.find_element(By.CSS_SELECTOR, "[data-email-code]").click()
        page.until(lambda: "email=changed" in driver.current_url, "changed without JavaScript")
        until_webhook(receiver, "account.email_changed")

        # Deleting, stale again: confirm, continue, type the name.
        with sqlite3.connect(database) as db:
            db.execute("UPDATE sign_in_sessions SET authenticated_at = '2000-01-01 00:00:00.000'")
        page.open(f"{base}/account/delete")
        page.until(lambda: "continue=delete" in driver.current_url, "confirm first")
        page.type("password", NEW_PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "[data-confirm]").click()
        page.until(lambda: driver.current_url.endswith("/account/delete"), "continued to the deletion")
        page.type("confirm_username", "steady_nojs")
        driver.find_element(By.CSS_SELECTOR, "[data-delete-account]").click()
        page.until(lambda: "Your account was deleted" in driver.page_source, "deleted without JavaScript")
        until_webhook(receiver, "account.deleted")
        assert not receiver.refused
    finally:
        driver.quit()


def accept_suggestion(page):
    found = page.driver.find_elements(By.CSS_SELECTOR, 'button[data-accept-suggestion="email"]')
    return found[0] if found and found[0].is_displayed() else None


def test_a_new_address_is_checked_live_proved_by_its_code_and_the_old_one_can_undo_it(changes):
    smtp, port, database, receiver = changes
    base = f"http://127.0.0.1:{port}"
    proved_account(smtp, port, "127.0.8.3", "mover_js", "mover@example.org")
    proved_account(smtp, port, "127.0.8.4", "resident_js", "resident@example.org")
    driver = make_driver(javascript=True)
    page = Page(driver)
    try:
        sign_in(page, base, "mover_js")
        page.open(f"{base}/account")
        assert "mover@example.org" in driver.find_element(By.CSS_SELECTOR, ".current-email").text
        driver.find_element(By.CSS_SELECTOR, 'a[data-change="email"]').click()
        page.until(lambda: driver.current_url.endswith("/account/email"), "the address form")
        page.until_live()
        assert not driver.find_elements(By.NAME, "password"), "the address alone"

        # The sign-up form's live checks: a likely typo is suggested once the field is left.
        page.type("email", "moved@gmial.com", leave=True)
        page.until(lambda: accept_suggestion(page) is not None, "the suggestion")
        assert accept_suggestion(page).text == "moved@gmail.com"
        audit(page, "account-email-suggestion")
        clear(page, "email")
        page.type("email", "moved@example.org")
        page.until(lambda: page.submit_enabled() == "true", "ready")
        page.button().click()
        page.until(lambda: "/account/email/code" in driver.current_url, "the code page")
        assert "m…@example.org" in driver.page_source
        audit(page, "account-email-code")
        code_mail = smtp.wait_for_mails("moved@example.org", 1)[0]
        code = __import__("re").search(r"^\s+(\d{6})\s*$", text_of(code_mail), __import__("re").M).group(1)
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT email FROM users WHERE username = 'mover_js'").fetchone() == ("mover@example.org",), \
                "the old address stays until the proof"
        page.type("code", "000000" if code != "000000" else "111111")
        driver.find_element(By.CSS_SELECTOR, "[data-email-code]").click()
        page.until(lambda: "tries left" in driver.page_source, "a wrong code refused readably")
        audit(page, "account-email-code-wrong")
        page.type("code", code)
        driver.find_element(By.CSS_SELECTOR, "[data-email-code]").click()
        page.until(lambda: "email=changed" in driver.current_url, "changed")
        assert "Your address was changed" in driver.find_element(By.CSS_SELECTOR, ".notice").text
        changed = until_webhook(receiver, "account.email_changed")
        assert changed["data"]["email"] == "moved@example.org"

        # Another account's proved address: the same answer, its owner told, no code in it.
        page.open(f"{base}/account/email")
        page.until_live()
        page.type("email", "resident@example.org")
        page.until(lambda: page.submit_enabled() == "true", "ready")
        page.button().click()
        page.until(lambda: "/account/email/code" in driver.current_url, "the same code page")
        told = smtp.wait_for_mails("resident@example.org", 2)[-1]
        assert "Someone tried to use your address" in told["Subject"]
        assert not __import__("re").search(r"^\s+\d{6}\s*$", text_of(told), __import__("re").M)

        # The old address is told, and brings itself back: every browser is signed out.
        old = [m for m in smtp.wait_for_mails("mover@example.org", 2) if "was changed" in m["Subject"]][-1]
        link = __import__("re").search(r"(http://\S+/account/email/undo\?link=[A-Za-z0-9_-]{43})", text_of(old)).group(1)
        cookie = f"livesignup_auth={driver.get_cookie('livesignup_auth')['value']}"
        page.open(link)
        assert driver.find_elements(By.CSS_SELECTOR, "[data-undo-email]"), "a button: opening the link spends nothing"
        audit(page, "account-email-undo")
        driver.find_element(By.CSS_SELECTOR, "[data-undo-email]").click()
        page.until(lambda: "Your address is back" in driver.page_source, "restored")
        audit(page, "account-email-restored")
        until_webhook(receiver, "account.email_restored")
        status, _, _ = get(port, "/auth", cookie)
        assert status == 401, "whoever changed it is signed out"
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT email FROM users WHERE username = 'mover_js'").fetchone() == ("mover@example.org",)
        assert not receiver.refused
    finally:
        driver.quit()
