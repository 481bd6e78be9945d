"""Signing up and in through an OpenID Connect provider (issue 45), against providers we did
not write: oidc-provider-mock (PyPI, built on Authlib) as it ships, and the same provider
behind a layer that lies (oidc_providers.py: re-signed ID tokens by joserfc, PKCE held).

In Chromium: a new person continues with the provider, gets the sign-up form with the
provider's step in place of the password, the suggested username checked live and the
operator's terms still required; signs out, and signs in through the provider again. Over
plain HTTP: each bad answer (another browser's state, a replayed code, another nonce, an
expired or wrongly signed ID token, another audience, an unproved address) is refused with a
readable page and nothing stored, while a control person stays signed in; ES256 and a
rotated key are followed; an account with the provider's address is linked only after its
password; a provider that is down or answers garbage leaves the password form working.
"""
import http.client
import re
import sqlite3
import subprocess
import urllib.parse

import pytest
from selenium.webdriver.common.by import By

from conftest import STRONG_PASSWORD, Page, Server, free_port, make_driver, metric
from oidc_providers import MockProvider, TamperingProvider
from test_accessibility import audit


class Browser:
    """One person's cookies over plain HTTP, following nothing on its own."""

    def __init__(self, port):
        self.port, self.cookies = port, {}

    def request(self, method, url, form=None, origin=True):
        parts = urllib.parse.urlsplit(url if "://" in url else f"http://127.0.0.1:{self.port}{url}")
        ours = parts.port == self.port
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        headers = {}
        if ours and origin and method == "POST":
            headers["Origin"] = f"http://127.0.0.1:{self.port}"
        if ours and self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        if ours:
            for name, value in response.getheaders():
                if name.lower() == "set-cookie":
                    key, _, rest = value.partition("=")
                    value = rest.split(";", 1)[0]
                    if value:
                        self.cookies[key] = value
                    else:
                        self.cookies.pop(key, None)
        connection.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text

    def through(self, provider_id, sub, form=None):
        """Starts a sign-in with the provider and authorizes as `sub` there; returns the
        callback URL the provider sends the browser to (not yet followed)."""
        status, headers, _ = self.request("POST", "/signin/provider", {"provider": provider_id, **(form or {})})
        assert status == 303, status
        authorize = headers["location"]
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(authorize).query)
        assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
        assert query["nonce"][0] and query["state"][0]
        status, headers, _ = self.request("POST", authorize, {"sub": sub})
        assert status == 302, status
        return headers["location"]


def words(page):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


@pytest.fixture(scope="module")
def outside_providers(tmp_path_factory):
    """The providers, started once for the file (each test's people have subjects of their
    own): oidc-provider-mock, the tampering one, and a server that answers garbage."""
    log = open(tmp_path_factory.mktemp("providers") / "providers.log", "w")
    mock, tampering = MockProvider(log), TamperingProvider(log)
    garbage = subprocess.Popen(["python3", "-c", GARBAGE_SERVER, "0"], stdout=subprocess.PIPE, text=True)
    garbage_port = int(garbage.stdout.readline())
    yield mock, tampering, garbage_port
    for provider in (mock, tampering):
        provider.stop()
    garbage.terminate()
    garbage.wait(timeout=10)
    log.close()


