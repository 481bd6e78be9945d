"""LiveSignup as the OpenID provider of an operator's application (issue 56), proved with a
relying party we did not write: Apache httpd with mod_auth_openidc (Debian's packages) on
loopback, configured as docs/CONNECTING-APPLICATIONS.md says, protecting a page that shows
what Apache hands the application (REMOTE_USER and every OIDC_CLAIM_*), with a plain page of
its own to end on after signing out.

In Chromium:

1. A visitor opens the protected page, lands on LiveSignup's live sign-up form
   (`prompt=create`), signs up, and is back on the page signed in: Apache took the code,
   redeemed it with its secret and PKCE, verified the ES256 ID token (issuer, audience, nonce)
   and sets REMOTE_USER to the username. An address nobody proved is not handed on (no
   `email`, no `email_verified`); with mail verification on, the person proves it with the
   mailed code on the way and Apache gets `email` and `email_verified`.
2. An application that is not the operator's own (`first_party: false`) gets its code only
   after the person allows it on the consent page; /account then lists it. axe finds nothing
   on the consent page and on /account's list of applications, in English and in Arabic.
3. `ui_locales` chooses the language of the sign-up form and of the consent page right after
   it.
4. Signing out through the application (RP-initiated logout): mod_auth_openidc's
   `OIDCRedirectURI?logout=<its signed-out page>` ends Apache's session, revokes its tokens and
   sends the browser to `end_session_endpoint` with its ID token as `id_token_hint`; LiveSignup
   signs the person out at once (no confirmation page) and sends the browser to that page,
   registered in `post_logout_redirect_uris`. LiveSignup's /welcome then sends to sign in, and
   the protected page sends the browser to LiveSignup's sign-in page; signing in there brings
   the person back.
5. Signing out on LiveSignup's own /welcome page (back-channel logout, `backchannel_logout_uri`
   = `OIDCRedirectURI?logout=backchannel`): Apache keeps its session until the logout token
   comes with the periodic sweep (every 15 s with `--session-idle-minutes 1`; waited on for at
   most 20 s through `livesignup_backchannel_logouts_total`), taken at the first attempt; then
   the protected page sends the browser to LiveSignup's sign-in page.
"""
import secrets
import urllib.parse

import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By

from apache_rp import ApacheRelyingParty, missing
from conftest import STRONG_PASSWORD, Server, metric, prerequisite_missing
from instances import poll
from test_accessibility import audit
from test_email_verification import code_in
from test_recovery import mails_in

SECRET_VARIABLE = "LIVESIGNUP_CLIENT_WIKI"
# What every ID token carries, whatever the scopes (docs/CONNECTING-APPLICATIONS.md, Claims);
# `amr` is absent right after a sign-up.
ID_TOKEN_CLAIMS = {"iss", "aud", "azp", "iat", "exp", "auth_time", "sid", "acr", "nonce", "sub"}


@pytest.fixture
def deployment(tmp_path):
    """A factory: `deployment(first_party=..., server_args=..., auth_request_params=...,
    backchannel=...)` starts Apache's port first (its redirect URI and the page signing out
    returns to are declared in the policy, and with `backchannel` its back-channel logout URI),
    LiveSignup with a policy declaring the one client "wiki" and its secret in the environment,
    then Apache for it. Returns (LiveSignup server, Apache)."""
    if missing():
        prerequisite_missing(missing())
    started = []

    def start(*, first_party, server_args=(), auth_request_params=None, backchannel=False):
        apache = ApacheRelyingParty(auth_request_params=auth_request_params)
        started.append(apache)
        policy = tmp_path / "policy.yaml"
        policy.write_text(f"""name: openid-provider-test
clients:
  - id: wiki
    name: Team wiki
    redirect_uris: [{apache.redirect_uri}]
    post_logout_redirect_uris: [{apache.logged_out_page}]
    scopes: [openid, profile, email]
    first_party: {"true" if first_party else "false"}
    client_secret_env: {SECRET_VARIABLE}
""" + (f"    backchannel_logout_uri: {apache.backchannel_logout_uri}\n" if backchannel else ""))
        secret = secrets.token_urlsafe(32)
        server = Server(tmp_path, ["--policy", str(policy), *server_args], environment={SECRET_VARIABLE: secret},
                        seed_demo=False, name="signup-server-provider")
        started.append(server)
        apache.start(server.url, "wiki", secret)
        return server, apache

    yield start
    for running in reversed(started):
        running.stop()


def shown(page):
    """What the protected page says: REMOTE_USER and each OIDC_CLAIM_* (without the prefix)."""
    driver = page.driver
    claims = {element.get_attribute("id").removeprefix("OIDC_CLAIM_"): element.text
              for element in driver.find_elements(By.CSS_SELECTOR, "p.claim")}
    return driver.find_element(By.ID, "REMOTE_USER").text, claims


