"""Getting back in (issue 42), against the real binary, a real SMTP server (aiosmtpd on
loopback, STARTTLS and AUTH) and the shipped nginx configuration: a person who forgot the
password asks at /recover, reads the code or follows the link in the mail, and chooses a new
password on the live form; every other signed-in browser of the account is signed out (its
/auth is 401 through nginx); a mail scanner that opens the link first leaves it usable; the
answer for an account and for a made-up name are the same bytes apart from their tokens; axe
finds nothing in any state.
"""
import email
import email.policy
import re
import tempfile
from pathlib import Path
import urllib.parse
import urllib.request

import pytest
from selenium.webdriver.common.by import By

from types import SimpleNamespace

from conftest import STRONG_PASSWORD, Page, Person, free_port, make_driver, metric, prerequisite_missing, wait_for
from instances import NGINX, Instance, Nginx, PostgreSQL, postgresql_bin
from test_accessibility import audit
from test_email_verification import code_in, mail_setup, text_of  # noqa: F401 (a fixture)
from test_protected_app import EchoApplication, ProtectingNginx

NEW_PASSWORD = "Harbour-Compass-Gently-77"


def recovery_link_in(message):
    return re.search(r"(http://\S+/recover\?link=[A-Za-z0-9_-]{43})", text_of(message)).group(1)


def proved_account(smtp, port, address, username, email):
    """Signs up over HTTP and proves the address with the mailed code; returns the person."""
    person = Person(port, address)
    status, _, _ = person.sign_up(username, email)
    assert status == 303
    status, _, _ = person.verify(code_in(smtp.wait_for_mails(email, 1)[0]))
    assert status == 303
    return person


def signed_in(port, address, username, password=STRONG_PASSWORD):
    """Another browser of the same person, signed in: its cookie header."""
    person = Person(port, address)
    status, _, _ = person.request("POST", "/signin", {"username": username, "password": password})
    assert status == 303
    return f"livesignup_auth={person.cookies['livesignup_auth']}"


def through_nginx(port, cookie):
    """The protected application through nginx's auth_request (livesignup-protect.conf)."""
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    connection.request("GET", "/inbox", headers={"Cookie": cookie})
    response = connection.getresponse()
    response.read()
    return response.status


@pytest.fixture
def recovery_setup(mail_setup):
    """A LiveSignup server that mails through aiosmtpd, behind the shipped nginx files in front
    of a protected application."""
    if not NGINX.exists():
        prerequisite_missing(f"nginx is not installed at {NGINX} (make test installs Debian's nginx-light)")
    smtp, start = mail_setup
    port, database = start()
    app = EchoApplication()
    signup_port, protected_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as directory:
        nginx = ProtectingNginx(directory, port, app.port, signup_port, protected_port)
        try:
            yield smtp, port, database, nginx
        finally:
            nginx.stop()
            app.close()


