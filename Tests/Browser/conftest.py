"""Fixtures for the real-browser tests: the real server binary on an ephemeral port with a
fresh database, and headless Chromium driven by Selenium (Debian's chromium-driver).

LIVESIGNUP_SERVER names the binary (default: .build/debug/signup-server); screenshots go to
build/browser-screenshots/.

Measurements (tests marked `bench`: latency ratios, medians, price tables) do not run by
default: `pytest --bench` (make bench) runs them alone, and they write their figures to
Benchmarks/figures/. Under CI (`CI=true`) or `LIVESIGNUP_REQUIRE_ALL=1` (set by make test, which
installs every prerequisite) a skipped test fails: a run is never green for what did not run.
"""
import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import urllib.parse
import time
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

# Every server these tests start asks for proofs of work (the default), but tests about other
# things post plain forms without one and sign up many people from 127.0.0.1 within seconds:
# for them the budget without JavaScript is off and the price stays at its base. The proof
# of work's own tests (test_proof_of_work.py) give both on the command line, which wins.
os.environ.setdefault("LIVESIGNUP_NO_JAVASCRIPT_SIGNUPS", "off")
os.environ.setdefault("LIVESIGNUP_PROOF_MAX_LEVEL", "0")
# Hashing is not these tests' subject (the XCTests check argon2id and its presets): the cheapest
# preset, 19 MiB instead of 64, keeps each sign-up and sign-in from paying for it.
os.environ.setdefault("LIVESIGNUP_ARGON2_PRESET", "owasp-minimum")

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(os.environ.get("LIVESIGNUP_SERVER", ROOT / ".build/debug/signup-server"))
SCREENSHOTS = ROOT / "build/browser-screenshots"
# Where the measurements (`pytest --bench`) record their figures; committed after make bench.
FIGURES = ROOT / "Benchmarks/figures"
# A run that must prove everything: a skip is a failure (see pytest_runtest_makereport).
REQUIRE_ALL = (os.environ.get("CI", "").lower() in ("1", "true", "yes")
               or os.environ.get("LIVESIGNUP_REQUIRE_ALL") == "1")
STRONG_PASSWORD = "Lantern-Orbit-Quietly-42"
WAIT_SECONDS = 10
# How long a test server may take to print its port (a debug build starts in about a second).
START_SECONDS = 30


# ---------- the run: measurements apart, skips that count ----------

def pytest_addoption(parser):
    parser.addoption("--bench", action="store_true",
                     help="run only the measurements (tests marked bench), which record their figures "
                          "in Benchmarks/figures/ (make bench)")


def pytest_configure(config):
    config.addinivalue_line("markers", "bench: a measurement rather than a test of behaviour: run only by "
                                       "`pytest --bench` (make bench), never beside a build")


def pytest_collection_modifyitems(config, items):
    """Without --bench the measurements are left out; with it, only they run."""
    wanted = config.getoption("--bench")
    kept = [item for item in items if (item.get_closest_marker("bench") is not None) == wanted]
    left_out = [item for item in items if item not in kept]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where every prerequisite is required (REQUIRE_ALL), a skip is reported as a failure
    that gives the skip's reason."""
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} would have been skipped ({reason}), but this run requires every "
                           "prerequisite (CI=true or LIVESIGNUP_REQUIRE_ALL=1)")


def prerequisite_missing(what):
    """Skips the test saying what is missing and where it comes from (a failure where the run
    requires everything)."""
    pytest.skip(what)


def free_port():
    """A loopback port nobody listens on at this moment, for what cannot bind port 0 and say
    which port it took (nginx, oidc-provider-mock, PostgreSQL) or must be named before it
    listens (a webhook receiver that starts "down"). Everything else binds port 0 and reads
    its port back."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def record_figures(name, lines):
    """A measurement's figures: printed, and written to Benchmarks/figures/NAME (make bench)."""
    FIGURES.mkdir(parents=True, exist_ok=True)
    (FIGURES / name).write_text("\n".join(lines) + "\n")
    print(f"\n--- Benchmarks/figures/{name} ---\n" + "\n".join(lines))


