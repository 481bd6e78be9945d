"""A second factor (issue 44), in Chromium against the real binary, with codes computed by
pyotp (PyPI), not our code: the key is read off the setup page as a person typing it into an
app would, the app's first code switches it on and ten recovery codes are shown once; then a
sign-in asks for a code after the password, judges it as soon as six digits are typed, and
takes a recovery code once. Without JavaScript the button does the same. axe finds nothing in
any state, in English and German.
"""
import re
import time

import pyotp
import pytest
from selenium.webdriver.common.by import By

from conftest import STRONG_PASSWORD, Page, Server, make_driver, Person
from test_accessibility import audit


@pytest.fixture
def factor_server(tmp_path):
    server = Server(tmp_path, ["--argon2-preset", "owasp-minimum"])
    yield server
    server.stop()


def sign_up(server, address, username):
    person = Person(server.port, address)
    _, _, page = person.request("GET", "/")
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    status, _, _ = person.request("POST", "/signup", {"token": token, "username": username, "email": f"{username}@example.org",
                                                     "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD})
    assert status == 303


def password_step(page, base, username):
    page.open(f"{base}/signin")
    page.type("username", username)
    page.type("password", STRONG_PASSWORD)
    page.driver.find_element(By.CSS_SELECTOR, ".signin-form button[type=submit]").click()


def test_set_up_with_the_key_off_the_page_then_sign_in_with_a_code_and_a_recovery_code(factor_server):
    server = factor_server
    base = server.url
    sign_up(server, "127.0.10.1", "two_steps")
    driver = make_driver(javascript=True)
    page = Page(driver)
    try:
        password_step(page, base, "two_steps")
        page.until(lambda: driver.current_url.endswith("/welcome"), "no factor yet: straight in")
        page.open(f"{base}/account")
        driver.find_element(By.CSS_SELECTOR, 'a[data-change="second-factor"]').click()
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-qr] svg"), "the QR code, drawn by the server")
        audit(page, "second-factor-setup")
        key = driver.find_element(By.CSS_SELECTOR, "[data-key]").text.replace(" ", "")
        app = pyotp.TOTP(key)
        # The otpauth URI as pyotp reads it: the same key, issuer and name.
        parsed = pyotp.parse_uri(driver.find_element(By.CSS_SELECTOR, "[data-otpauth]").get_attribute("href"))
        assert parsed.secret == key and parsed.issuer == "LiveSignup" and parsed.name == "two_steps"
        assert parsed.digits == 6 and parsed.interval == 30
        page.type("code", app.now())   # six digits: sent at once
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-recovery-codes]"), "switched on, codes shown")
        codes = [el.text for el in driver.find_elements(By.CSS_SELECTOR, "[data-recovery-codes] code")]
        assert len(codes) == 10 and all(re.fullmatch(r"[a-z2-7]{4}-[a-z2-7]{4}", c) for c in codes)
        audit(page, "second-factor-codes")
        page.open(f"{base}/account/second-factor?lang=de")
        assert "Verbleibende Wiederherstellungscodes: 10" in driver.page_source
        audit(page, "second-factor-on-de")
        driver.delete_all_cookies()

        # The password first; only then the code, judged as soon as six digits are typed.
        password_step(page, base, "two_steps")
        page.until(lambda: "/signin/second-factor" in driver.current_url, "asked for the code")
        audit(page, "second-factor-signin")
        # Issue 58: the code page in Arabic and Japanese (the same step, in the page's language).
        step = driver.current_url.split("?")[0]
        for tag in ["ar", "ja"]:
            page.open(f"{step}?lang={tag}")
            assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == tag
            audit(page, f"second-factor-signin-{tag}")
        page.open(step)
        page.type("code", "000000")
        page.until(lambda: "That code is not right" in driver.page_source, "a wrong code refused readably")
        audit(page, "second-factor-signin-wrong")
        page.type("code", app.at(time.time() + 30))   # the next step: the setup spent this one
        page.until(lambda: driver.current_url.endswith("/welcome"), "signed in with the app's code")
    finally:
        driver.quit()

    # Without JavaScript: a recovery code, once.
    driver = make_driver(javascript=False)
    page = Page(driver)
    try:
        password_step(page, base, "two_steps")
        page.until(lambda: "/signin/second-factor" in driver.current_url, "asked for the code")
        page.type("code", codes[0].upper())
        driver.find_element(By.CSS_SELECTOR, "[data-second-step-submit]").click()
        page.until(lambda: driver.current_url.endswith("/welcome"), "signed in with a recovery code")
        driver.delete_all_cookies()
        password_step(page, base, "two_steps")
        page.until(lambda: "/signin/second-factor" in driver.current_url, "asked again")
        page.type("code", codes[0])
        driver.find_element(By.CSS_SELECTOR, "[data-second-step-submit]").click()
        page.until(lambda: "was used already" in driver.page_source, "a used recovery code refused")
    finally:
        driver.quit()