def test_with_javascript_the_code_leads_to_the_live_form_and_every_other_browser_is_signed_out(recovery_setup):
    smtp, port, _, nginx = recovery_setup
    proved_account(smtp, port, "127.0.2.1", "forgetful_ada", "forgetful@example.org")
    phone = signed_in(port, "127.0.2.2", "forgetful_ada")
    laptop = signed_in(port, "127.0.2.3", "forgetful_ada")
    bystander = proved_account(smtp, port, "127.0.2.4", "bystander_bob", "bob@example.org")
    control = f"livesignup_auth={bystander.cookies['livesignup_auth']}"
    for cookie in (phone, laptop, control):
        assert through_nginx(nginx.app_port, cookie) == 200, nginx.log()

    driver = make_driver(javascript=True)
    try:
        page = Page(driver)
        page.open(f"http://127.0.0.1:{nginx.signup_port}/signin")
        driver.find_element(By.LINK_TEXT, "Forgot your password?").click()
        page.until(lambda: driver.current_url.endswith("/recover"), "on /recover")
        audit(page, "recover-request")
        driver.find_element(By.CSS_SELECTOR, ".recover-form button[type=submit]").click()
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-error-summary]"), "the empty field is named")
        audit(page, "recover-request-empty")
        page.type("identifier", "forgetful_ada")
        driver.find_element(By.CSS_SELECTOR, ".recover-form button[type=submit]").click()
        page.until(lambda: driver.find_elements(By.NAME, "code"), "the code form")
        assert "If an account matches" in driver.find_element(By.CSS_SELECTOR, ".lead").text
        audit(page, "recover-code")

        mail = smtp.wait_for_mails("forgetful@example.org", 2)[1]
        code = code_in(mail)
        assert code in mail["Subject"] and "recovery code" in mail["Subject"]
        wrong = "000000" if code != "000000" else "111111"
        page.type("code", wrong)
        driver.find_element(By.CSS_SELECTOR, ".verify-form button[type=submit]").click()
        page.until(lambda: "4 tries left" in driver.page_source, "a wrong code is refused readably")
        audit(page, "recover-code-wrong")
        field = driver.find_element(By.NAME, "code")
        field.clear()
        page.keys(field, list(code))
        driver.find_element(By.CSS_SELECTOR, ".verify-form button[type=submit]").click()
        page.until(lambda: driver.current_url.endswith("/recover/password"), "the new-password form")
        assert "forgetful_ada" in driver.find_element(By.CSS_SELECTOR, ".lead").text
        page.until_live()
        audit(page, "recover-password")

        # Live: a password built on the account's name is refused as the person types it.
        page.type("password", "Forgetful_Ada_2024!", leave=True)
        page.until(lambda: "username or email" in page.message("password"), "the account's own name is refused live")
        assert page.state("password.common") == "unmet"
        audit(page, "recover-password-own-name")
        page.backspace("password", len("Forgetful_Ada_2024!"))
        page.type("password", NEW_PASSWORD)
        page.type("confirm", NEW_PASSWORD, leave=True)
        page.until(page.button_enabled, "ready")
        page.button().click()
        # Signed in, on the account page that lists every way in for the owner to look over.
        page.until(lambda: driver.current_url.endswith("/account?recovered=1"), "signed in")
        assert "Look over every way into your account" in driver.find_element(By.TAG_NAME, "body").text
        browser_cookie = f"livesignup_auth={driver.get_cookie('livesignup_auth')['value']}"
    finally:
        driver.quit()

    assert through_nginx(nginx.app_port, phone) == 302, "the phone is signed out"
    assert through_nginx(nginx.app_port, laptop) == 302, "the laptop is signed out"
    assert through_nginx(nginx.app_port, control) == 200, "another account's session is untouched"
    assert through_nginx(nginx.app_port, browser_cookie) == 200, "the browser that recovered is signed in"
    notice = smtp.wait_for_mails("forgetful@example.org", 3)[2]
    assert notice["Subject"] == "Your \u2068LiveSignup\u2069 password was changed"
    assert "signed out" in text_of(notice)
    status, _, _ = Person(port, "127.0.2.5").request("POST", "/signin",
                                                     {"username": "forgetful_ada", "password": NEW_PASSWORD})
    assert status == 303


def test_without_javascript_a_scanned_link_still_works_and_the_form_posts_plainly(recovery_setup):
    smtp, port, _, _ = recovery_setup
    proved_account(smtp, port, "127.0.3.1", "plain_grace", "grace@example.org")
    person = Person(port, "127.0.3.2")
    status, _, _ = person.request("POST", "/recover", {"identifier": "grace@example.org"})
    assert status == 200
    link = recovery_link_in(smtp.wait_for_mails("grace@example.org", 2)[1])
    secret = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["link"][0]

    # A mail scanner: opens the link, follows the redirect with the cookie, reads the page.
    scanner = Person(port, "127.0.3.3")
    status, headers, _ = scanner.request("GET", link.split(str(port), 1)[1])
    assert status == 303 and headers["location"] == "/recover/password"
    assert headers["referrer-policy"] == "no-referrer"
    status, _, shown = scanner.request("GET", "/recover/password")
    assert status == 200 and secret not in shown

    driver = make_driver(javascript=False)
    try:
        page = Page(driver)
        driver.get(link)
        page.until(lambda: urllib.parse.urlsplit(driver.current_url).path == "/recover/password", "the form")
        assert secret not in driver.current_url and secret not in driver.page_source
        page.type("password", NEW_PASSWORD)
        page.type("confirm", "Not-The-Same-Thing-1")
        driver.find_element(By.CSS_SELECTOR, "[data-submit]").click()
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-error-summary]"), "refused, readably")
        assert "match" in driver.find_element(By.CSS_SELECTOR, "[data-error-summary]").text
        page.type("password", NEW_PASSWORD)
        page.type("confirm", NEW_PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "[data-submit]").click()
        page.until(lambda: driver.current_url.endswith("/account?recovered=1"), "signed in without JavaScript")
    finally:
        driver.quit()
    status, _, _ = scanner.request("GET", "/recover/password")
    assert status == 410, "used once: the scanner's copy of the secret is void now"


