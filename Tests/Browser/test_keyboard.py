"""Keyboard only: a logical Tab order, everything reachable and operable, focus where it helps."""
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import STRONG_PASSWORD


def describe(element):
    """A short name for the focused element: its name, data attribute or tag."""
    name = element.get_attribute("name")
    if name:
        return name
    for attribute in ("data-reveal", "data-submit"):
        if element.get_dom_attribute(attribute) is not None:
            return attribute
    return element.tag_name + ":" + element.text


def tab_order(page, count):
    order = []
    for _ in range(count):
        ActionChains(page.driver).send_keys(Keys.TAB).perform()
        order.append(describe(page.driver.switch_to.active_element))
    return order


def test_tab_order_is_logical_and_the_toggle_and_button_work_from_the_keyboard(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    # Start from the top of the document, as after loading the page.
    browser.driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    # The Sign-up button follows confirm even before the form is ready (aria-disabled, not
    # disabled: test_people_first.py); here the toggle first, then the whole form.
    order = tab_order(browser, 5)
    assert order == ["username", "email", "password", "data-reveal", "confirm"], order

    active = browser.driver.switch_to.active_element
    assert describe(active) == "confirm"
    ActionChains(browser.driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    toggle = browser.driver.switch_to.active_element
    assert describe(toggle) == "data-reveal"
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.send_keys(Keys.ENTER)
    browser.until(lambda: browser.field("password").get_attribute("type") == "text", "Enter shows the passwords")
    assert toggle.get_attribute("aria-pressed") == "true"
    toggle.send_keys(Keys.SPACE)
    browser.until(lambda: browser.field("password").get_attribute("type") == "password", "Space hides them again")

    browser.fill_valid("keyboarder")
    browser.until(browser.button_enabled, "the form is complete")
    browser.field("confirm").click()
    ActionChains(browser.driver).send_keys(Keys.TAB).perform()
    assert describe(browser.driver.switch_to.active_element) == "data-submit", "the button follows confirm"
    ActionChains(browser.driver).send_keys(Keys.ENTER).perform()
    browser.until(lambda: "/welcome" in browser.driver.current_url, "Enter on the button signs up")


def test_the_error_summary_takes_focus_and_its_links_lead_to_the_fields(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    # With the stream up the button lists what is missing instead of submitting until the
    # form is valid, so post the plain form the way a person whose stream dropped would.
    browser.type("username", "alice")
    browser.type("email", "x@example.com")
    browser.submit_as_is()
    browser.until(lambda: browser.driver.title.startswith("Error: "), "the form is shown again with errors")
    summary = browser.driver.find_element(By.CSS_SELECTOR, "[data-error-summary]")
    browser.until(lambda: browser.driver.switch_to.active_element == summary, "the summary takes focus")
    ActionChains(browser.driver).send_keys(Keys.TAB).perform()
    link = browser.driver.switch_to.active_element
    assert link.get_attribute("href").endswith("#username")
    link.send_keys(Keys.ENTER)
    browser.until(lambda: describe(browser.driver.switch_to.active_element) == "username",
                  "the link moves focus to its field")
    browser.screenshot("7-error-summary-keyboard")
