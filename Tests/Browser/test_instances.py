"""Several instances behind nginx (issue 12): a person types through nginx, the instance that
holds their form is killed mid-typing, and the form recovers on the other instance.

Two signup-server instances (web1, web2) share a throwaway PostgreSQL database (and through
it the form-token key); nginx runs in front of them with the shipped
deploy/nginx/livesignup-instances.conf (ports swapped for the real ones) and
livesignup-proxy.conf. The page's token names the instance that holds its live session;
after that instance is SIGKILLed, nginx sends the page's next edit or stream reconnect to the
survivor, which answers 404 unknown_session, and the page's script gets a fresh token there,
re-sends every value and reopens its stream.
"""
import re
import tempfile
import uuid

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import SERVER, STRONG_PASSWORD, prerequisite_missing, wait_for
from instances import NGINX, Instance, Nginx, PostgreSQL, http_call, list_accounts, postgresql_bin

INSTANCE_IDS = ("web1", "web2")
# From the kill to the survivor's snapshot: a 404 and a new session, or the stream's retry.
RECOVERY_SECONDS = 20
# What is typed after the kill; none of these can be met before it (the fields are empty).
TYPED_AFTER_THE_KILL = ("password.length", "password.uppercase", "password.common",
                        "password.strength", "confirm.match")


class Deployment:
    def __init__(self, database, instances, nginx):
        self.database = database
        self.instances = instances
        self.nginx = nginx

    def logs(self):
        parts = [f"--- {instance.id} (port {instance.port}) ---\n{instance.log()}"
                 for instance in self.instances.values()]
        if self.nginx is not None:
            parts.append(f"--- nginx (port {self.nginx.port}) ---\n{self.nginx.log()}")
        return "\n".join(parts)


@pytest.fixture(scope="module")
def cluster():
    """One PostgreSQL cluster for the file; each test gets a database of its own in it."""
    bin_dir = postgresql_bin()
    if bin_dir is None:
        prerequisite_missing("PostgreSQL's server (initdb, pg_ctl, createdb, postgres) is not installed under "
                             "/usr/lib/postgresql/<version>/bin (make test installs Debian's postgresql)")
    running = PostgreSQL(bin_dir)
    try:
        yield running.start()
    finally:
        running.stop()


@pytest.fixture
def deployment(cluster, request):
    if not NGINX.exists():
        prerequisite_missing(f"nginx is not installed at {NGINX} (make test installs Debian's nginx-light)")
    assert SERVER.exists(), f"build the server first (swift build): {SERVER}"

    with tempfile.TemporaryDirectory() as directory:
        database = cluster.new_database(re.sub(r"\W", "_", request.node.name)[:50].lower())
        instances = {}
        nginx = None
        try:
            # One after the other: the first creates the schema and the shared token key.
            for instance_id in INSTANCE_IDS:
                instances[instance_id] = Instance(instance_id, database.url, directory)
                instances[instance_id].start()
            nginx = Nginx(directory, {instance_id: instance.port for instance_id, instance in instances.items()})
            nginx.start()
            yield Deployment(database, instances, nginx)
        finally:
            if nginx is not None:
                nginx.kill()
            for instance in instances.values():
                instance.stop()


def token_of(browser):
    return browser.driver.find_element(By.CSS_SELECTOR, 'input[name="token"]').get_attribute("value")


def instance_of(token):
    match = re.fullmatch(r"([a-z0-9-]{1,32})\.[0-9a-f]{56}", token or "")
    assert match, f"the form token is not <instance-id>.<56 hex>: {token!r}"
    return match.group(1)


def test_typing_through_nginx_recovers_when_the_instance_holding_the_form_is_killed(deployment, browser):
    username = f"relay{uuid.uuid4().hex[:8]}"
    try:
        type_through_a_kill(deployment, browser, username)
    except BaseException:
        browser.screenshot("instances-failure")
        print(deployment.logs())  # pytest shows it with the failure
        raise


