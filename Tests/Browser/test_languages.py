"""Languages in a real browser: the German page live, the switcher keeping what was typed,
and axe-core at zero violations in German."""
from selenium.webdriver.common.by import By

from conftest import STRONG_PASSWORD
from test_accessibility import audit


def test_the_german_page_is_german_live_and_accessible(server, browser):
    browser.open(server.url + "/?lang=de")
    assert browser.driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "de"
    assert browser.driver.find_element(By.TAG_NAME, "h1").text == "Konto erstellen"
    audit(browser, "german-fresh")
    browser.type("username", "ab", leave=True)
    browser.until(lambda: "mindestens 4 Zeichen" in browser.message("username"),
                  "the live message comes in German")
    # Activating the unready button lists what is missing, in German too.
    browser.button().click()
    summary = browser.driver.find_element(By.CSS_SELECTOR, "[data-missing-summary]")
    browser.until(lambda: summary.is_displayed(), "the missing-summary shows")
    assert "E-Mail-Adresse" in summary.text, summary.text
    audit(browser, "german-missing-summary")


def test_switching_language_keeps_what_was_typed(server, browser):
    browser.open(server.url)
    assert browser.driver.find_element(By.TAG_NAME, "h1").text == "Create an account"
    browser.type("username", "sprachwechsel", leave=True)
    browser.type("email", "wechsel@example.com", leave=True)
    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.until_state("email.format", "met")
    browser.driver.find_element(By.CSS_SELECTOR, '[data-language="de"]').click()

    browser.until(lambda: browser.driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "de",
                  "the page reloads in German")
    assert browser.driver.find_element(By.TAG_NAME, "h1").text == "Konto erstellen"
    for field, value in (("username", "sprachwechsel"), ("email", "wechsel@example.com"), ("password", STRONG_PASSWORD)):
        assert browser.field(field).get_attribute("value") == value, f"{field} kept"
    # The new session learns the values: their requirements come back met, in German.
    for requirement in ("username.length", "username.available", "email.format", "password.length"):
        browser.until_state(requirement, "met")
    browser.type("confirm", "nicht-gleich", leave=True)
    browser.until(lambda: browser.message("confirm") != "" and "match" not in browser.message("confirm"),
                  "the confirmation's message is German")
    assert browser.driver.execute_script("return sessionStorage.getItem('livesignup-carry')") is None, \
        "nothing typed stays in storage after the reload"


def test_the_german_refusal_page_is_german_and_accessible(server, browser):
    browser.open(server.url + "/?lang=de")
    browser.type("username", "ab")
    browser.submit_as_is()
    browser.until(lambda: browser.driver.find_elements(By.CSS_SELECTOR, "[data-error-summary]"),
                  "the 422 page with its error summary")
    assert browser.driver.title.startswith("Fehler: Konto erstellen"), browser.driver.title
    summary = browser.driver.find_element(By.CSS_SELECTOR, "[data-error-summary]")
    assert "mindestens 4 Zeichen" in summary.text, summary.text
    audit(browser, "german-422")