def port_of(process, name="signup-server", log_path=None, timeout=START_SECONDS):
    """The port a just-started server prints on its first line (`listening on
    http://127.0.0.1:PORT`), waited for at most `timeout` seconds. A server that exits, prints
    something else or stays silent is killed, and the failure names it and shows its exit
    status and the tail of its log (`log_path`), so a hung start never hangs the suite."""
    import select
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([process.stdout], [], [], min(0.2, max(0.0, deadline - time.monotonic())))
        if ready:
            line = process.stdout.readline()
            break
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if match:
        return int(match.group(1))
    try:
        status = process.wait(timeout=1)  # it may be on its way out, having said why
    except subprocess.TimeoutExpired:
        status = None
        process.kill()
        process.wait(timeout=10)
    tail = ""
    if log_path:
        try:
            tail = Path(log_path).read_text(errors="replace")[-2000:]
        except OSError:
            tail = "(its log could not be read)"
    what = f"exited with {status}" if status is not None else f"printed no port within {timeout:.0f} s and was killed"
    raise AssertionError(f"{name} did not start: it {what}; its first line: {line!r}" + (f"\nits log ends:\n{tail}" if tail else ""))


class Server:
    """The one way these tests start signup-server: the binary on a free port (it binds port 0
    and prints the port it took), `directory` holding its SQLite database (unless `database`
    names another, e.g. a PostgreSQL URL) and its log (`NAME.log`: stderr; stdout gives the
    port line). `environment` adds variables; `inherit_settings=False` leaves out the
    LIVESIGNUP_* variables of this run (conftest's defaults above), so only the flags configure
    it. `restart()` brings it back on the same port and database; `kill()` is SIGKILL."""

    def __init__(self, directory, extra_args=(), *, database=None, environment=None, inherit_settings=True,
                 seed_demo=True, name="accounts", start=True):
        self.directory = Path(directory)
        self.database = database or self.directory / "accounts.sqlite"
        self.name = name
        self.log_path = self.directory / f"{name}.log"
        self.extra_args = list(extra_args)
        self.environment = dict(environment or {})
        self.inherit_settings = inherit_settings
        self.seed_demo = seed_demo
        self.port = 0
        self.process = None
        self.url = None
        if start:
            self.start()

    def start(self):
        self.directory.mkdir(parents=True, exist_ok=True)
        environment = {name: value for name, value in os.environ.items()
                       if self.inherit_settings or not name.startswith("LIVESIGNUP_")}
        environment.update(self.environment)
        arguments = [str(SERVER), "--port", str(self.port), "--database", str(self.database),
                     "--public-directory", str(ROOT / "Public"), "--templates-directory", str(ROOT / "Templates"),
                     "--availability-debounce-ms", "150", "--log-level", "warning"]
        if self.seed_demo:
            arguments.append("--seed-demo")
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(arguments + self.extra_args, stdout=subprocess.PIPE, stderr=log,
                                            stdin=subprocess.DEVNULL, text=True, env=environment)
        self.port = port_of(self.process, f"signup-server {self.name} " + " ".join(self.extra_args), self.log_path)
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        """SIGTERM, as an operator stops it; SIGKILL if it has not gone within 10 s."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self):
        """SIGKILL: no goodbye to anyone."""
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=10)

    def restart(self):
        self.stop()
        self.start()

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


class ProcessReadings:
    """/proc readings of a process: resident memory, threads, open descriptors."""

    def __init__(self, pid):
        self.pid = pid

    def rss_mib(self):
        status = Path(f"/proc/{self.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024

    def threads(self):
        return len(list(Path(f"/proc/{self.pid}/task").iterdir()))

    def descriptors(self):
        return len(list(Path(f"/proc/{self.pid}/fd").iterdir()))


_NEVER_SET = threading.Event()


def wait_for(condition, timeout, interval=0.05):
    """Checks `condition` until it holds or `timeout` seconds pass; returns whether it held.
    Between checks it waits at most `interval`, and never past the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return condition()
        _NEVER_SET.wait(min(interval, remaining))


@pytest.fixture
def server():
    assert SERVER.exists(), f"build the server first (swift build): {SERVER}"
    with tempfile.TemporaryDirectory() as directory:
        running = Server(directory)
        yield running
        running.stop()


@pytest.fixture
def server_with():
    """A factory: `server_with(["--flag", "value"])` starts a server with extra flags."""
    assert SERVER.exists(), f"build the server first (swift build): {SERVER}"
    started = []
    with tempfile.TemporaryDirectory() as directory:
        def start(extra_args):
            running = Server(Path(directory) / str(len(started)), extra_args)
            started.append(running)
            return running
        yield start
        for running in started:
            running.stop()