def type_through_a_kill(deployment, browser, username):
    browser.open(deployment.nginx.url)
    browser.until(lambda: not browser.button_enabled(), "the script disables the button until its first snapshot")
    holder = instance_of(token_of(browser))
    assert holder in INSTANCE_IDS, f"the token names an instance nginx does not know: {holder}"
    survivor = next(instance_id for instance_id in INSTANCE_IDS if instance_id != holder)

    # Live through nginx: the holder's stream crosses out what is typed.
    browser.type("username", username, leave=True)
    browser.type("email", f"{username}@example.com", leave=True)
    for requirement in ("username.length", "username.charset", "username.available", "email.format"):
        browser.until_state(requirement, "met")
    states = browser.states()
    assert all(states[requirement] == "unmet" for requirement in TYPED_AFTER_THE_KILL), states
    assert not browser.button_enabled()
    browser.screenshot("instances-1-live-on-" + holder)

    # The instance that holds the form dies without a word; the person keeps typing.
    deployment.instances[holder].kill()
    assert deployment.instances[survivor].alive(), f"{survivor} died too:\n{deployment.instances[survivor].log()}"
    browser.type("password", STRONG_PASSWORD, leave=True)
    browser.type("confirm", STRONG_PASSWORD, leave=True)

    recovery = WebDriverWait(browser.driver, RECOVERY_SECONDS)
    recovery.until(lambda _: instance_of(token_of(browser)) == survivor,
                   message=f"the page gets a fresh token from {survivor} (token: {token_of(browser)!r})")
    recovery.until(lambda _: all(browser.state(requirement) == "met" for requirement in TYPED_AFTER_THE_KILL),
                   message=f"{survivor} reports the values typed after the kill as met: {browser.states()}")
    recovery.until(lambda _: set(browser.states().values()) == {"met"},
                   message=f"every requirement met on {survivor}: {browser.states()}")
    notice = browser.driver.find_element(By.CSS_SELECTOR, "[data-connection]")
    recovery.until(lambda _: not notice.is_displayed(), message="the connection notice goes away")
    recovery.until(lambda _: browser.button_enabled(), message="the Sign-up button enables")
    for field, value in (("username", username), ("email", f"{username}@example.com"),
                         ("password", STRONG_PASSWORD), ("confirm", STRONG_PASSWORD)):
        assert browser.field(field).get_attribute("value") == value, f"{field} lost what was typed"
    browser.screenshot("instances-2-recovered-on-" + survivor)

    browser.button().click()
    recovery.until(lambda _: re.match(r"^https?://[^/]+/welcome(?:[?#]|$)", browser.driver.current_url),
                   message=f"lands on the welcome page (at {browser.driver.current_url})")
    assert browser.driver.find_element(By.TAG_NAME, "h1").text == f"Welcome, {username}!"
    browser.screenshot("instances-3-welcome")

    # The account exists, exactly once, in the shared database.
    accounts = list_accounts(deployment.database.url)
    mine = [account for account in accounts if account[0] == username]
    assert mine == [(username, f"{username}@example.com")], accounts


