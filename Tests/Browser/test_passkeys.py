"""Passkeys in a real browser: headless Chromium with its virtual authenticator (CTAP2,
internal transport, resident keys, user verification), on http://localhost (WebAuthn's
secure context; an IP address cannot be a relying party id).

Every registration and assertion the browser makes is also verified by py_webauthn (the
`webauthn` package from PyPI) with the same expectations: both verifiers must accept, and the
public key py_webauthn reads from the registration is the one our store kept. Mutated
responses are refused with their reason, leave nothing stored, and disturb nobody else.
"""
import base64
import http.client
import json
import sqlite3

import pytest
import webauthn
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions

from conftest import STRONG_PASSWORD, make_driver, Page, wait_for, loopback_request
from test_accessibility import audit

# Records what the page's scripts send to and get from the passkey routes; with `hold` set,
# a response (registration or assertion) is kept instead of sent, for the test to send.
RECORDER = """
if (!window.__passkeys) {
  // Kept in the tab's sessionStorage: a sign-in navigates away before the test reads it.
  window.__passkeys = JSON.parse(sessionStorage.getItem("__passkeys") || '{"options": [], "sent": [], "held": []}');
  window.__passkeys.hold = sessionStorage.getItem("__passkeys_hold") === "1";
  var keep = function () { sessionStorage.setItem("__passkeys", JSON.stringify(window.__passkeys)); };
  var original = window.fetch;
  window.fetch = function (url, init) {
    var body = init && init.body ? String(init.body) : "";
    if (/^\\/(passkeys|account\\/passkeys)/.test(url) && /(^|&)response=/.test(body)) {
      var response = new URLSearchParams(body).get("response");
      if (window.__passkeys.hold) {
        window.__passkeys.held.push({url: url, response: response});
        keep();
        return Promise.reject(new Error("held by the test"));
      }
      window.__passkeys.sent.push({url: url, response: response});
      keep();
    }
    return original.apply(this, arguments).then(function (answer) {
      if (!/options/.test(url)) { return answer; }
      // Recorded before the page sees the answer: a sign-in that follows at once navigates
      // away, and a record made after that would be lost (it was, once, under load).
      return answer.clone().json().then(function (json) {
        window.__passkeys.options.push({url: url, json: json});
        keep();
        return answer;
      }, function () { return answer; });
    });
  };
}
"""


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def add_authenticator(driver):
    options = VirtualAuthenticatorOptions()
    options.protocol = VirtualAuthenticatorOptions.Protocol.CTAP2
    options.transport = VirtualAuthenticatorOptions.Transport.INTERNAL
    options.has_resident_key = True
    options.has_user_verification = True
    options.is_user_verified = True
    driver.add_virtual_authenticator(options)


NO_AUTOFILL = "PublicKeyCredential.isConditionalMediationAvailable = function () { return Promise.resolve(false); };"


class PasskeyPage(Page):
    def __init__(self, driver, base):
        super().__init__(driver)
        self.base = base
        # On every page before its scripts: what the options fetched at load say is recorded too.
        self.on_every_page(RECORDER)
        # Chromium's virtual authenticator answers an autofill request (conditional mediation)
        # by itself, as a person picking the suggestion would: off unless a test turns it on,
        # so the button is what signs in.
        self.no_autofill = self.on_every_page(NO_AUTOFILL)

    def on_every_page(self, script):
        return self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})["identifier"]

    def with_autofill(self):
        self.driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": self.no_autofill})

    def go(self, path):
        self.driver.get(self.base + path)

    def css(self, selector):
        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def shown(self, selector):
        elements = self.driver.find_elements(By.CSS_SELECTOR, selector)
        return bool(elements) and elements[0].is_displayed()

    def recorded(self, key):
        return self.driver.execute_script(f"return window.__passkeys ? window.__passkeys.{key} : []")

    def hold(self, on=True):
        self.driver.execute_script(f"window.__passkeys.hold = {'true' if on else 'false'};"
                                   f"sessionStorage.setItem('__passkeys_hold', '{'1' if on else '0'}')")

    def visible_requirements(self):
        return [el.get_attribute("data-requirement") for el in
                self.driver.find_elements(By.CSS_SELECTOR, "[data-requirement]") if el.is_displayed()]