def make_driver(javascript=True, flags=(), logging_prefs=None):
    """Headless Chromium; `flags` are added to the usual ones, `logging_prefs` sets
    goog:loggingPrefs (e.g. {"performance": "ALL"} to read HTTP statuses)."""
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=600,1300", "--lang=en-GB") + tuple(flags):
        options.add_argument(flag)
    if logging_prefs:
        options.set_capability("goog:loggingPrefs", logging_prefs)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    # Debian's driver: keeps Selenium Manager from trying to download one (no internet).
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


class SharedChromium:
    """One headless Chromium for the whole run (starting one costs about half a second, and
    the suite used to start 74). Between tests it is put back as new: a fresh tab (so
    sessionStorage and any DevTools emulation go with the old one), no cookies, no cache,
    the usual window size. If that fails, the browser is replaced."""

    def __init__(self, **options):
        self.options = options  # make_driver's: javascript, flags, logging_prefs
        self.driver = None

    def get(self):
        if self.driver is None:
            self.driver = make_driver(**self.options)
        return self.driver

    def reset(self):
        driver = self.driver
        if driver is None:
            return
        try:
            old = driver.window_handles
            driver.switch_to.new_window("tab")
            fresh = driver.current_window_handle
            for handle in old:
                driver.switch_to.window(handle)
                driver.close()
            driver.switch_to.window(fresh)
            if self.options.get("logging_prefs"):
                for kind in self.options["logging_prefs"]:
                    driver.get_log(kind)  # read, so the next test's log starts empty
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
            driver.execute_cdp_cmd("Network.clearBrowserCache", {})
            driver.set_window_size(600, 1300)
            driver.implicitly_wait(0)
        except Exception:
            self.quit()

    def quit(self):
        if self.driver is not None:
            try:
                self.driver.quit()
            finally:
                self.driver = None


@pytest.fixture(scope="session")
def shared_chromium():
    chromium = SharedChromium(javascript=True)
    yield chromium
    chromium.quit()


@pytest.fixture(scope="session")
def shared_chromium_without_javascript():
    chromium = SharedChromium(javascript=False)
    yield chromium
    chromium.quit()


@pytest.fixture
def browser(shared_chromium):
    """Chromium with JavaScript, as new: shared across tests and reset after each."""
    yield Page(shared_chromium.get())
    shared_chromium.reset()


@pytest.fixture
def browser_without_javascript(shared_chromium_without_javascript):
    """Chromium with JavaScript off, as new: shared across tests and reset after each."""
    yield Page(shared_chromium_without_javascript.get())
    shared_chromium_without_javascript.reset()


