"""Declared fields (--policy docs/examples/policy-terms.yaml): an optional stored display name
and a terms-of-service box that must be ticked, in a real browser with and without JavaScript,
down to the profile stored with the account, and audited with axe.

The fixtures `server`, `browser` and `browser_without_javascript` are this file's own (they
shadow conftest's): the server runs the terms policy, and Chromium resolves no host name (the
terms link is clicked) and keeps its performance log (to read the 422 status).
"""
import json
import re
import subprocess
import tempfile
from datetime import datetime, timedelta, timezone

import pytest
from selenium.webdriver.common.by import By

import conftest
from conftest import ROOT, SERVER, STRONG_PASSWORD, Page, Server
from test_accessibility import audit
from test_people_first import expected_from_the_page, listed, mark_the_document, still_here, summary

POLICY = ROOT / "docs/examples/policy-terms.yaml"
FIELD_ORDER = ["username", "display_name", "email", "password", "confirm", "terms"]
TERMS_URL = "https://example.org/terms"
TERMS_MESSAGE = "Accept the terms of service to create an account"
# What the "still needed" list says for the box: its label's words, then its requirement.
TERMS_MISSING = ("#terms", "I accept the terms of service: Terms of service accepted")


# ---------- fixtures ----------

@pytest.fixture
def server():
    """The real server with the shipped terms policy (conftest's Server, fresh database)."""
    assert SERVER.exists(), f"build the server first (swift build): {SERVER}"
    with tempfile.TemporaryDirectory() as directory:
        running = Server(directory, ["--policy", str(POLICY)])
        yield running
        running.stop()


# conftest's Chromium, plus two things these tests need: no host name resolves (the terms link
# points off this machine; clicking it must send nothing anywhere), and the performance log, so
# a test can read the HTTP status of a page (Selenium has no API for it). One of each for the
# file, put back as new after each test.
ISOLATED = {"flags": ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
            "logging_prefs": {"performance": "ALL"}}


@pytest.fixture(scope="module")
def isolated_chromium():
    chromium = {True: conftest.SharedChromium(javascript=True, **ISOLATED),
                False: conftest.SharedChromium(javascript=False, **ISOLATED)}
    yield chromium
    for each in chromium.values():
        each.quit()


@pytest.fixture
def browser(isolated_chromium):
    yield Page(isolated_chromium[True].get())
    isolated_chromium[True].reset()


@pytest.fixture
def browser_without_javascript(isolated_chromium):
    yield Page(isolated_chromium[False].get())
    isolated_chromium[False].reset()


# ---------- helpers ----------

def field_order(page):
    return [el.get_attribute("data-field")
            for el in page.driver.find_elements(By.CSS_SELECTOR, "form[data-signup] [data-field]")]


def terms_box(page):
    return page.field("terms")


def until_only_terms_is_missing(page):
    """Every requirement met but the box's: the built-in ones and the optional display name
    (empty is fine for it)."""
    page.until(lambda: {k: v for k, v in page.states().items() if v != "met"} == {"terms.accepted": "unmet"},
               "everything met except terms.accepted")


def assert_not_ready(page):
    button = page.button()
    assert button.get_dom_attribute("aria-disabled") == "true", "Sign up is announced as unavailable"
    assert button.get_dom_attribute("disabled") is None, "never disabled: it stays focusable"
    assert page.submit_enabled() == "false", "the server says the form may not be submitted"


def accounts(server):
    """`signup-server accounts list --format json` on the test's database."""
    out = subprocess.run([str(SERVER), "accounts", "list", "--format", "json", "--database", str(server.database)],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return {account["username"]: account for account in json.loads(out)}


def statuses(page, path):
    """HTTP statuses of the documents loaded from `path` since the last call (performance log)."""
    found = []
    for entry in page.driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.responseReceived":
            continue
        params = message["params"]
        if params.get("type") == "Document" and params["response"]["url"].split("?")[0].endswith(path):
            found.append(params["response"]["status"])
    return found


def assert_accepted_just_now(stamp, before, after):
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp), stamp
    accepted = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert before - timedelta(seconds=1) <= accepted <= after + timedelta(seconds=1), (stamp, before, after)


# ---------- 1. the box gates Sign up; its link is only a link ----------