@pytest.fixture
def site(server):
    """The server as http://localhost:PORT (WebAuthn refuses IP addresses as sites)."""
    server.base = f"http://localhost:{server.port}"
    return server


@pytest.fixture
def person(site):
    driver = make_driver()
    add_authenticator(driver)
    yield PasskeyPage(driver, site.base)
    driver.quit()


def post_as_the_site(site, address, path, form, cookie=None):
    """A POST naming the site as the browser does (Host localhost, Origin http://localhost:PORT):
    the origin a passkey was made for. Returns (status, body)."""
    status, _, body = loopback_request(site.port, address, "POST", path, form, host=f"localhost:{site.port}",
                                       cookie=cookie)
    return status, body


def browser_cookie(person, name):
    """`name=value` of one of the browser's cookies, whatever its path (through CDP: WebDriver
    shows only the current page's), or None."""
    for cookie in person.driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]:
        if cookie["name"] == name:
            return f"{name}={cookie['value']}"
    return None


def database(site):
    return sqlite3.connect(site.database)


def stored_account(site, username):
    with database(site) as db:
        return db.execute("SELECT id, password_hash FROM users WHERE username = ?", (username,)).fetchone()


def stored_passkeys(site, account_id):
    with database(site) as db:
        return db.execute("SELECT credential_id, public_key, algorithm, sign_count, transports FROM passkeys "
                          "WHERE user_id = ?", (account_id,)).fetchall()


def choose_passkey(page, username):
    page.go("/")
    page.until_live()
    page.type("username", username, leave=True)
    page.type("email", f"{username}@example.com", leave=True)
    page.until(lambda: page.shown("[data-use-passkey]"), "the passkey choice is offered")
    page.css("[data-use-passkey]").click()
    page.until(lambda: page.shown('[data-field-step="passkey"]'), "the passkey step shows")


def create_passkey(page):
    page.css("[data-passkey-create]").click()
    page.until_state("passkey.created", "met")


def sign_up_with_passkey(page, username):
    choose_passkey(page, username)
    create_passkey(page)
    page.until(lambda: page.submit_enabled() == "true", "ready")
    page.button().click()
    page.until(lambda: "/welcome" in page.driver.current_url, "signed up")


def cross_check_registration(page, site):
    """py_webauthn accepts the browser's registration with the challenge the server sent."""
    options = [o for o in page.recorded("options") if "register" not in o["url"] and o["json"].get("user")][-1]["json"]
    sent = [s for s in page.recorded("sent") if "/passkeys/register" in s["url"] or s["url"] == "/account/passkeys"][-1]
    verified = webauthn.verify_registration_response(
        credential=sent["response"], expected_challenge=b64url_decode(options["challenge"]),
        expected_origin=site.base, expected_rp_id="localhost", require_user_verification=False)
    return verified, json.loads(sent["response"])


def sign_in_with_passkey(page):
    page.go("/signin")
    page.until(lambda: page.shown("[data-passkey-signin-button]"), "the passkey button is offered")
    page.css("[data-passkey-signin-button]").click()
    page.until(lambda: "/welcome" in page.driver.current_url, "signed in with the passkey")


def cross_check_assertion(page, site, public_key, sign_count):
    options = [o for o in page.recorded("options") if "signin" in o["url"]][-1]["json"]
    sent = [s for s in page.recorded("sent") if s["url"] == "/passkeys/signin"][-1]
    return webauthn.verify_authentication_response(
        credential=sent["response"], expected_challenge=b64url_decode(options["challenge"]),
        expected_rp_id="localhost", expected_origin=site.base, credential_public_key=public_key,
        credential_current_sign_count=sign_count, require_user_verification=False)