class Page:
    """What a person sees and does on the sign-up page, in Selenium terms."""

    def __init__(self, driver):
        self.driver = driver
        self.wait = WebDriverWait(driver, WAIT_SECONDS)

    def open(self, url):
        self.driver.get(url)

    def field(self, name):
        return self.driver.find_element(By.NAME, name)

    def type(self, name, text, leave=False):
        """Types key by key, optionally leaving the field with Tab."""
        self.keys(self.field(name), list(text) + ([Keys.TAB] if leave else []))

    def backspace(self, name, times=1):
        self.keys(self.field(name), [Keys.BACKSPACE] * times)

    def keys(self, element, keys):
        """One WebDriver call per key, so each reaches the page as its own key press (the
        round trip paces them like quick typing; Chrome keeps the caret at the end)."""
        for key in keys:
            element.send_keys(key)

    def state(self, requirement):
        return self.driver.find_element(
            By.CSS_SELECTOR, f'[data-requirement="{requirement}"]').get_attribute("data-state")

    def states(self):
        return {el.get_attribute("data-requirement"): el.get_attribute("data-state")
                for el in self.driver.find_elements(By.CSS_SELECTOR, "[data-requirement]")}

    def message(self, field):
        return self.driver.find_element(By.CSS_SELECTOR, f'[data-message="{field}"]').text

    def button(self):
        return self.driver.find_element(By.CSS_SELECTOR, "[data-submit]")

    def button_enabled(self):
        """Ready to sign up: never `disabled`; the script marks a form that is not ready
        with aria-disabled="true" (the button stays focusable and lists what is missing)."""
        button = self.button()
        return button.get_dom_attribute("disabled") is None and button.get_dom_attribute("aria-disabled") != "true"

    def submit_enabled(self):
        """The form's data-submit-enabled: the server's latest submit.enabled ("true"/"false")."""
        return self.driver.find_element(By.CSS_SELECTOR, "form[data-signup]").get_dom_attribute("data-submit-enabled")

    def submit_as_is(self):
        """Posts the plain form whatever the live checklist says, as a person whose event
        stream dropped can (the script lets every submit through then)."""
        self.driver.execute_script(
            "HTMLFormElement.prototype.submit.call(document.querySelector('form[data-signup]'))")

    def score(self):
        return int(self.driver.find_element(By.CSS_SELECTOR, "[data-strength]").get_attribute("data-score"))

    def until(self, condition, what):
        """Waits for a condition on the page; fails with `what` when it does not come."""
        return self.wait.until(lambda _: condition(), message=what)

    def until_state(self, requirement, state):
        self.until(lambda: self.state(requirement) == state, f"{requirement} becomes {state}")

    def until_live(self):
        """The page is loaded (its requirements are in the served HTML); the script marks the
        button aria-disabled until a snapshot says the form is ready."""
        self.until(lambda: self.driver.execute_script(
            "return document.querySelector('[data-requirement]') !== null"), "page loaded")

    def screenshot(self, name):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))

    def fill_valid(self, username, password=STRONG_PASSWORD):
        self.type("username", username, leave=True)
        self.type("email", f"{username}@example.com", leave=True)
        self.type("password", password, leave=True)
        self.type("confirm", password, leave=True)