@pytest.fixture
def providers(tmp_path, outside_providers):
    """A LiveSignup server of its own trusting the file's providers."""
    mock, tampering, garbage_port = outside_providers
    tampering.fault("none")  # a fault an earlier test chose goes with it
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"""name: providers-test
fields:
  - name: username
  - name: email
  - name: password
  - name: confirm
  - name: terms
    kind: checkbox
    label: I accept the terms
    accepted: true
providers:
  - id: mock
    name: Mock ID
    issuer: {mock.issuer}
    client_id: livesignup-test
    client_secret_env: MOCK_CLIENT_SECRET
    trust_email_verified: true
  - id: tampering
    name: Tampering ID
    issuer: {tampering.issuer}
    client_id: livesignup-test
    client_secret_env: TAMPERING_CLIENT_SECRET
    trust_email_verified: true
  - id: down
    name: Down ID
    issuer: http://127.0.0.1:{free_port()}
    client_id: livesignup-test
    client_secret_env: DOWN_CLIENT_SECRET
  - id: garbage
    name: Garbage ID
    issuer: http://127.0.0.1:{garbage_port}
    client_id: livesignup-test
    client_secret_env: GARBAGE_CLIENT_SECRET
""")
    secrets = {"MOCK_CLIENT_SECRET": "m0ck", "TAMPERING_CLIENT_SECRET": "t4mper",
               "DOWN_CLIENT_SECRET": "d0wn", "GARBAGE_CLIENT_SECRET": "g4rbage"}
    server = Server(tmp_path, ["--policy", str(policy), "--argon2-preset", "owasp-minimum", "--no-javascript-signups", "off"],
                    environment=secrets, seed_demo=False, name="signup-server-with-providers")
    database, port = server.database, server.port

    class Setup:
        pass
    setup = Setup()
    setup.mock, setup.tampering, setup.database = mock, tampering, database
    setup.port = port
    setup.url = f"http://127.0.0.1:{setup.port}"
    yield setup
    server.stop()


