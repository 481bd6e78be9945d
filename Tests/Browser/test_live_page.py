"""The live page in a real browser, typed into key by key like a person."""
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import STRONG_PASSWORD


def test_fresh_page_has_everything_unmet_no_messages_and_the_button_disabled(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "the script disables the button")
    states = browser.states()
    assert len(states) == 9
    assert set(states.values()) == {"unmet"}
    for field in ("username", "email", "password", "confirm"):
        assert browser.message(field) == ""
    browser.screenshot("1-fresh")


def test_username_requirements_cross_out_at_the_right_keystroke_and_taken_shows_on_leaving(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.type("username", "bob")
    browser.until_state("username.charset", "met")
    assert browser.state("username.length") == "unmet", "3 characters are not enough"
    browser.type("username", "b")  # "bobb": the 4th character
    browser.until_state("username.length", "met")
    browser.until(lambda: browser.state("username.available") in ("pending", "met"), "availability asked")
    browser.until_state("username.available", "met")

    browser.backspace("username", 4)
    browser.type("username", "alice")  # taken (--seed-demo)
    browser.until_state("username.available", "unmet")
    assert browser.message("username") == "", "no message while still in the field"
    browser.field("username").send_keys(Keys.TAB)
    browser.until(lambda: browser.message("username") == "That username is taken", "taken message after leaving")
    assert browser.field("username").get_attribute("aria-invalid") == "true"
    browser.screenshot("2-username-taken")


def test_password_requirements_cross_and_uncross_and_confirmation_speaks_after_leaving(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    assert browser.score() == 0
    browser.type("password", "quokkas")  # 7 characters
    browser.until_state("password.common", "met")
    assert browser.state("password.length") == "unmet"
    browser.type("password", "-")  # the 8th crosses it out
    browser.until_state("password.length", "met")
    browser.backspace("password")  # and Backspace un-crosses it
    browser.until_state("password.length", "unmet")
    browser.type("password", "-")
    browser.until_state("password.length", "met")

    assert browser.state("password.uppercase") == "unmet"
    browser.type("password", "Orbit")
    browser.until_state("password.uppercase", "met")
    browser.until(lambda: browser.score() > 0, "the meter moves")
    browser.type("password", "-Quietly-42")
    browser.until_state("password.strength", "met")
    browser.until(lambda: browser.score() >= 3, "a long passphrase is strong")

    browser.backspace("password", len("Orbit-Quietly-42"))  # back to "quokkas-"
    browser.until_state("password.uppercase", "unmet")
    browser.type("password", "Orbit-Quietly-42")
    browser.until_state("password.uppercase", "met")

    browser.type("confirm", "quokkas-Orbit")
    browser.until_state("confirm.match", "unmet")
    assert browser.message("confirm") == "", "no message while still in the field"
    browser.field("confirm").send_keys(Keys.TAB)
    browser.until(lambda: browser.message("confirm") == "Passwords don't match", "mismatch after leaving")
    browser.type("confirm", "-Quietly-42")
    browser.until_state("confirm.match", "met")
    browser.until(lambda: browser.message("confirm") == "", "mismatch message clears when fixed")
    browser.screenshot("3-password")


def test_button_enables_exactly_when_everything_is_met_and_signs_up(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.type("username", "lovelace", leave=True)
    browser.type("email", "ada@example.com", leave=True)
    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.type("confirm", STRONG_PASSWORD[:-1])
    browser.until_state("password.strength", "met")
    browser.until_state("username.available", "met")
    assert not browser.button_enabled(), "one requirement (confirm.match) is still unmet"
    browser.type("confirm", STRONG_PASSWORD[-1])
    browser.until(browser.button_enabled, "all met: the button enables")
    assert set(browser.states().values()) == {"met"}
    browser.screenshot("4-ready")
    browser.button().click()
    browser.until(lambda: "/welcome" in browser.driver.current_url, "lands on the welcome page")
    assert browser.driver.find_element(By.TAG_NAME, "h1").text == "Welcome, lovelace!"
    browser.screenshot("4-welcome")

    # The account is real: sign in with it.
    browser.driver.delete_all_cookies()
    browser.open(server.url + "/signin")
    browser.type("username", "lovelace")
    browser.type("password", STRONG_PASSWORD)
    browser.field("password").send_keys(Keys.ENTER)
    browser.until(lambda: "/welcome" in browser.driver.current_url, "signed in")


def test_a_server_restart_mid_typing_recovers_from_the_typed_values(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.type("username", "phoenix", leave=True)
    browser.type("email", "phoenix@example.com", leave=True)
    browser.until_state("username.available", "met")

    server.stop()
    notice = browser.driver.find_element(By.CSS_SELECTOR, "[data-connection]")
    browser.until(notice.is_displayed, "the page says the connection is lost")
    assert browser.field("username").get_attribute("value") == "phoenix", "nothing typed is lost"
    browser.screenshot("6-disconnected")
    server.start()  # same port, same database; it knows no form sessions

    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.type("confirm", STRONG_PASSWORD)
    browser.until(lambda: not notice.is_displayed(), "reconnected")
    browser.until(lambda: set(browser.states().values()) == {"met"}, "state recovered from the typed values")
    browser.until(browser.button_enabled, "can sign up")
    browser.button().click()
    browser.until(lambda: "/welcome" in browser.driver.current_url, "signed up after the restart")