def sign_out(page):
    page.css("[data-signout]").click()
    page.until(lambda: "/signin" in page.driver.current_url, "signed out")


def test_sign_up_with_a_passkey_and_no_password_then_sign_in_with_it(site, person):
    choose_passkey(person, "ada_passkey")
    # The password fields left the form; passkey.created took their checklist's place.
    assert not person.driver.find_elements(By.CSS_SELECTOR, '[data-field="password"], [data-field="confirm"]')
    visible = person.visible_requirements()
    assert "passkey.created" in visible and not any(r.startswith(("password.", "confirm.")) for r in visible)
    assert person.state("passkey.created") == "unmet"
    assert person.submit_enabled() == "false"
    # Sign up pressed too early: the summary names the missing passkey, linked to its button.
    person.button().click()
    person.until(lambda: person.shown("[data-missing-summary]"), "what is missing is listed")
    missing = person.css("[data-missing-list]").text
    assert "A passkey for this site" in missing and "Password" not in missing
    audit(person, "passkey-step-en")
    # Back to a password and back again: the fields and their checklist follow the choice.
    person.css("[data-use-password]").click()
    person.until(lambda: person.shown('[data-field="password"]'), "the password fields are back")
    person.until_state("password.length", "unmet")
    assert not person.driver.find_elements(By.CSS_SELECTOR, '[data-requirement="passkey.created"]')
    assert person.driver.switch_to.active_element == person.field("password"), "focus goes to the password"
    person.css("[data-use-passkey]").click()
    person.until(lambda: person.shown('[data-field-step="passkey"]'), "the passkey step again")
    assert person.driver.switch_to.active_element == person.css("[data-passkey-create]"), "focus on Create a passkey"

    create_passkey(person)
    person.until(lambda: person.submit_enabled() == "true", "Sign up is enabled once the passkey exists")
    assert person.button_enabled()
    verified, registration = cross_check_registration(person, site)
    audit(person, "passkey-created-en")

    # The passkey waits in this form's session: the sign-up names the form's token in its URL,
    # so a proxy in front of several instances sends it to the instance that holds it.
    assert person.css("form[data-signup]").get_dom_attribute("action").startswith("/signup?token=")
    person.button().click()
    person.until(lambda: "/welcome" in person.driver.current_url, "signed up")
    account_id, password_hash = stored_account(site, "ada_passkey")
    assert password_hash == "!", "no password: nobody can sign in with one"
    [(credential_id, public_key, algorithm, sign_count, transports)] = stored_passkeys(site, account_id)
    assert credential_id == verified.credential_id == b64url_decode(registration["id"])
    assert public_key == verified.credential_public_key, "both verifiers read the same key"
    assert algorithm == -8 and "internal" in transports, "Ed25519: the first algorithm the options ask for"

    sign_out(person)
    sign_in_with_passkey(person)
    assert "ada_passkey" in person.css("h1").text
    checked = cross_check_assertion(person, site, public_key, sign_count)
    [(_, _, _, counted, _)] = stored_passkeys(site, account_id)
    assert counted == checked.new_sign_count > 0, "both verifiers read the same counter"
    # The same signed-in session as a password's: forward auth knows the person.
    cookie = person.driver.get_cookie("livesignup_auth")["value"]
    connection = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
    connection.request("GET", "/auth", headers={"Cookie": f"livesignup_auth={cookie}"})
    answer = connection.getresponse()
    assert answer.status == 200 and answer.getheader("X-Auth-Request-User") == "ada_passkey"