GARBAGE_SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Garbage(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html>this is no discovery document</html>"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Garbage)
print(server.server_port, flush=True)
server.serve_forever()
"""


def stored(database):
    """Accounts (name, address, proved) and provider links, as the database has them."""
    with sqlite3.connect(database) as db:
        accounts = {row[0]: (row[1], row[2] is not None)
                    for row in db.execute("SELECT username, email, email_verified_at FROM users WHERE email <> ''")}
        links = sorted(db.execute("SELECT provider, subject, (SELECT username FROM users WHERE id = account_id)"
                                  " FROM provider_links").fetchall())
    return accounts, links


def sign_up_with_password(setup, username, email):
    person = Browser(setup.port)
    _, _, page = person.request("GET", "/")
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    status, _, page = person.request("POST", "/signup", {"token": token, "username": username, "email": email,
                                                         "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD,
                                                         "terms": "on"})
    assert status == 303, words(page)[:400]
    return person


def test_in_a_browser_sign_up_through_the_provider_sign_out_and_sign_in_through_it_again(providers):
    setup = providers
    setup.mock.put_user("ada-at-mock", {"email": "ada@example.org", "email_verified": True, "preferred_username": "ada_l"})
    driver = make_driver(javascript=True)
    page = Page(driver)
    try:
        page.open(setup.url + "/")
        audit(page, "providers-signup-page")
        driver.find_element(By.CSS_SELECTOR, 'button[data-provider="mock"]').click()
        # oidc-provider-mock's own login page: the person says who they are there.
        page.until(lambda: "/oauth2/authorize" in driver.current_url, "at the provider")
        driver.find_element(By.CSS_SELECTOR, 'input[name="sub"]').send_keys("ada-at-mock")
        driver.find_element(By.CSS_SELECTOR, 'form button[type="submit"]').click()
        page.until(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-field-step="provider"]'), "back, on the sign-up form")
        # The password step is the provider's; the rest of the form is the live form.
        assert not driver.find_elements(By.ID, "password") and not driver.find_elements(By.ID, "confirm")
        assert "Signed in with <bdi>Mock ID</bdi>" in driver.page_source, "the provider's name isolated for direction"
        assert page.field("username").get_attribute("value") == "ada_l"
        assert page.field("email").get_attribute("value") == "ada@example.org"
        page.until_live()
        page.until_state("username.available", "met")
        assert page.state("provider.signed_in") == "met"
        assert page.state("terms.accepted") == "unmet" and page.submit_enabled() == "false"
        audit(page, "providers-signup-form")
        # A suggestion someone else wants: changed live, like anything typed.
        page.backspace("username", len("ada_l"))
        page.type("username", "ada_lovelace")
        page.until_state("username.available", "met")
        driver.find_element(By.ID, "terms").click()
        page.until(lambda: page.submit_enabled() == "true" and page.button_enabled(), "every requirement met: Sign up enabled")
        page.button().click()
        page.until(lambda: driver.current_url.endswith("/welcome"), "signed up and signed in")
        accounts, links = stored(setup.database)
        assert accounts["ada_lovelace"] == ("ada@example.org", True), "the trusted provider proved the address"
        assert links == [("mock", "ada-at-mock", "ada_lovelace")]

        driver.find_element(By.CSS_SELECTOR, "[data-signout]").click()
        page.until(lambda: "/signin" in driver.current_url, "signed out")
        audit(page, "providers-signin-page")
        driver.find_element(By.CSS_SELECTOR, 'button[data-provider="mock"]').click()
        page.until(lambda: "/oauth2/authorize" in driver.current_url, "at the provider again")
        driver.find_element(By.CSS_SELECTOR, 'input[name="sub"]').send_keys("ada-at-mock")
        driver.find_element(By.CSS_SELECTOR, 'form button[type="submit"]').click()
        page.until(lambda: driver.current_url.endswith("/welcome"), "signed in through the provider, no form")
        page.open(setup.url + "/account")
        assert driver.find_elements(By.CSS_SELECTOR, '[data-linked-provider="mock"]')
        audit(page, "providers-account")
        page.open(setup.url + "/account?lang=de")
        assert "Anmeldeanbieter" in driver.page_source
        audit(page, "providers-account-de")
    finally:
        driver.quit()
    assert metric(setup, "livesignup_provider_signins_total", provider="mock", result="signed_in") == 1
    assert metric(setup, "livesignup_provider_signins_total", provider="mock", result="signed_up") == 1


def test_each_bad_answer_is_refused_readably_nothing_is_stored_and_a_control_person_stays(providers):
    setup = providers
    control = sign_up_with_password(setup, "control", "control@example.org")
    assert control.request("GET", "/auth")[0] == 200
    setup.tampering.put_user("eve", {"email": "eve@example.org", "email_verified": True})
    before = stored(setup.database)

    # Another browser's answer: its state is not this browser's.
    victim, attacker = Browser(setup.port), Browser(setup.port)
    callback = attacker.through("tampering", "eve")
    victim.through("tampering", "eve")
    status, _, page = victim.request("GET", callback)
    assert status == 400 and "does not belong to the sign-in this browser started" in words(page)

    # A replayed answer (its flow cookie and callback copied): refused by the server before the
    # provider is asked again, since the flow's state is spent once (issue 52).
    person = Browser(setup.port)
    callback = person.through("tampering", "eve")
    flow = dict(person.cookies)
    assert person.request("GET", callback)[0] == 200
    calls = setup.tampering.token_calls()
    replayer = Browser(setup.port)
    replayer.cookies = flow
    status, _, page = replayer.request("GET", callback)
    assert status == 400 and "started too long ago, or in another browser" in words(page), words(page)[:300]
    assert setup.tampering.token_calls() == calls, "a replayed callback costs no call to the token endpoint" 
    # That first, honest answer opened a sign-up form; nobody sent it, so nothing is stored.
    assert stored(setup.database) == before

    for fault, says in [("wrong_nonce", "wrong_nonce"), ("expired", "expired"), ("bad_signature", "bad_signature"),
                        ("wrong_audience", "wrong_audience")]:
        setup.tampering.fault(fault)
        person = Browser(setup.port)
        status, _, page = person.request("GET", person.through("tampering", "eve"))
        assert status == 400, (fault, words(page)[:300])
        assert "answer could not be trusted" in words(page) and f"({says})" in words(page), fault
        assert "Back to signing in" in words(page)
        assert not [name for name in person.cookies if name.startswith("livesignup_provider")], "nothing kept"
    setup.tampering.fault("none")

    # An address the provider did not prove.
    setup.tampering.put_user("mallory", {"email": "control@example.org", "email_verified": False})
    person = Browser(setup.port)
    status, _, page = person.request("GET", person.through("tampering", "mallory"))
    assert status == 403 and "did not confirm an email address" in words(page)

    assert stored(setup.database) == before
    assert control.request("GET", "/auth")[0] == 200, "the control person is still signed in"
    # (A replayed answer is refused as expired before the provider could refuse its code.)
    for reason in ["wrong_nonce", "expired", "bad_signature", "wrong_audience", "state", "unverified_email"]:
        assert metric(setup, "livesignup_provider_signins_total", provider="tampering", result=reason) >= 1, reason


def test_es256_and_a_rotated_key_are_followed_and_pkce_is_what_the_provider_holds(providers):
    setup = providers
    setup.tampering.put_user("erin", {"email": "erin@example.org", "email_verified": True, "preferred_username": "erin"})
    setup.tampering.fault("es256")
    person = Browser(setup.port)
    # The tampering provider refuses a code whose verifier does not match its challenge:
    # a form here means PKCE was done right.
    status, _, page = person.request("GET", person.through("tampering", "erin"))
    assert status == 200 and 'data-field-step="provider"' in page
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    status, headers, page = person.request("POST", "/signup", {"token": token, "username": "erin", "email": "erin@example.org",
                                                               "credential": "provider", "terms": "on"})
    assert status == 303 and headers["location"] == "/welcome", words(page)[:400]
    # The provider rotates in a key the cached set lacks: the set is fetched again.
    setup.tampering.fault("rotated")
    again = Browser(setup.port)
    status, headers, _ = again.request("GET", again.through("tampering", "erin"))
    assert status == 303 and headers["location"] == "/welcome"
    assert again.request("GET", "/auth")[1]["x-auth-request-user"] == "erin"


def test_an_existing_account_is_linked_only_after_its_password(providers):
    setup = providers
    grace = sign_up_with_password(setup, "grace", "grace@example.org")
    # Her address proved (as a mailed code would have), so a provider's claim to it matters.
    with sqlite3.connect(setup.database) as db:
        db.execute("UPDATE users SET email_verified_at = CURRENT_TIMESTAMP, email_canonical = 'grace@example.org'"
                   " WHERE username = 'grace'")
    setup.tampering.put_user("grace-elsewhere", {"email": "grace@example.org", "email_verified": True})
    person = Browser(setup.port)
    status, headers, _ = person.request("GET", person.through("tampering", "grace-elsewhere"))
    # No account is taken over on the provider's word: sign in first.
    assert status == 303 and headers["location"].startswith("/signin?link=tampering")
    assert person.request("GET", "/auth")[0] == 401
    status, _, page = person.request("GET", headers["location"])
    assert "Sign in to it first" in words(page) and "grace@example.org" in words(page)
    # Someone else signing in in this browser meanwhile gets nothing linked: the identity
    # was offered to the account with its address only.
    sign_up_with_password(setup, "mallory", "mallory@example.org")
    status, _, _ = person.request("POST", "/signin", {"username": "mallory", "password": STRONG_PASSWORD})
    assert status == 303
    assert stored(setup.database)[1] == []
    person = Browser(setup.port)
    status, headers, _ = person.request("GET", person.through("tampering", "grace-elsewhere"))
    assert status == 303
    status, _, _ = person.request("POST", "/signin", {"username": "grace", "password": "not her password"})
    assert status == 401
    assert stored(setup.database)[1] == [], "a wrong password links nothing"
    status, _, _ = person.request("POST", "/signin", {"username": "grace", "password": STRONG_PASSWORD})
    assert status == 303
    assert stored(setup.database)[1] == [("tampering", "grace-elsewhere", "grace")]
    # From now on the provider signs her in.
    other = Browser(setup.port)
    status, headers, _ = other.request("GET", other.through("tampering", "grace-elsewhere"))
    assert status == 303 and headers["location"] == "/welcome"
    assert other.request("GET", "/auth")[1]["x-auth-request-user"] == "grace"
    assert grace.request("GET", "/auth")[0] == 200


def test_a_provider_that_is_down_or_answers_garbage_leaves_the_password_form_working(providers):
    setup = providers
    sign_up_with_password(setup, "hopper", "hopper@example.org")
    person = Browser(setup.port)
    for provider in ["down", "garbage"]:
        status, _, page = person.request("POST", "/signin/provider", {"provider": provider})
        assert status == 502 and "cannot be reached right now" in words(page), (provider, words(page)[:300])
        assert "Sign in with your password instead" in words(page)
    status, _, page = person.request("POST", "/signin/provider", {"provider": "nobody"})
    assert status == 404 and "no such sign-in provider" in words(page)
    status, headers, _ = person.request("POST", "/signin", {"username": "hopper", "password": STRONG_PASSWORD})
    assert status == 303 and headers["location"] == "/welcome"
    assert metric(setup, "livesignup_provider_signins_total", provider="down", result="unreachable") == 1
    assert metric(setup, "livesignup_provider_signins_total", provider="garbage", result="unreachable") == 1


def test_from_the_account_page_a_provider_is_linked_and_unlinked_but_never_the_last_way_in(providers):
    setup = providers
    setup.mock.put_user("kim-at-mock", {"email": "kim@example.org", "email_verified": True, "preferred_username": "kim"})
    setup.tampering.put_user("kim-at-work", {"email": "kim@work.example", "email_verified": True})
    kim = Browser(setup.port)
    status, _, page = kim.request("GET", kim.through("mock", "kim-at-mock"))
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    status, _, page = kim.request("POST", "/signup", {"token": token, "username": "kim_lee", "email": "kim@example.org",
                                                      "credential": "provider", "terms": "on"})
    assert status == 303, words(page)[:600]
    _, _, page = kim.request("GET", "/account")
    # Her only way in: listed, with no Unlink, and linking another is offered.
    assert 'data-linked-provider="mock"' in page and 'data-unlink-provider="mock"' not in page
    assert 'data-link-provider="tampering"' in page
    issuer = setup.mock.issuer
    status, _, page = kim.request("POST", "/account/providers/unlink", {"issuer": issuer, "subject": "kim-at-mock"})
    assert status == 409 and "last way to sign in" in words(page)

    # Linking another, from the account page (just signed up: a recent sign-in).
    status, headers, _ = kim.request("POST", "/account/providers/link", {"provider": "tampering"})
    assert status == 303
    status, headers, _ = kim.request("POST", headers["location"], {"sub": "kim-at-work"})
    assert status == 302
    status, headers, _ = kim.request("GET", headers["location"])
    assert status == 303 and headers["location"].startswith("/account?provider=linked&name=tampering")
    _, _, page = kim.request("GET", headers["location"])
    assert "\u2068Tampering ID\u2069 is linked" in words(page), "the name isolated for direction (issue 58)"
    assert stored(setup.database)[1] == [("mock", "kim-at-mock", "kim_lee"), ("tampering", "kim-at-work", "kim_lee")]

    # Another account's identity cannot be linked here.
    sign_up_with_password(setup, "lee_park", "lee@example.org")
    lee = Browser(setup.port)
    status, _, _ = lee.request("POST", "/signin", {"username": "lee_park", "password": STRONG_PASSWORD})
    status, headers, _ = lee.request("POST", "/account/providers/link", {"provider": "mock"})
    status, headers, _ = lee.request("POST", headers["location"], {"sub": "kim-at-mock"})
    status, _, page = lee.request("GET", headers["location"])
    assert status == 409 and "linked to another account here" in words(page)

    # Now one may go; the other stays as the last way in.
    status, headers, _ = kim.request("POST", "/account/providers/unlink", {"issuer": issuer, "subject": "kim-at-mock"})
    assert status == 303 and "provider=unlinked" in headers["location"]
    assert stored(setup.database)[1] == [("tampering", "kim-at-work", "kim_lee")]
    status, _, _ = kim.request("POST", "/account/providers/unlink",
                               {"issuer": setup.tampering.issuer, "subject": "kim-at-work"})
    assert status == 409
    # The export lists what is linked, and nothing secret.
    status, _, export = kim.request("GET", "/account/export")
    assert status == 200 and '"subject" : "kim-at-work"' in export and "m0ck" not in export and "t4mper" not in export