def test_the_declared_fields_show_in_order_and_the_terms_box_gates_sign_up(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    assert field_order(browser) == FIELD_ORDER
    assert browser.driver.find_element(By.CSS_SELECTOR, "form[data-signup]").get_dom_attribute("data-policy") \
        == "classic-terms"
    box = terms_box(browser)
    assert box.get_dom_attribute("type") == "checkbox" and box.get_dom_attribute("value") == "on"
    assert not box.is_selected()
    label = browser.driver.find_element(By.CSS_SELECTOR, 'label[for="terms"]')
    assert label.text == "I accept the terms of service"
    link = label.find_element(By.TAG_NAME, "a")
    assert link.text == "terms of service"
    assert link.get_dom_attribute("href") == TERMS_URL
    assert link.get_dom_attribute("target") == "_blank", "the terms open beside the form, never instead of it"
    assert "noopener" in link.get_dom_attribute("rel").split()
    assert browser.state("terms.accepted") == "unmet"

    # Every built-in field valid: still not ready, the box is the one thing missing.
    browser.fill_valid("tickbox", STRONG_PASSWORD)
    until_only_terms_is_missing(browser)
    assert_not_ready(browser)
    assert browser.message("terms") == "", "nothing said about the box before it was touched"

    # The link inside the label is a link, not a way to tick the box. It opens a tab of its own
    # (no name resolves in this browser, so nothing leaves the machine); this page stays.
    mark_the_document(browser)
    original = browser.driver.current_window_handle
    link.click()
    browser.until(lambda: len(browser.driver.window_handles) == 2, "the terms open in a new tab")
    browser.driver.switch_to.window(next(h for h in browser.driver.window_handles if h != original))
    browser.driver.close()
    browser.driver.switch_to.window(original)
    assert still_here(browser) and browser.driver.current_url.rstrip("/") == server.url, "the form did not navigate"
    assert not terms_box(browser).is_selected(), "clicking the link did not tick the box"
    assert browser.state("terms.accepted") == "unmet"
    assert_not_ready(browser)

    # Ticking it: met, and Sign up becomes available.
    terms_box(browser).click()
    assert terms_box(browser).is_selected()
    browser.until_state("terms.accepted", "met")
    browser.until(browser.button_enabled, "the button loses aria-disabled")
    assert browser.button().get_dom_attribute("aria-disabled") is None
    assert browser.submit_enabled() == "true"
    assert browser.message("terms") == ""
    browser.screenshot("declared-1-terms-ticked")

    # Unticking it: unmet, the message under the box, not ready again.
    terms_box(browser).click()
    assert not terms_box(browser).is_selected()
    browser.until_state("terms.accepted", "unmet")
    browser.until(lambda: browser.message("terms") == TERMS_MESSAGE, "the box says why it is needed")
    message = browser.driver.find_element(By.CSS_SELECTOR, '[data-message="terms"]')
    field = browser.driver.find_element(By.CSS_SELECTOR, '[data-field="terms"]')
    assert message.find_element(By.XPATH, "..") == field, "the message is in the box's own field"
    assert message.location["y"] > terms_box(browser).location["y"], "the message is under the box"
    assert "terms-message" in terms_box(browser).get_dom_attribute("aria-describedby").split()
    browser.until(lambda: terms_box(browser).get_dom_attribute("aria-invalid") == "true", "marked invalid")
    browser.until(lambda: not browser.button_enabled(), "aria-disabled again")
    assert_not_ready(browser)
    browser.screenshot("declared-1-terms-unticked")


# ---------- 2. the "still needed" summary names the box ----------

def test_sign_up_with_only_the_box_missing_lists_it_and_ticking_removes_it(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    # The box is never focused (leaving confirm with Tab would land on it, and leaving the box
    # shows its message, which the list would then quote instead of label and requirement).
    browser.type("username", "onlyterms", leave=True)
    browser.type("email", "onlyterms@example.com", leave=True)
    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.type("confirm", STRONG_PASSWORD)
    until_only_terms_is_missing(browser)
    mark_the_document(browser)

    browser.button().click()
    browser.until(lambda: browser.driver.switch_to.active_element == summary(browser), "the summary takes focus")
    assert still_here(browser), "nothing was submitted"
    assert listed(browser) == [TERMS_MISSING], listed(browser)
    assert listed(browser) == expected_from_the_page(browser)
    browser.screenshot("declared-2-missing-terms")

    # Its link leads to the box.
    browser.driver.find_element(By.CSS_SELECTOR, '[data-missing-list] a[href="#terms"]').click()
    browser.until(lambda: browser.driver.switch_to.active_element == terms_box(browser), "the link focuses the box")

    terms_box(browser).click()
    browser.until_state("terms.accepted", "met")
    browser.until(lambda: TERMS_MISSING not in listed(browser), "the terms item leaves the list")
    browser.until(browser.button_enabled, "ready")
    assert not summary(browser).is_displayed(), "a ready form hides the list"


# ---------- 3. a full sign-up stores the profile ----------

def test_a_full_sign_up_stores_the_display_name_and_the_accepted_terms(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.type("username", "adalovelace", leave=True)
    browser.type("display_name", "Ada Lovelace", leave=True)
    browser.until_state("display_name.length", "met")
    browser.type("email", "ada@example.com", leave=True)
    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.type("confirm", STRONG_PASSWORD, leave=True)
    terms_box(browser).click()
    browser.until_state("terms.accepted", "met")
    browser.until(browser.button_enabled, "ready")
    assert set(browser.states().values()) == {"met"}

    before = datetime.now(timezone.utc)
    browser.button().click()
    browser.until(lambda: "/welcome" in browser.driver.current_url, "signed up")
    after = datetime.now(timezone.utc)
    assert browser.driver.find_element(By.TAG_NAME, "h1").text == "Welcome, adalovelace!"

    account = accounts(server)["adalovelace"]
    assert account["email"] == "ada@example.com"
    profile = account["profile"]
    assert profile["display_name"] == "Ada Lovelace"
    assert profile["terms"] is True
    assert profile["terms_url"] == TERMS_URL
    assert_accepted_just_now(profile["terms_accepted_at"], before, after)
    assert set(profile) == {"display_name", "terms", "terms_url", "terms_accepted_at"}, profile


# ---------- 4. without JavaScript ----------

def test_without_javascript_an_unticked_box_is_a_422_with_a_link_to_it_and_ticking_signs_up(
        server, browser_without_javascript):
    page = browser_without_javascript
    page.open(server.url)
    assert page.button_enabled(), "served enabled: without the script it must work"
    assert field_order(page) == FIELD_ORDER
    page.type("username", "gracehopper")
    page.type("display_name", "Grace Hopper")
    page.type("email", "grace@example.com")
    page.type("password", STRONG_PASSWORD)
    page.type("confirm", STRONG_PASSWORD)
    statuses(page, "/signup")  # forget what came before
    page.button().click()

    page.until(lambda: page.driver.title.startswith("Error: "), "the page title says there is an error")
    assert statuses(page, "/signup") == [422], "an unticked box is refused with 422"
    error_summary = page.driver.find_element(By.CSS_SELECTOR, "[data-error-summary]")
    assert "There is a problem" in error_summary.text
    links = [(a.get_dom_attribute("href"), a.text) for a in error_summary.find_elements(By.CSS_SELECTOR, "a")]
    assert links == [("#terms", TERMS_MESSAGE)], "the box is the only problem, and the summary links to it"
    assert page.driver.switch_to.active_element == error_summary, "focus moves to the summary"
    assert page.message("terms") == TERMS_MESSAGE
    assert terms_box(page).get_dom_attribute("aria-invalid") == "true"
    assert not terms_box(page).is_selected()
    assert page.field("username").get_attribute("value") == "gracehopper", "username kept"
    assert page.field("display_name").get_attribute("value") == "Grace Hopper", "display name kept"
    assert page.field("email").get_attribute("value") == "grace@example.com", "email kept"
    assert page.field("password").get_attribute("value") == "", "passwords are never sent back"
    page.screenshot("declared-4-terms-422")

    terms_box(page).click()
    assert terms_box(page).is_selected()
    page.type("password", STRONG_PASSWORD)
    page.type("confirm", STRONG_PASSWORD)
    page.button().click()
    page.until(lambda: "/welcome" in page.driver.current_url, "signed up without JavaScript")
    assert page.driver.find_element(By.TAG_NAME, "h1").text == "Welcome, gracehopper!"

    profile = accounts(server)["gracehopper"]["profile"]
    assert profile["display_name"] == "Grace Hopper", "the display name kept by the 422 page is stored"
    assert profile["terms"] is True and profile["terms_url"] == TERMS_URL
    assert "terms_accepted_at" in profile


# ---------- 5. axe ----------

def test_the_declared_fields_and_their_422_page_have_no_axe_violations(server, browser):
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    assert field_order(browser) == FIELD_ORDER
    audit(browser, "declared-fresh")

    browser.type("username", "axeterms", leave=True)
    browser.type("display_name", "Axe Terms", leave=True)
    browser.type("email", "axeterms@example.com", leave=True)
    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.type("confirm", STRONG_PASSWORD, leave=True)
    until_only_terms_is_missing(browser)
    browser.submit_as_is()  # the plain post, as a page without its stream sends it
    browser.until(lambda: browser.driver.title.startswith("Error: "), "the 422 page")
    assert statuses(browser, "/signup") == [422]
    assert browser.driver.find_element(By.CSS_SELECTOR, '[data-error-summary] a[href="#terms"]')
    audit(browser, "declared-422")