def test_a_second_profile_without_the_credential_cannot_sign_in(site, person):
    sign_up_with_passkey(person, "bob_passkey")

    other = PasskeyPage(make_driver(), site.base)
    try:
        add_authenticator(other.driver)  # its own, empty: the passkey lives in the first profile
        other.go("/signin")
        other.until(lambda: other.shown("[data-passkey-signin-button]"), "the passkey button is offered")
        other.css("[data-passkey-signin-button]").click()
        other.until(lambda: other.shown("[data-passkey-error]"), "a readable refusal")
        assert "password" in other.css("[data-passkey-error]").text.lower()
        audit(other, "signin-passkey-refused-en")
        assert "/signin" in other.driver.current_url
        assert other.driver.get_cookie("livesignup_auth") is None
    finally:
        other.driver.quit()


def test_sign_up_with_a_password_add_a_passkey_then_sign_in_with_it(site, person):
    person.go("/")
    person.until_live()
    person.fill_valid("cleo_adds")
    person.until(lambda: person.submit_enabled() == "true", "ready")
    person.button().click()
    person.until(lambda: "/welcome" in person.driver.current_url, "signed up with a password")
    person.until(lambda: person.shown("[data-passkey-add-button]"), "adding a passkey is offered")
    person.css("[data-passkey-add-button]").click()
    person.until(lambda: "1" in person.css("[data-passkey-count]").text, "the count says one passkey")
    verified, _ = cross_check_registration(person, site)
    account_id, password_hash = stored_account(site, "cleo_adds")
    assert password_hash.startswith("$argon2id$"), "the password stays"
    [(credential_id, public_key, _, sign_count, _)] = stored_passkeys(site, account_id)
    assert credential_id == verified.credential_id and public_key == verified.credential_public_key
    audit(person, "welcome-passkey-added-en")

    # Signed out, the sign-in page's username field offers the passkey (conditional
    # mediation); the virtual authenticator takes the offer as a person picking it would.
    person.with_autofill()
    person.css("[data-signout]").click()
    # The heading read in the page, not through an element found a moment earlier: the
    # welcome page may still replace it (a StaleElementReferenceException once in make test).
    person.until(lambda: "/welcome" in person.driver.current_url and "cleo_adds" in person.driver.execute_script(
        "return document.querySelector('h1')?.textContent ?? ''"), "signed in by the username field's autofill, welcomed by name")
    cross_check_assertion(person, site, public_key, sign_count)


def test_german_passkey_pages_have_no_violations(site, person):
    person.go("/?lang=de")
    person.until_live()
    person.type("username", "dora_passkey", leave=True)
    person.until(lambda: person.shown("[data-use-passkey]"), "offered")
    assert person.css("[data-use-passkey]").text == "Passkey statt Passwort verwenden"
    person.css("[data-use-passkey]").click()
    person.until(lambda: person.shown('[data-field-step="passkey"]'), "the step shows")
    audit(person, "passkey-step-de")
    create_passkey(person)
    assert person.css("[data-passkey-status]").text.startswith("Passkey erstellt")
    audit(person, "passkey-created-de")
    person.go("/signin?lang=de")
    person.until(lambda: person.shown("[data-passkey-signin-button]"), "offered")
    assert person.css("[data-passkey-signin-button]").text == "Mit einem Passkey anmelden"
    audit(person, "signin-passkey-de")


def mutated_assertion(response, change):
    """The assertion JSON with one part changed by `change(parts)` (a dict of bytes)."""
    data = json.loads(response)
    parts = {name: bytearray(b64url_decode(data["response"][name]))
             for name in ("clientDataJSON", "authenticatorData", "signature")}
    change(parts)
    for name, value in parts.items():
        data["response"][name] = b64url(bytes(value))
    return json.dumps(data)


def with_origin(parts, origin):
    client = json.loads(bytes(parts["clientDataJSON"]))
    client["origin"] = origin
    parts["clientDataJSON"] = bytearray(json.dumps(client).encode())