def test_a_sign_in_made_on_one_instance_is_known_to_the_other(deployment):
    """Signed-in sessions live in PostgreSQL (issue 20): the cookie web1 set is a live session
    on web2, and a sign-out on web2 ends it on web1 (within its 5 s confirmation window)."""
    import urllib.parse

    def call(instance, method, path, body=None, cookie=None):
        return http_call(deployment.instances[instance].port, method, path, body=body, cookie=cookie)

    _, _, page = call("web1", "GET", "/")
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    username = f"shared{uuid.uuid4().hex[:8]}"
    body = urllib.parse.urlencode({"token": token, "username": username, "email": f"{username}@example.org",
                                   "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD})
    status, headers, _ = call("web1", "POST", "/signup", body=body)
    assert status == 303, deployment.logs()
    cookie = headers["set-cookie"].split(";")[0]

    status, headers, _ = call("web2", "GET", "/auth", cookie=cookie)
    assert status == 200 and headers["x-auth-request-user"] == username, "web2 knows web1's session"

    assert call("web2", "POST", "/signout", cookie=cookie)[0] == 303
    # web1 may trust its last confirmation for up to 5 s.
    assert wait_for(lambda: call("web1", "GET", "/auth", cookie=cookie)[0] == 401, 10), \
        "signed out on web2: refused on web1 too"


def test_a_second_factors_code_is_accepted_once_across_instances(deployment):
    """Issue 44: the code that signed in on web1 is refused on web2 within its window (the
    store's last accepted step is shared), and the key read off web1's setup page works on web2
    (the sealing key is shared). Codes from pyotp, not our code."""
    import http.client
    import time
    import urllib.parse

    import pyotp

    def call(instance, method, path, fields=None, cookie=None):
        connection = http.client.HTTPConnection("127.0.0.1", deployment.instances[instance].port, timeout=15)
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if fields is not None else {}
        if cookie:
            headers["Cookie"] = cookie
        connection.request(method, path, body=urllib.parse.urlencode(fields) if fields is not None else None, headers=headers)
        response = connection.getresponse()
        cookies = [value.split(";")[0] for name, value in response.getheaders()
                   if name.lower() == "set-cookie" and "=;" not in value.split(";")[0] + ";"]
        return response.status, response.getheader("Location"), cookies, response.read().decode()

    _, _, _, page = call("web1", "GET", "/")
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    username = f"twice{uuid.uuid4().hex[:8]}"
    status, _, cookies, _ = call("web1", "POST", "/signup", {"token": token, "username": username,
                                                            "email": f"{username}@example.org",
                                                            "password": STRONG_PASSWORD, "confirm": STRONG_PASSWORD})
    assert status == 303, deployment.logs()
    session = cookies[0]
    status, _, _, setup = call("web1", "GET", "/account/second-factor", cookie=session)
    assert status == 200, setup
    app = pyotp.TOTP(re.search(r'data-key dir="ltr">([A-Z2-7 ]+)<', setup).group(1).replace(" ", ""))
    status, _, _, shown = call("web1", "POST", "/account/second-factor", {"code": app.now()}, cookie=session)
    assert status == 200 and "data-recovery-codes" in shown, shown

    # A code of the next step: on web1 it signs in; on web2, within its window, it is refused.
    code = app.at(time.time() + 30)
    status, location, cookies, _ = call("web1", "POST", "/signin", {"username": username, "password": STRONG_PASSWORD})
    assert status == 303 and location == "/signin/second-factor", deployment.logs()
    status, location, cookies, _ = call("web1", "POST", "/signin/second-factor", {"code": code}, cookie=cookies[0])
    assert status == 303 and location == "/welcome", deployment.logs()
    status, location, cookies, _ = call("web2", "POST", "/signin", {"username": username, "password": STRONG_PASSWORD})
    assert status == 303 and location == "/signin/second-factor"
    status, _, _, refused = call("web2", "POST", "/signin/second-factor", {"code": code}, cookie=cookies[0])
    assert status == 401 and "used already" in refused, refused


def test_the_funnel_command_sums_both_instances(deployment):
    """Issue 59: each instance flushes its own funnel counts to the one database, adding to the
    same rows; `signup-server funnel` reads the sum. web1 makes one account; web2 refuses one
    post, then makes its account. Each /metrics shows its own; the command shows both."""
    import json
    import subprocess
    import urllib.parse

    from instances import child_environment

    def sign_up(instance, username, confirm=STRONG_PASSWORD):
        _, _, page = http_call(deployment.instances[instance].port, "GET", "/")
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)
        return token, lambda confirm=confirm: http_call(
            deployment.instances[instance].port, "POST", "/signup",
            body=urllib.parse.urlencode({"token": token, "username": username, "email": f"{username}@example.org",
                                         "password": STRONG_PASSWORD, "confirm": confirm}))[0]

    _, post = sign_up("web1", f"sum1{uuid.uuid4().hex[:8]}")
    assert post() == 303, deployment.logs()
    _, post = sign_up("web2", f"sum2{uuid.uuid4().hex[:8]}")
    assert post(confirm="different") == 422
    assert post() == 303, deployment.logs()

    def completed_on(instance):
        _, _, text = http_call(deployment.instances[instance].port, "GET", "/metrics")
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("livesignup_form_completed_total{"))
    assert completed_on("web1") == 1 and completed_on("web2") == 1, "each instance counts its own"

    def report():
        result = subprocess.run([str(SERVER), "funnel", "--database", deployment.database.url, "--format", "json"],
                                capture_output=True, text=True, timeout=30, env=child_environment())
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)
    # Each instance flushes every 5 s.
    assert wait_for(lambda: report()["totals"]["completed"] == 2, 20), report()
    summed = report()
    assert summed["totals"] == {"started": 2, "first_edits": 2, "completed": 2, "abandoned": 0}, summed
    assert summed["refused"] == {"invalid": 1}, summed
    assert summed["by"]["javascript"]["no"]["completed"] == 2