def test_an_account_and_a_made_up_name_get_the_same_bytes_and_only_one_mail_goes(recovery_setup):
    smtp, port, _, _ = recovery_setup
    proved_account(smtp, port, "127.0.4.1", "real_person", "real@example.org")
    asker = Person(port, "127.0.4.2")

    def answer(identifier):
        status, headers, body = asker.request("POST", "/recover", {"identifier": identifier})
        kept = {name: value for name, value in headers.items() if name not in ("date", "content-length")}
        return status, kept, re.sub(r'name="token" value="[^"]+"', 'name="token"', body)

    real, made_up, by_address = answer("real_person"), answer("made_up_person"), answer("nobody@example.org")
    assert real == made_up == by_address
    smtp.wait_for_mails("real@example.org", 2)
    assert smtp.mails_to("nobody@example.org") == []
    # The operator can tell what the asker cannot.
    server = SimpleNamespace(port=port)
    assert metric(server, "livesignup_recoveries_total", result="mailed") == 1
    assert metric(server, "livesignup_recoveries_total", result="no_account") == 2

    # German, for an audit in another language.
    driver = make_driver(javascript=True)
    try:
        page = Page(driver)
        page.open(f"http://127.0.0.1:{port}/recover?lang=de")
        assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "de"
        assert "Benutzername oder E-Mail" in driver.page_source
        audit(page, "recover-request-de")
    finally:
        driver.quit()


def mails_in(directory, address):
    """The .eml files `--mail-dir` wrote to `address`, oldest first."""
    found = []
    for path in sorted(Path(directory).glob("*.eml"), key=lambda p: p.stat().st_mtime):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        if message["To"].lower() == address.lower():
            found.append(message)
    return found


def test_the_live_form_works_through_nginx_in_front_of_two_instances(browser):
    """The new-password form's live session lives on the instance that served it; its token
    names that instance (as a form token does), so nginx's shipped livesignup-instances.conf
    sends its stream and edits there and the checklist follows the typing."""
    bin_dir = postgresql_bin()
    if bin_dir is None or not NGINX.exists():
        prerequisite_missing("PostgreSQL's server and nginx are needed (make test installs Debian's postgresql and nginx-light)")
    with tempfile.TemporaryDirectory() as directory:
        mail_dir = Path(directory) / "mail"
        database = PostgreSQL(bin_dir)
        instances, nginx = {}, None
        try:
            database.start()
            for instance_id in ("web1", "web2"):
                instances[instance_id] = Instance(instance_id, database.url, directory,
                                                  ["--mail-dir", str(mail_dir), "--no-javascript-signups", "off"])
                instances[instance_id].start()
            nginx = Nginx(directory, {instance_id: instance.port for instance_id, instance in instances.items()})
            nginx.start()
            person = Person(nginx.port, "127.0.5.1")
            status, _, _ = person.sign_up("two_instances", "two@example.org")
            assert status == 303
            assert wait_for(lambda: len(mails_in(mail_dir, "two@example.org")) >= 1, 10), "the sign-up's code was written"
            assert person.verify(code_in(mails_in(mail_dir, "two@example.org")[0]))[0] == 303
            status, _, _ = person.request("POST", "/recover", {"identifier": "two_instances"})
            assert status == 200
            assert wait_for(lambda: len(mails_in(mail_dir, "two@example.org")) >= 2, 10), "the recovery mail was written"
            link = recovery_link_in(mails_in(mail_dir, "two@example.org")[1]).split("/recover?", 1)[1]

            browser.open(f"{nginx.url}/recover?{link}")
            browser.until(lambda: browser.driver.current_url.endswith("/recover/password"), "the new-password form")
            token = browser.driver.find_element(By.CSS_SELECTOR, 'input[name="token"]').get_attribute("value")
            assert re.fullmatch(r"web[12]\.np[0-9a-f]{32}", token), token
            browser.until_live()
            browser.type("password", NEW_PASSWORD)
            browser.type("confirm", NEW_PASSWORD, leave=True)
            browser.until(browser.button_enabled, "every requirement met through nginx, the current-password check included")
            assert browser.state("password.not_current") == "met"
            browser.button().click()
            browser.until(lambda: browser.driver.current_url.endswith("/account?recovered=1"), "signed in")
        finally:
            if nginx is not None:
                nginx.kill()
            for instance in instances.values():
                instance.stop()
            database.stop()