def loopback_exchange(port, address, method, path, form=None, host=None, cookie=None):
    """One request to the server on `port` from the loopback source address `address`
    (127.0.X.Y: a person of their own for the per-address limits), as a same-site page would
    send it; `host` names the site another way (e.g. "localhost:PORT", in Host and Origin).
    Returns (status, the headers as sent, in order, body text)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(address, 0))
    site = host or f"127.0.0.1:{port}"
    headers = {"Origin": f"http://{site}", "Host": site}
    if cookie:
        headers["Cookie"] = cookie
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        return response.status, response.getheaders(), text
    finally:
        connection.close()


def loopback_request(port, address, method, path, form=None, host=None, cookie=None):
    """`loopback_exchange` with the headers as a dict of lower-case names (a repeated header
    keeps its last value)."""
    status, headers, text = loopback_exchange(port, address, method, path, form, host, cookie)
    return status, {k.lower(): v for k, v in headers}, text


class Person:
    """One person without a browser, at a loopback address of their own (127.0.X.Y, so the
    per-address limits stay on), speaking HTTP as the page's script does: their own cookies,
    a form (`open_form`), edits with a sequence number per field, an event stream folded into
    the checklist's state (`requirements`, `messages`, `suggestions`), a sign-up and its proof."""

    WAIT = 10  # seconds any one answer may take, at most

    def __init__(self, port, address):
        self.port, self.address = port, address
        self.cookies = {}
        self.token = self.page = None
        self.seq = {}
        self.events = []          # (name, data) in order of arrival
        self.arrivals = []        # time.monotonic() of each event, in the same order
        self.requirements, self.messages, self.suggestions = {}, {}, {}
        self.changed = threading.Condition()
        self.stream = None

    def request(self, method, path, form=None):
        """One request as a same-site page sends it, with this person's cookies (and keeping
        the ones the answer sets). Returns (status, headers with lower-case names, body)."""
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        status, headers, text = loopback_exchange(self.port, self.address, method, path, form, cookie=cookie or None)
        for name, value in headers:
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        return status, {k.lower(): v for k, v in headers}, text

    def open_form(self, lang=None):
        """GET / (in `lang`): the page and its form token. Returns self."""
        status, _, page = self.request("GET", "/" + (f"?lang={lang}" if lang else ""))
        assert status == 200, status
        self.page = page
        self.token = re.search(r'name="token" value="([^"]+)"', page).group(1)
        return self

    def edit(self, field, value, touched=False):
        """Posts an edit as the page does; returns its rev."""
        self.seq[field] = self.seq.get(field, 0) + 1
        form = {"token": self.token, "field": field, "value": value, "seq": self.seq[field]}
        if touched:
            form["touched"] = "1"
        status, headers, body = self.request("POST", f"/fields?token={self.token}", form)
        assert status == 202, (status, body)
        return int(headers["x-rev"])

    def sign_up(self, username, address=None, password=STRONG_PASSWORD, **extra):
        """Submits the open form (opening one first if there is none); the address defaults
        to username@example.org."""
        if self.token is None:
            self.open_form()
        form = {"token": self.token, "username": username, "email": address or f"{username}@example.org",
                "password": password, "confirm": password, **extra}
        return self.request("POST", "/signup", form)

    def verify(self, code):
        """Proves the address with the mailed code."""
        return self.request("POST", "/verify", {"token": self.token, "code": code})

    # The event stream

    def _connect(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.WAIT,
                                                source_address=(self.address, 0))
        connection.request("GET", f"/events?token={self.token}")
        response = connection.getresponse()
        assert response.status == 200, response.status
        return connection, response

    @staticmethod
    def _next_event(response):
        """(name, data) of the next event, or None when the stream ended."""
        name, data = None, None
        while True:
            line = response.readline()
            if not line:
                return None
            line = line.decode().rstrip("\r\n")
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: "):])
            elif line == "" and name:
                return name, data

    def open_stream(self):
        """Opens the form's event stream (and the form, if none is open); returns once its
        snapshot has come. Returns self."""
        if self.token is None:
            self.open_form()
        self.stream, response = self._connect()
        self.stream.sock.settimeout(None)  # a quiet stream is no error; close() ends the reader
        threading.Thread(target=self._read, args=(response,), daemon=True).start()
        self.until(lambda: self.events and self.events[0][0] == "snapshot", "the snapshot")
        return self

    def _read(self, response):
        while True:
            try:
                event = self._next_event(response)
            except Exception:  # the stream was closed under the reader (close(), the server gone)
                event = None
            with self.changed:
                if event is None:
                    self.changed.notify_all()
                    return
                name, data = event
                self.events.append(event)
                self.arrivals.append(time.monotonic())
                if name == "snapshot":
                    self.requirements.update(data["requirements"])
                    self.messages.update(data["messages"])
                    self.suggestions = dict(data.get("suggestions", {}))
                elif name == "requirement":
                    self.requirements[data["id"]] = data["state"]
                elif name == "message":
                    self.messages[data["field"]] = data["text"]
                elif name == "suggestion":
                    if data["value"]:
                        self.suggestions[data["field"]] = data["value"]
                    else:
                        self.suggestions.pop(data["field"], None)
                self.changed.notify_all()

    def until(self, condition, what, timeout=None):
        """Waits (bounded) for a condition on what the stream said so far."""
        with self.changed:
            assert self.changed.wait_for(condition, timeout or self.WAIT), \
                f"{self.address}: {what} never came; events: {self.events[-12:]}"

    def until_state(self, requirement, state, timeout=None):
        self.until(lambda: self.requirements.get(requirement) == state, f"{requirement} {state}", timeout)

    def states_of(self, requirement, since=0):
        """The (state, rev) of every `requirement` event from the `since`-th event on."""
        with self.changed:
            return [(data["state"], data["rev"]) for name, data in self.events[since:]
                    if name == "requirement" and data["id"] == requirement]

    def fresh_snapshot(self, at_least_rev=0):
        """The snapshot a new connection gets, once it reflects the edit `at_least_rev`."""
        found = {}

        def take():
            connection, response = self._connect()
            try:
                name, data = self._next_event(response)
            finally:
                connection.close()
            assert name == "snapshot", name
            found["snapshot"] = data
            return data["rev"] >= at_least_rev
        assert wait_for(take, self.WAIT, interval=0.05), f"no snapshot at rev {at_least_rev}: {found}"
        return found["snapshot"]

    def close(self):
        # shutdown first: a plain close leaves the socket open while the reader thread still
        # waits in recv on it, and the server never hears the FIN.
        if self.stream and self.stream.sock:
            try:
                self.stream.sock.shutdown(2)
            except OSError:
                pass
            self.stream.close()


def metric(server, name, **labels):
    """The sum of the samples of `name` on /metrics that carry these labels (0 when none)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        if match and match.group(1) == name:
            found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
            if all(found.get(key) == value for key, value in labels.items()):
                total += float(match.group(3))
    return total