def until(page, condition, what, apache=None):
    """`page.until`, failing with where the browser is and, given Apache, the end of its log."""
    try:
        page.until(condition, what)
    except TimeoutException:
        raise AssertionError(f"{what}: the browser is at {page.driver.current_url}"
                             + (f"\nApache's log ends:\n{apache.log()[-3000:]}" if apache else "")) from None


def until_on(page, url, what, apache=None):
    until(page, lambda: page.driver.current_url == url, what, apache)


def sent_to_sign_up(page, server, apache):
    """Opens the protected page; checks that Apache sent the browser, through /oauth2/authorize,
    to LiveSignup's live sign-up form with the request to come back to."""
    page.open(apache.page)
    until(page, lambda: page.driver.current_url.startswith(f"{server.url}/?"), "on LiveSignup's sign-up form", apache)
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(page.driver.current_url).query)
    back = urllib.parse.urlsplit(query["return_to"][0])
    assert back.path == "/oauth2/authorize", back
    asked = urllib.parse.parse_qs(back.query)
    assert asked["client_id"] == ["wiki"] and asked["redirect_uri"] == [apache.redirect_uri]
    assert asked["code_challenge_method"] == ["S256"] and asked["prompt"] == ["create"]
    page.until_live()


def sign_up(page, username, address):
    page.type("username", username)
    page.type("email", address)
    page.type("password", STRONG_PASSWORD)
    page.type("confirm", STRONG_PASSWORD, leave=True)
    page.until(page.button_enabled, "the form is ready")
    page.button().click()


def assert_apache_logged_no_error(apache):
    errors = [line for line in apache.log().splitlines() if ":error]" in line or ":crit]" in line]
    assert errors == [], "\n".join(errors)


def test_apache_signs_a_new_person_up_through_the_live_form_without_an_unproved_address(deployment, browser):
    server, apache = deployment(first_party=True, auth_request_params="prompt=create")
    sent_to_sign_up(browser, server, apache)
    sign_up(browser, "apache_person", "apache_person@example.org")
    until_on(browser, apache.page, "back on the protected page, signed in", apache)
    browser.screenshot("openid-apache-signed-in")

    user, claims = shown(browser)
    assert user == "apache_person", "REMOTE_USER is the username (OIDCRemoteUserClaim preferred_username)"
    assert claims["preferred_username"] == "apache_person"
    assert claims["iss"] == server.url and claims["aud"] == "wiki" and claims["azp"] == "wiki"
    assert claims["acr"] == "1"
    assert set(claims) == ID_TOKEN_CLAIMS | {"preferred_username"}, \
        "nobody proved the address (this server mails nothing): no email, no email_verified"
    assert claims["sub"] not in ("apache_person", "apache_person@example.org") and not claims["sub"].isdigit()
    assert_apache_logged_no_error(apache)


def test_apache_gets_the_address_once_the_person_proved_it_on_the_way(deployment, browser, tmp_path):
    mail_dir = tmp_path / "mail"
    server, apache = deployment(first_party=True, auth_request_params="prompt=create",
                                server_args=["--mail-dir", str(mail_dir)])
    sent_to_sign_up(browser, server, apache)
    sign_up(browser, "proved_person", "proved@example.org")
    until(browser, lambda: urllib.parse.urlsplit(browser.driver.current_url).path == "/verify", "asked for the mailed code")
    browser.until(lambda: mails_in(mail_dir, "proved@example.org"), "the code was written to the mail folder")
    code = code_in(mails_in(mail_dir, "proved@example.org")[0])
    browser.type("code", code)
    browser.driver.find_element(By.CSS_SELECTOR, ".verify-form button[type=submit]").click()
    until_on(browser, apache.page, "back on the protected page, signed in, after proving the address", apache)

    user, claims = shown(browser)
    assert user == "proved_person"
    assert claims["email"] == "proved@example.org"
    # mod_auth_openidc writes a JSON true as "1".
    assert claims["email_verified"] == "1"
    assert set(claims) == ID_TOKEN_CLAIMS | {"preferred_username", "email", "email_verified"}
    assert_apache_logged_no_error(apache)


def audit_in(page, language, name):
    html = page.driver.find_element(By.TAG_NAME, "html")
    assert html.get_attribute("lang") == language
    assert html.get_attribute("dir") == ("rtl" if language == "ar" else "ltr")
    audit(page, name)