def test_mutated_sign_ins_are_refused_by_name_and_disturb_nobody(site, person):
    sign_up_with_passkey(person, "eve_target")
    sign_out(person)

    # A control person typing on another form meanwhile.
    control = loopback_request(site.port, "127.0.0.9", "POST", "/sessions")
    token = json.loads(control[2])["token"]

    def flip_signature(parts):
        parts["signature"][-1] ^= 0x01

    def clear_user_present(parts):
        parts["authenticatorData"][32] &= ~0x01

    def other_rp_id(parts):
        parts["authenticatorData"][0] ^= 0xFF

    mutations = [
        ("bad_signature", flip_signature),
        ("wrong_origin", lambda parts: with_origin(parts, "https://evil.example")),
        ("user_not_present", clear_user_present),
        ("wrong_rp_id", other_rp_id),
    ]
    person.go("/signin")
    person.until(lambda: person.shown("[data-passkey-signin-button]"), "offered")
    for reason, change in mutations:
        person.hold()
        before = len(person.recorded("held"))
        person.css("[data-passkey-signin-button]").click()
        person.until(lambda: len(person.recorded("held")) > before, "an assertion was made")
        held = person.recorded("held")[-1]["response"]
        status, body = post_as_the_site(site, "127.0.0.2", "/passkeys/signin", {"response": mutated_assertion(held, change)})
        answer = json.loads(body)
        assert (status, answer["error"], answer["reason"]) == (401, "passkey_refused", reason), body
        assert answer["message"]
        # Its challenge is spent: the untouched response cannot be used afterwards either.
        status, body = post_as_the_site(site, "127.0.0.2", "/passkeys/signin", {"response": held})
        assert (status, json.loads(body)["reason"]) == (409, "replayed"), body

    # Nothing changed for the account: its owner still signs in, the control form still answers.
    person.hold(False)
    person.css("[data-passkey-signin-button]").click()
    person.until(lambda: "/welcome" in person.driver.current_url, "the real person signs in")
    status, _, _ = loopback_request(site.port, "127.0.0.9", "POST", "/fields",
                                    {"token": token, "field": "username", "value": "control", "seq": "1"})
    assert status == 202


def test_a_tampered_registration_makes_no_account(site, person):
    choose_passkey(person, "mal_registers")
    person.hold()
    person.css("[data-passkey-create]").click()
    person.until(lambda: person.recorded("held"), "a registration was made")
    held = person.recorded("held")[-1]
    data = json.loads(held["response"])
    client = json.loads(b64url_decode(data["response"]["clientDataJSON"]))
    client["origin"] = "https://evil.example"
    data["response"]["clientDataJSON"] = b64url(json.dumps(client).encode())
    token = held["url"].split("token=")[1]
    # Issue 40, item 13: without the cookie the browser got with its options, the token alone
    # (it is in the page's URLs) registers nothing, and leaves the person's options usable.
    status, body = post_as_the_site(site, "127.0.0.1", "/passkeys/register?token=" + token,
                                    {"token": token, "response": held["response"]})
    assert (status, json.loads(body)["reason"]) == (403, "other_browser"), body
    bound = browser_cookie(person, "livesignup_passkey_browser")
    assert bound, "the options came with a cookie for this browser"
    status, body = post_as_the_site(site, "127.0.0.1", "/passkeys/register?token=" + token,
                                    {"token": token, "response": json.dumps(data)}, cookie=bound)
    answer = json.loads(body)
    assert (status, answer["reason"]) == (422, "wrong_origin"), body
    # The options were single use: the genuine response is now refused too.
    status, body = post_as_the_site(site, "127.0.0.1", "/passkeys/register?token=" + token,
                                    {"token": token, "response": held["response"]}, cookie=bound)
    assert (status, json.loads(body)["reason"]) == (409, "expired"), body
    assert person.state("passkey.created") == "unmet"
    assert person.submit_enabled() == "false"
    # A plain post claiming a passkey is refused with the passkey's message; no account.
    person.submit_as_is()
    person.until(lambda: person.shown("[data-error-summary]"), "the error summary")
    assert "passkey" in person.css("[data-error-summary]").text.lower()
    assert stored_account(site, "mal_registers") is None
