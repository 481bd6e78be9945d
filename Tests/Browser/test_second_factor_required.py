"""`--second-factor required` (issue 44), in Chromium against the real binary: a new account
gets no session before it has a second factor. Signing in with the right password leads to
the setup on the sign-in's second step; its first code, from pyotp, switches it on, shows the
recovery codes and only then signs in. axe finds nothing in those states.
"""
import re

import pyotp
import pytest
from selenium.webdriver.common.by import By

from conftest import STRONG_PASSWORD, Page, Server, make_driver, Person
from test_accessibility import audit


@pytest.fixture
def required_server(tmp_path):
    server = Server(tmp_path, ["--argon2-preset", "owasp-minimum", "--second-factor", "required"])
    yield server
    server.stop()


def test_no_session_before_a_second_factor_is_set_up(required_server):
    server = required_server
    person = Person(server.port, "127.0.11.1")
    _, _, page = person.request("GET", "/")
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    status, headers, _ = person.request("POST", "/signup", {"token": token, "username": "must_set_up",
                                                           "email": "must@example.org", "password": STRONG_PASSWORD,
                                                           "confirm": STRONG_PASSWORD})
    assert status == 303 and headers["location"] == "/signin/second-factor"
    assert "livesignup_auth" not in person.cookies, "no session from the sign-up alone"

    driver = make_driver(javascript=True)
    page = Page(driver)
    try:
        page.open(f"{server.url}/signin")
        page.type("username", "must_set_up")
        page.type("password", STRONG_PASSWORD)
        driver.find_element(By.CSS_SELECTOR, ".signin-form button[type=submit]").click()
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-qr] svg"), "the setup, before any session")
        assert "asks every account for two-step sign-in" in driver.page_source
        assert driver.get_cookie("livesignup_auth") is None
        audit(page, "second-factor-required-setup")
        app = pyotp.TOTP(driver.find_element(By.CSS_SELECTOR, "[data-key]").text.replace(" ", ""))
        page.type("code", app.now())
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-recovery-codes]"), "on, the codes shown")
        assert driver.get_cookie("livesignup_auth") is not None, "signed in once it is on"
        audit(page, "second-factor-required-codes")
        driver.find_element(By.CSS_SELECTOR, "[data-codes-saved]").click()
        page.until(lambda: driver.current_url.endswith("/welcome"), "on to the welcome page")
    finally:
        driver.quit()