def test_consent_page_and_the_account_list_of_applications(deployment, browser):
    server, apache = deployment(first_party=False)
    driver = browser.driver
    browser.open(server.url)
    browser.until_live()
    sign_up(browser, "consenting", "consenting@example.org")
    until(browser, lambda: urllib.parse.urlsplit(driver.current_url).path == "/welcome", "signed up and in")

    # Apache sends the signed-in person to authorize: the consent page, not a code.
    browser.open(apache.page)
    until(browser, lambda: driver.find_elements(By.CSS_SELECTOR, "[data-consent-client=wiki]"), "the consent page", apache)
    assert "Team wiki" in driver.find_element(By.TAG_NAME, "h1").text
    assert {e.get_attribute("data-scope") for e in driver.find_elements(By.CSS_SELECTOR, "[data-scope]")} == \
        {"openid", "profile", "email"}, "what it will learn, as Apache asked (OIDCScope)"
    audit_in(browser, "en", "consent-en")

    driver.find_element(By.CSS_SELECTOR, "[data-consent-allow]").click()
    until_on(browser, apache.page, "back on the protected page once allowed", apache)
    assert shown(browser)[0] == "consenting"

    browser.open(f"{server.url}/account")
    section = driver.find_element(By.ID, "applications")
    assert section.find_element(By.CSS_SELECTOR, "[data-application=wiki]").text.startswith("Team wiki")
    audit_in(browser, "en", "account-applications-en")
    for tag in ["ar", "ja"]:
        browser.open(f"{server.url}/account?lang={tag}")
        assert driver.find_elements(By.CSS_SELECTOR, "#applications [data-application=wiki]")
        audit_in(browser, tag, f"account-applications-{tag}")
    # Japanese too (issue 58: axe in Arabic and Japanese on every page): the consent page, the
    # application's name isolated inside its heading.
    browser.open(f"{server.url}/oauth2/authorize?{authorize_query(apache, state='ja', prompt='consent', lang='ja')}")
    until(browser, lambda: driver.find_elements(By.CSS_SELECTOR, "[data-consent-client=wiki]"), "the consent page in Japanese")
    assert driver.find_elements(By.CSS_SELECTOR, "h1 bdi"), "the application's name in <bdi>"
    audit_in(browser, "ja", "consent-ja")
    # The sign-out question an application's logout asks without an ID token of this browser.
    for tag in ["ar", "ja"]:
        browser.open(f"{server.url}/oauth2/logout?lang={tag}")
        until(browser, lambda: driver.find_elements(By.CSS_SELECTOR, "form[action='/oauth2/logout']"), "the sign-out question")
        audit_in(browser, tag, f"logout-question-{tag}")

    # Asked again (prompt=consent), in Arabic (`lang`, as every LiveSignup page takes it; see
    # the test below for ui_locales); not allowed this time: the application is told so.
    again = authorize_query(apache, state="again", prompt="consent", lang="ar")
    browser.open(f"{server.url}/oauth2/authorize?{again}")
    until(browser, lambda: driver.find_elements(By.CSS_SELECTOR, "[data-consent-client=wiki]"), "the consent page again")
    audit_in(browser, "ar", "consent-ar")
    driver.find_element(By.CSS_SELECTOR, "[data-consent-deny]").click()
    until(browser, lambda: driver.current_url.startswith(apache.redirect_uri + "?"), "the refusal goes to the application")
    answer = urllib.parse.parse_qs(urllib.parse.urlsplit(driver.current_url).query)
    assert answer["error"] == ["access_denied"] and answer["state"] == ["again"] and answer["iss"] == [server.url]


def authorize_query(apache, **parameters):
    """An authorization request for "wiki" as Apache makes one (without PKCE: a confidential
    client need not), with `parameters` added."""
    return urllib.parse.urlencode({"response_type": "code", "client_id": "wiki", "redirect_uri": apache.redirect_uri,
                                   "scope": "openid email profile", "nonce": secrets.token_urlsafe(16), **parameters})


def test_ui_locales_choose_the_language_of_the_whole_authorization(deployment, browser):
    """OpenID Connect's ui_locales names the languages of the provider's pages: the sign-up
    form follows it, and so must the consent page that comes right after."""
    server, apache = deployment(first_party=False)
    driver = browser.driver
    browser.open(f"{server.url}/oauth2/authorize?{authorize_query(apache, state='ar', prompt='create', ui_locales='ar')}")
    until(browser, lambda: urllib.parse.urlsplit(driver.current_url).path == "/", "the sign-up form")
    browser.until_live()
    assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "ar", "the sign-up form is in Arabic"
    sign_up(browser, "arabic_reader", "arabic_reader@example.org")
    until(browser, lambda: driver.find_elements(By.CSS_SELECTOR, "[data-consent-client=wiki]"), "the consent page")
    assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "ar", "and so is the consent page"


