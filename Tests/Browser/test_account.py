"""The account page (issue 43, its first part), in Chromium against the real binary: a person
signed in on two browsers sees both on /account, signs the other one out from here, and that
browser is signed out at once; axe finds nothing on the page, in English and German.
"""
import sqlite3

import pytest
from selenium.webdriver.common.by import By

from conftest import STRONG_PASSWORD, Page, Server, make_driver, Person
from test_accessibility import audit



@pytest.fixture
def account_server(tmp_path):
    server = Server(tmp_path, ["--argon2-preset", "owasp-minimum"])
    yield server
    server.stop()


def test_a_person_sees_where_they_are_signed_in_and_signs_another_browser_out(account_server):
    server = account_server
    person = Person(server.port, "127.0.6.1")
    _, _, page = person.request("GET", "/")
    import re
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    status, _, _ = person.request("POST", "/signup", {"token": token, "username": "two_browsers", "email": "two@example.org",
                                                     "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD})
    assert status == 303
    # The other browser: a program (no User-Agent: "A browser"), from another network.
    other = Person(server.port, "127.0.7.1")
    status, _, _ = other.request("POST", "/signin", {"username": "two_browsers", "password": STRONG_PASSWORD})
    assert status == 303
    assert other.request("GET", "/auth")[0] == 200

    driver = make_driver(javascript=True)
    try:
        browser = Page(driver)
        browser.open(f"{server.url}/signin")
        browser.type("username", "two_browsers")
        browser.type("password", STRONG_PASSWORD)
        driver.find_element(By.CSS_SELECTOR, ".signin-form button[type=submit]").click()
        browser.until(lambda: driver.current_url.endswith("/welcome"), "signed in")
        driver.find_element(By.CSS_SELECTOR, 'a[href^="/account"]').click()
        browser.until(lambda: driver.current_url.endswith("/account"), "the account page")
        devices = driver.find_elements(By.CSS_SELECTOR, "[data-device]")
        assert len(devices) == 3, "the sign-up's, the other browser's and this one"
        assert len(driver.find_elements(By.CSS_SELECTOR, "[data-this-browser]")) == 1
        assert "127.0.7.0/24" in driver.page_source and "127.0.7.1" not in driver.page_source
        audit(browser, "account-en")
        driver.find_element(By.CSS_SELECTOR, "[data-end-others]").click()
        browser.until(lambda: "others=2" in driver.current_url, "signed out everywhere else")
        assert "Signed out everywhere else (2)." in driver.find_element(By.CSS_SELECTOR, ".notice").text
        assert len(driver.find_elements(By.CSS_SELECTOR, "[data-device]")) == 1
        audit(browser, "account-ended")
        browser.open(f"{server.url}/account?lang=de")
        assert "Wo Sie angemeldet sind" in driver.page_source
        audit(browser, "account-de")

        # Long after the sign-in (its time moved back in the store): the page asks for the
        # password before sensitive changes; a wrong one is refused, the right one reopens.
        with sqlite3.connect(server.database) as db:
            db.execute("UPDATE sign_in_sessions SET authenticated_at = '2000-01-01 00:00:00.000'")
        browser.open(f"{server.url}/account")
        browser.until(lambda: driver.find_elements(By.CSS_SELECTOR, "form.confirm-form"), "asks to confirm")
        assert not driver.find_elements(By.CSS_SELECTOR, "[data-open-until]")
        audit(browser, "account-confirm")
        browser.type("password", "not-the-password")
        driver.find_element(By.CSS_SELECTOR, "[data-confirm]").click()
        browser.until(lambda: "The password is incorrect" in driver.page_source, "refused readably")
        audit(browser, "account-confirm-wrong")
        browser.type("password", STRONG_PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "[data-confirm]").click()
        browser.until(lambda: driver.find_elements(By.CSS_SELECTOR, "[data-open-until]"), "open again")
        assert "Confirmed." in driver.find_element(By.CSS_SELECTOR, ".notice").text
    finally:
        driver.quit()
    assert other.request("GET", "/auth")[0] == 401, "the other browser is signed out at once"
    assert person.request("GET", "/auth")[0] == 401, "and so is the sign-up's"
