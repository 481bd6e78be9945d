"""Accessibility: axe-core at WCAG 2.1 AA on every main state, and the ARIA the page promises."""
import json
from pathlib import Path

import axe_playwright_python
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import STRONG_PASSWORD, wait_for

# axe-core 4.x ships inside the axe-playwright-python wheel; we only use its script.
AXE_SOURCE = (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def audit(page, name):
    """Runs axe on the current document and fails with every violation spelled out. Colour
    transitions still running are let finish first (bounded): axe reads computed colours,
    and a button caught mid-way from its disabled to its enabled colour failed contrast once
    (account-password-ready, in make test). Endless animations (the pending pulse) are not
    waited for."""
    wait_for(lambda: page.driver.execute_script(
        "return document.getAnimations().every(a => !(a instanceof CSSTransition) || a.playState !== 'running')"), 2)
    # axe is put in and run by one script, so both meet the same document: run as two, a
    # page that replaced its document in between (under make test's load, once) had no axe.
    result = page.driver.execute_async_script(
        AXE_SOURCE + ";\n"
        "const done = arguments[arguments.length - 1];"
        "window.axe.run(document, {runOnly: {type: 'tag', values: arguments[0]}})"
        ".then(r => done({version: window.axe.version, violations: r.violations.map(v => ({"
        "id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' '))}))}))"
        ".catch(e => done({error: String(e)}));",
        WCAG_21_AA)
    assert "error" not in result, result
    assert result["version"].startswith("4."), result["version"]
    page.screenshot(f"axe-{name}")
    assert result["violations"] == [], f"{name}: " + json.dumps(result["violations"], indent=2)


def test_fresh_page_has_no_violations(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    audit(browser, "fresh")


def test_page_mid_typing_has_no_violations(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.type("username", "alice", leave=True)
    browser.type("email", "ada@example", leave=True)
    browser.type("password", "Lovelace1815", leave=True)
    browser.type("confirm", "Lovelace18", leave=True)
    browser.until(lambda: browser.message("confirm") == "Passwords don't match", "messages shown")
    browser.until(lambda: browser.message("username") == "That username is taken", "taken shown")
    audit(browser, "mid-typing")


def submit_as_is(page):
    """Submits the plain form whatever the live checklist says, as a person whose event
    stream dropped can (axe needs JavaScript, so these pages are audited with it on)."""
    page.submit_as_is()


def test_error_summary_page_has_no_violations(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.type("username", "al")
    submit_as_is(browser)
    browser.until(lambda: browser.driver.title.startswith("Error: "), "error page")
    audit(browser, "error-summary")


def test_welcome_and_sign_in_pages_have_no_violations(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.fill_valid("welcomed")
    browser.until(browser.button_enabled, "ready")
    browser.button().click()
    browser.until(lambda: "/welcome" in browser.driver.current_url, "welcome")
    audit(browser, "welcome")
    browser.open(server.url + "/signin")
    browser.type("username", "welcomed")
    browser.type("password", "wrong-password")
    browser.field("password").send_keys(Keys.ENTER)
    browser.until(lambda: browser.driver.title.startswith("Error: "), "sign-in error")
    audit(browser, "signin-error")


def test_live_regions_descriptions_and_state_text_are_in_the_served_html(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    driver = browser.driver
    for field in ("username", "email", "password", "confirm"):
        described_by = browser.field(field).get_attribute("aria-describedby").split()
        assert described_by == [f"{field}-requirements", f"{field}-message"]
        for target in described_by:
            element = driver.find_element(By.ID, target)
            assert element.get_attribute("aria-live") == "polite", f"{target} is announced politely"
    requirements = driver.find_elements(By.CSS_SELECTOR, "[data-requirement]")
    # The classic rules' nine, each checked below (an empty list would check nothing).
    assert len(requirements) == 9, [r.get_attribute("data-requirement") for r in requirements]
    for requirement in requirements:
        hidden = requirement.find_element(By.CSS_SELECTOR, "[data-state-text]")
        assert hidden.get_attribute("textContent") == ": not met"
        assert "visually-hidden" in hidden.get_attribute("class")
        icon = requirement.find_element(By.CSS_SELECTOR, ".requirement-icon")
        assert icon.get_attribute("aria-hidden") == "true"

    # aria-invalid follows the shown message, and the state text follows the state.
    browser.type("username", "ab", leave=True)
    browser.until(lambda: browser.field("username").get_attribute("aria-invalid") == "true", "marked invalid")
    browser.type("username", "cd")
    browser.until(lambda: browser.field("username").get_attribute("aria-invalid") is None, "no longer invalid")
    length = driver.find_element(By.CSS_SELECTOR, '[data-requirement="username.length"] [data-state-text]')
    browser.until(lambda: length.get_attribute("textContent") == ": met", "screen readers hear 'met'")
    text = driver.find_element(By.CSS_SELECTOR, '[data-requirement="username.length"] .requirement-text')
    assert text.value_of_css_property("text-decoration-line") == "line-through", "crossed out, not colour alone"
