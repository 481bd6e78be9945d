"""With JavaScript off the page is a plain server-rendered form: post, fix, post, welcome."""
from selenium.webdriver.common.by import By

from conftest import STRONG_PASSWORD


def test_plain_form_post_shows_the_error_summary_keeps_values_and_succeeds_after_fixing(
        server, browser_without_javascript):
    page = browser_without_javascript
    page.open(server.url)
    assert page.button_enabled(), "served enabled: without the script it must work"
    page.type("username", "alice")  # taken
    page.type("email", "not-an-email")
    page.type("password", "short")
    page.type("confirm", "short")
    page.button().click()

    page.until(lambda: page.driver.title.startswith("Error: "), "the page title says there is an error")
    summary = page.driver.find_element(By.CSS_SELECTOR, "[data-error-summary]")
    assert "There is a problem" in summary.text
    links = {a.get_attribute("href").split("#")[-1]: a.text
             for a in summary.find_elements(By.CSS_SELECTOR, "a")}
    assert links["username"] == "That username is taken"
    assert links["email"] == "Enter an email address like name@example.com"
    assert links["password"] == "Password must be at least 8 characters"
    assert page.driver.switch_to.active_element == summary, "focus moves to the summary"
    assert page.field("username").get_attribute("value") == "alice", "username kept"
    assert page.field("email").get_attribute("value") == "not-an-email", "email kept"
    assert page.field("password").get_attribute("value") == "", "passwords are never sent back"
    assert page.field("email").get_attribute("aria-invalid") == "true"
    page.screenshot("5-error-summary")

    for name in ("username", "email"):
        page.field(name).clear()
    page.type("username", "plainform")
    page.type("email", "plain@example.com")
    page.type("password", STRONG_PASSWORD)
    page.type("confirm", STRONG_PASSWORD)
    page.button().click()
    page.until(lambda: "/welcome" in page.driver.current_url, "signed up without JavaScript")
    assert page.driver.find_element(By.TAG_NAME, "h1").text == "Welcome, plainform!"
