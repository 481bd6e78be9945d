"""People first (issue 13): the Sign-up button never strands anyone (aria-disabled, never
disabled; activating it lists what is still missing in the page's own words), the form's
data-submit-enabled mirrors the server, a hidden tab closes its event stream and reopens it
when shown (without losing an edit), and the password fields tell password managers the policy.
"""
import re
import urllib.request

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from conftest import STRONG_PASSWORD
from test_accessibility import audit
from test_keyboard import describe

FIELDS = ("username", "email", "password", "confirm")
# The server notices a stream the browser closed at once (its hang-up watcher); the heartbeat
# (every 15 s) is its backstop, so waits on the stream gauge allow for one beat and more.
STREAM_CLOSE_SECONDS = 30


# ---------- helpers ----------

def metric(server, name):
    """One unlabelled sample from the server's /metrics (loopback may always read it)."""
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
        text = response.read().decode("utf-8")
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert match, f"{name} is not in /metrics"
    return float(match.group(1))


def answered_edits(server):
    """How many POST /fields the server has answered 202, applied or skipped as older."""
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
        text = response.read().decode("utf-8")
    match = re.search(r'^livesignup_http_request_duration_seconds_count\{route="/fields",status="202"\} (\S+)$',
                      text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def open_streams(server):
    return metric(server, "livesignup_event_streams")


def until_server(server, condition, what, seconds=10):
    """Waits (bounded) for a condition on the server's side."""
    try:
        WebDriverWait(None, seconds, poll_frequency=0.2).until(lambda _: condition())
    except TimeoutException:
        # `what` may be a function, to say what the server had at the moment of the timeout.
        raise TimeoutException(what() if callable(what) else what) from None


def summary(page):
    return page.driver.find_element(By.CSS_SELECTOR, "[data-missing-summary]")


def listed(page):
    """The "still needed" list: (field the link leads to, its text)."""
    return [(link.get_dom_attribute("href"), link.get_attribute("textContent"))
            for link in page.driver.find_elements(By.CSS_SELECTOR, "[data-missing-list] li > a")]


def expected_from_the_page(page):
    """What the list must say, read from the page's own texts: per field in page order, its
    message if it shows one, else "Label: requirement" for each requirement not met."""
    return [tuple(item) for item in page.driver.execute_script("""
        var out = [];
        document.querySelectorAll('form[data-signup] [data-message]').forEach(function (slot) {
          var field = slot.getAttribute('data-message');
          var label = document.querySelector('label[for="' + field + '"]').textContent;
          var open = Array.from(slot.parentNode.querySelectorAll('[data-requirement]'))
            .filter(function (el) { return el.getAttribute('data-state') !== 'met'; });
          if (!open.length) { return; }
          if (slot.textContent) { out.push(['#' + field, slot.textContent]); return; }
          open.forEach(function (el) {
            out.push(['#' + field, label + ': ' + el.querySelector('.requirement-text').textContent]);
          });
        });
        return out;""")]


def mark_the_document(page):
    """A flag that only survives if the page does not navigate."""
    page.driver.execute_script("window.stillHere = true")


def still_here(page):
    return page.driver.execute_script("return window.stillHere === true")


def assert_not_ready(page):
    button = page.button()
    assert button.get_dom_attribute("aria-disabled") == "true", "announced as unavailable"
    assert button.get_dom_attribute("disabled") is None, "never disabled: it stays focusable"
    assert page.submit_enabled() == "false"


def until_connected(page, server):
    page.until_live()
    page.until(lambda: not page.button_enabled(), "the script marks the button until the form is ready")
    until_server(server, lambda: open_streams(server) >= 1, "the page's event stream is open")


# ---------- 1. the button never strands anyone ----------

def test_clicking_the_unready_button_lists_the_requirements_in_the_pages_words_and_links_to_fields(
        server, browser):
    browser.open(server.url)
    until_connected(browser, server)
    assert_not_ready(browser)
    assert not summary(browser).is_displayed(), "the summary is hidden until asked for"
    assert browser.button().value_of_css_property("cursor") == "not-allowed", "looks disabled"
    browser.until(lambda: browser.driver.execute_script(
        "return getComputedStyle(arguments[0]).backgroundColor", browser.button()) == "rgb(216, 220, 226)",
        "looks disabled: --disabled-bg")
    mark_the_document(browser)

    browser.button().click()
    browser.until(lambda: browser.driver.switch_to.active_element == summary(browser), "the summary takes focus")
    assert summary(browser).is_displayed()
    assert still_here(browser) and browser.driver.current_url.rstrip("/") == server.url, "nothing was submitted"
    items = listed(browser)
    # Nothing touched yet, so no messages: each field's label and its unmet requirements.
    assert items == expected_from_the_page(browser), items
    assert ("#username", "Username: 4 to 32 characters") in items, items
    assert ("#confirm", "Confirm password: Matches the password") in items, items
    assert len(items) == 9, "every requirement is unmet on a fresh page"
    assert summary(browser).get_dom_attribute("role") == "alert"
    browser.screenshot("people-first-1-missing-summary")

    # A link leads to its field.
    browser.driver.find_element(By.CSS_SELECTOR, '[data-missing-list] a[href="#email"]').click()
    browser.until(lambda: describe(browser.driver.switch_to.active_element) == "email", "the link focuses email")
    assert_not_ready(browser)


def test_what_gets_fixed_leaves_the_shown_list_and_nothing_is_added(server, browser):
    browser.open(server.url)
    until_connected(browser, server)
    browser.button().click()
    browser.until(lambda: summary(browser).is_displayed(), "the summary shows")
    before = listed(browser)
    assert ("#email", "Email: A valid email address") in before, before

    browser.type("email", "ada@example.com")
    browser.until(lambda: browser.state("email.format") == "met", "the server says the email is fine")
    browser.until(lambda: all(href != "#email" for href, _ in listed(browser)), "the email item leaves the list")
    assert listed(browser) == [item for item in before if item[0] != "#email"], "the rest stays as it was, in order"
    assert summary(browser).is_displayed(), "still shown: other things are missing"
    assert describe(browser.driver.switch_to.active_element) == "email", "focus stays where the person types"

    # A requirement that is met and then broken again does not come back: the list only
    # shrinks (it is an alert; additions would be announced on every keystroke).
    browser.type("password", "Abcdefgh")
    browser.until(lambda: browser.state("password.length") == "met", "long enough")
    browser.until(lambda: ("#password", "Password: At least 8 characters") not in listed(browser), "length leaves")
    browser.backspace("password", 3)
    browser.until(lambda: browser.state("password.length") == "unmet", "too short again")
    assert ("#password", "Password: At least 8 characters") not in listed(browser)

    browser.backspace("password", 5)
    browser.type("username", "listleaver", leave=True)
    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.type("confirm", STRONG_PASSWORD, leave=True)
    browser.until(lambda: browser.submit_enabled() == "true", "ready")
    assert not summary(browser).is_displayed(), "a ready form hides the list"


def test_the_unready_button_is_reached_by_tab_and_enter_or_space_list_the_field_messages(server, browser):
    browser.open(server.url)
    until_connected(browser, server)
    browser.driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    mark_the_document(browser)

    # Tab reaches the button before the form is ready (a disabled button would be skipped).
    order = []
    for _ in range(6):
        ActionChains(browser.driver).send_keys(Keys.TAB).perform()
        order.append(describe(browser.driver.switch_to.active_element))
    assert order == ["username", "email", "password", "data-reveal", "confirm", "data-submit"], order
    assert_not_ready(browser)
    # Tabbing through left every field, so each now shows its message.
    browser.until(lambda: all(browser.message(field) for field in FIELDS), "every left field shows a message")

    ActionChains(browser.driver).send_keys(Keys.SPACE).perform()
    browser.until(lambda: browser.driver.switch_to.active_element == summary(browser), "Space: the summary takes focus")
    assert still_here(browser), "Space submitted nothing"
    items = listed(browser)
    assert items == expected_from_the_page(browser), items
    assert items == [(f"#{field}", browser.message(field)) for field in FIELDS], "the messages, in page order"

    # Follow the username link with the keyboard, make the name too short, leave it.
    ActionChains(browser.driver).send_keys(Keys.TAB).perform()
    link = browser.driver.switch_to.active_element
    assert link.get_dom_attribute("href") == "#username"
    link.send_keys(Keys.ENTER)
    browser.until(lambda: describe(browser.driver.switch_to.active_element) == "username", "the link focuses username")
    browser.type("username", "ab", leave=True)
    browser.until(lambda: browser.message("username") == "Username must be at least 4 characters", "new message")

    browser.button().send_keys(Keys.ENTER)  # focuses the button, then Enter
    browser.until(lambda: ("#username", "Username must be at least 4 characters") in listed(browser),
                  "Enter: the list says what the page says now")
    browser.until(lambda: browser.driver.switch_to.active_element == summary(browser), "Enter: the summary takes focus")
    assert still_here(browser), "Enter submitted nothing"
    assert listed(browser) == expected_from_the_page(browser)
    assert_not_ready(browser)


# ---------- 2. data-submit-enabled mirrors the server; ready submits ----------

def test_data_submit_enabled_follows_the_server_and_a_ready_button_signs_up(server, browser):
    browser.open(server.url)
    until_connected(browser, server)
    assert browser.submit_enabled() == "false"
    browser.button().click()
    browser.until(summary(browser).is_displayed, "the summary is shown while not ready")

    browser.fill_valid("peoplefirst")
    browser.until(lambda: browser.submit_enabled() == "true", "data-submit-enabled becomes true")
    browser.until(browser.button_enabled, "the button is ready")
    assert browser.button().get_dom_attribute("aria-disabled") in (None, "false")
    assert not summary(browser).is_displayed(), "ready: the summary goes away"

    browser.backspace("confirm")  # confirm no longer matches
    browser.until(lambda: browser.submit_enabled() == "false", "data-submit-enabled back to false")
    browser.until(lambda: not browser.button_enabled(), "aria-disabled again")
    assert_not_ready(browser)
    browser.type("confirm", STRONG_PASSWORD[-1])
    browser.until(lambda: browser.submit_enabled() == "true", "true again once it matches")
    browser.until(browser.button_enabled, "ready again")

    browser.button().click()
    browser.until(lambda: "/welcome" in browser.driver.current_url, "a ready button submits")
    assert browser.driver.find_element(By.TAG_NAME, "h1").text == "Welcome, peoplefirst!"


def test_a_lost_stream_lets_the_button_submit_but_data_submit_enabled_keeps_the_servers_word(server, browser):
    browser.open(server.url)
    until_connected(browser, server)
    server.stop()
    notice = browser.driver.find_element(By.CSS_SELECTOR, "[data-connection]")
    browser.until(notice.is_displayed, "the page says the connection is lost")
    browser.until(browser.button_enabled, "while the stream is down anyone can submit (the server checks)")
    assert browser.submit_enabled() == "false", "the server's latest word was false"


# ---------- 3. a hidden tab closes its stream, a shown one reopens it ----------

def hide_behind_a_new_tab(page, server):
    """Hides the page the way a person does: another tab in front. Headless Chromium does
    report the tab behind as hidden (checked here through window.opener, since switching
    back to it would show it), so document.visibilityState is not overridden. The new tab is
    opened by the page itself (window.open) so it can reach the hidden page as its opener."""
    page.driver.execute_script(
        "window.visibilityLog = [];"
        "document.addEventListener('visibilitychange', function () {"
        "  window.visibilityLog.push(document.visibilityState); });"
        "document.querySelector('form[data-signup]').setAttribute('data-background-close-ms', '300');")
    original = page.driver.current_window_handle
    page.driver.execute_script("window.open(arguments[0])", server.url + "/signin")
    page.until(lambda: len(page.driver.window_handles) == 2, "a second tab")
    page.driver.switch_to.window(next(h for h in page.driver.window_handles if h != original))
    page.until(lambda: page.driver.execute_script("return window.opener.document.visibilityState") == "hidden",
               "the sign-up tab is hidden behind the new one")
    return original


def type_into_the_hidden_tab(page, field, value):
    """An edit in the hidden tab, made from the tab in front (switching would show it): the
    value set and the same input and blur events a person's typing and leaving fire."""
    page.driver.execute_script(
        "var w = window.opener, input = w.document.getElementById(arguments[0]);"
        "input.value = arguments[1];"
        "input.dispatchEvent(new w.Event('input'));"
        "input.dispatchEvent(new w.Event('blur'));", field, value)


def show_again(page, original):
    page.driver.switch_to.window(original)
    page.until(lambda: page.driver.execute_script("return document.visibilityState") == "visible", "shown")
    assert page.driver.execute_script("return window.visibilityLog")[:2] == ["hidden", "visible"]


def test_a_hidden_tab_closes_its_stream_keeps_posting_edits_and_reopens_live_when_shown(server, browser):
    browser.open(server.url)
    until_connected(browser, server)
    browser.type("username", "backgrounded", leave=True)
    browser.until_state("username.available", "met")
    until_server(server, lambda: open_streams(server) == 1, "exactly the page's stream is open")

    original = hide_behind_a_new_tab(browser, server)
    until_server(server, lambda: open_streams(server) == 0,
                 "the server sees the hidden tab's stream closed", seconds=STREAM_CLOSE_SECONDS)

    # An edit made while hidden, after the close, is still posted and applied. The page posts
    # the input and the blur at once, on two connections, so the server may take the blur
    # (seq n+1) first and then rightly skip the input (seq n) as older: both are answered,
    # at least one is applied.
    answered, applied = answered_edits(server), metric(server, "livesignup_edits_total")
    type_into_the_hidden_tab(browser, "email", "backgrounded@example.com")
    until_server(server, lambda: answered_edits(server) >= answered + 2,
                 lambda: "the hidden tab's edit and its leaving reach the server: "
                         f"{answered_edits(server) - answered:.0f} of 2 answered 202, "
                         f"{metric(server, 'livesignup_edits_total') - applied:.0f} applied")
    assert metric(server, "livesignup_edits_total") >= applied + 1, "the hidden tab's edit was applied"
    assert open_streams(server) == 0, "the edit did not reopen the stream while hidden"

    show_again(browser, original)
    until_server(server, lambda: open_streams(server) >= 1, "shown: the stream is reopened")
    browser.until_state("email.format", "met")  # the state of the hidden edit shows
    notice = browser.driver.find_element(By.CSS_SELECTOR, "[data-connection]")
    assert not notice.is_displayed(), "closing on purpose is not a lost connection"

    # Live again: an edit now is answered over the reopened stream.
    browser.type("password", "lowercase")
    browser.until_state("password.length", "met")
    assert browser.state("password.uppercase") == "unmet"
    browser.type("password", "X")
    browser.until_state("password.uppercase", "met")
    for field, value in (("username", "backgrounded"), ("email", "backgrounded@example.com")):
        assert browser.field(field).get_attribute("value") == value


def token_of(page):
    return page.driver.execute_script("return document.querySelector('input[name=\"token\"]').value")


@pytest.mark.parametrize("edit_while_hidden", [True, False], ids=["edited-while-hidden", "untouched-while-hidden"])
def test_a_tab_shown_after_the_server_forgot_its_form_gets_a_fresh_token_and_keeps_every_value(
        server, browser, edit_while_hidden):
    browser.open(server.url)
    until_connected(browser, server)
    browser.type("username", "sleeper", leave=True)
    browser.type("email", "sleeper@example.com")
    browser.until_state("username.available", "met")
    token = token_of(browser)

    original = hide_behind_a_new_tab(browser, server)
    until_server(server, lambda: open_streams(server) == 0,
                 "the server sees the hidden tab's stream closed", seconds=STREAM_CLOSE_SECONDS)
    # Same port, another database: another token key (kept in the database), so the
    # server does not know the page's token (a restart on the same database would).
    server.database = server.database.with_name("another.sqlite")
    server.restart()
    if edit_while_hidden:
        # The edit is answered 404: the page knows before it is shown (recovery: at once).
        type_into_the_hidden_tab(browser, "password", "Sleepy-Lantern-77")
        browser.until(lambda: browser.driver.execute_script(
            "return !window.opener.document.querySelector('[data-connection]').hidden"),
            "the hidden page learnt that the server forgot its form")
        assert browser.driver.execute_script(
            "return window.opener.document.querySelector('input[name=\"token\"]').value") == token, \
            "no new session while hidden"
    # Otherwise the reopened stream is answered 404 and the page recovers as from a restart.
    assert open_streams(server) == 0, "nothing reconnects while hidden"

    show_again(browser, original)
    browser.until(lambda: token_of(browser) != token, "shown: a fresh token from POST /sessions")
    browser.until(lambda: browser.state("username.length") == "met" and browser.state("email.format") == "met",
                  "the values typed before hiding are known to the server again")
    browser.until_state("username.available", "met")
    if edit_while_hidden:
        browser.until_state("password.uppercase", "met")  # and the one typed while hidden
    else:
        browser.type("password", "Sleepy-Lantern-77", leave=True)
    browser.type("confirm", "Sleepy-Lantern-77", leave=True)
    browser.until(lambda: browser.submit_enabled() == "true", "ready after the recovery")
    browser.button().click()
    browser.until(lambda: "/welcome" in browser.driver.current_url, "signs up after the recovery")


# ---------- 4. axe on the new states ----------

def test_the_missing_summary_and_the_ready_form_have_no_violations(server, browser):
    browser.open(server.url)
    until_connected(browser, server)
    browser.type("username", "ab", leave=True)
    browser.until(lambda: browser.message("username"), "a message")
    browser.button().click()
    browser.until(lambda: browser.driver.switch_to.active_element == summary(browser), "summary shown")
    assert_not_ready(browser)
    audit(browser, "missing-summary")

    browser.backspace("username", 2)
    browser.type("username", "axeready", leave=True)
    browser.type("email", "axeready@example.com", leave=True)
    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.type("confirm", STRONG_PASSWORD, leave=True)
    browser.until(browser.button_enabled, "ready")
    assert browser.submit_enabled() == "true"
    audit(browser, "ready")


# ---------- 5. password managers learn the policy ----------

def test_both_password_fields_carry_the_policys_length_and_rules(server, browser):
    browser.open(server.url)
    browser.until_live()
    assert browser.driver.find_element(By.CSS_SELECTOR, "form[data-signup]").get_dom_attribute("data-policy") == "classic"
    for field in ("password", "confirm"):
        element = browser.field(field)
        assert element.get_dom_attribute("minlength") == "8", field
        assert element.get_dom_attribute("maxlength") == "1024", field
        assert element.get_dom_attribute("passwordrules") == "minlength: 8; maxlength: 1024; required: upper;", field
        assert browser.driver.execute_script("return arguments[0].minLength", element) == 8
        assert browser.driver.execute_script("return arguments[0].maxLength", element) == 1024
    for field in ("username", "email"):
        assert browser.field(field).get_dom_attribute("passwordrules") is None