def path_of(url):
    return urllib.parse.urlsplit(url).path


def signed_in_on_apache(page, server, apache, username):
    """Signs `username` up on LiveSignup itself, then opens the protected page: a first-party
    application, so Apache gets its code straight away and shows the person."""
    page.open(server.url)
    page.until_live()
    sign_up(page, username, f"{username}@example.org")
    until(page, lambda: path_of(page.driver.current_url) == "/welcome", "signed up and in")
    page.open(apache.page)
    until_on(page, apache.page, "on the protected page, signed in", apache)
    assert shown(page)[0] == username


def sent_to_sign_in(page, server, apache):
    """Opens the protected page; checks that Apache sent the browser, through /oauth2/authorize,
    to LiveSignup's sign-in page: nobody is signed in to either any more."""
    page.open(apache.page)
    until(page, lambda: page.driver.current_url.startswith(f"{server.url}/signin?"), "on LiveSignup's sign-in page", apache)
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(page.driver.current_url).query)
    back = urllib.parse.urlsplit(query["return_to"][0])
    assert back.path == "/oauth2/authorize" and urllib.parse.parse_qs(back.query)["client_id"] == ["wiki"], back


def test_signing_out_of_apache_signs_out_of_livesignup_and_comes_back_to_apache(deployment, browser):
    server, apache = deployment(first_party=True)
    driver = browser.driver
    signed_in_on_apache(browser, server, apache, "leaving")

    # mod_auth_openidc ends its own session, revokes its tokens and sends the browser to
    # end_session_endpoint with its ID token as id_token_hint: this browser's own session, so
    # LiveSignup signs out at once (no confirmation page) and sends it to the registered page.
    browser.open(apache.logout_url(apache.logged_out_page))
    until(browser, lambda: driver.current_url.split("?")[0] == apache.logged_out_page, "on Apache's signed-out page", apache)
    assert driver.find_element(By.ID, "logged-out").text == "You are signed out of the wiki"
    browser.screenshot("openid-apache-signed-out")

    browser.open(f"{server.url}/welcome")
    until(browser, lambda: path_of(driver.current_url) == "/signin", "LiveSignup's session is gone: /welcome sends to sign in")
    sent_to_sign_in(browser, server, apache)
    # And a sign-in there brings the person back to the application.
    browser.type("username", "leaving")
    browser.type("password", STRONG_PASSWORD)
    driver.find_element(By.CSS_SELECTOR, ".signin-form button[type=submit]").click()
    until_on(browser, apache.page, "back on the protected page after signing in again", apache)
    assert shown(browser)[0] == "leaving"
    assert_apache_logged_no_error(apache)


# A sign-out on LiveSignup's own pages reaches applications with the periodic sweep, every
# min(60, form-session idle time / 4) seconds: 15 s with --session-idle-minutes 1.
SWEEP_ARGS = ["--session-idle-minutes", "1"]
BACKCHANNEL_SECONDS = 20


def backchannel_logouts(server, result="delivered"):
    return metric(server, "livesignup_backchannel_logouts_total", result=result)


def test_signing_out_of_livesignup_ends_apaches_session_through_the_back_channel(deployment, browser):
    server, apache = deployment(first_party=True, backchannel=True, server_args=SWEEP_ARGS)
    driver = browser.driver
    signed_in_on_apache(browser, server, apache, "everywhere")
    told = backchannel_logouts(server)

    browser.open(f"{server.url}/welcome")
    driver.find_element(By.CSS_SELECTOR, "[data-signout]").click()
    until(browser, lambda: path_of(driver.current_url) == "/signin", "signed out of LiveSignup")
    # Apache's session is its own: until the logout token comes, the page still shows the person.
    browser.open(apache.page)
    if backchannel_logouts(server) == told:   # (the sweep rarely comes this soon)
        assert driver.current_url == apache.page and shown(browser)[0] == "everywhere", \
            "Apache keeps its session until it is told"

    try:
        poll(lambda: backchannel_logouts(server) > told, BACKCHANNEL_SECONDS, "the logout token delivered to Apache", 0.2)
    except TimeoutException:
        raise AssertionError(
            f"no logout token delivered within {BACKCHANNEL_SECONDS} s (retried "
            f"{backchannel_logouts(server, 'retried'):.0f}, parked {backchannel_logouts(server, 'parked'):.0f})"
            f"\nApache's log ends:\n{apache.log()[-3000:]}") from None
    assert backchannel_logouts(server, "retried") == 0 and backchannel_logouts(server, "parked") == 0, \
        "Apache took the first logout token"
    sent_to_sign_in(browser, server, apache)
    assert_apache_logged_no_error(apache)
