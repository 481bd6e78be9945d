"""Fixtures for the real-browser tests: the real server binary on an ephemeral port with a
fresh database, and headless Chromium driven by Selenium (Debian's chromium-driver).

LIVESIGNUP_SERVER names the binary (default: .build/debug/signup-server); screenshots go to
build/browser-screenshots/.
"""
import http.client
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

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(os.environ.get("LIVESIGNUP_SERVER", ROOT / ".build/debug/signup-server"))
SCREENSHOTS = ROOT / "build/browser-screenshots"
STRONG_PASSWORD = "Lantern-Orbit-Quietly-42"
WAIT_SECONDS = 10
# How long a test server may take to print its port (a debug build starts in about a second).
START_SECONDS = 30


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
    """The signup-server process; `restart()` brings it back on the same port and database."""

    def __init__(self, database_dir, extra_args=()):
        self.database = Path(database_dir) / "accounts.sqlite"
        self.port = 0
        self.process = None
        self.extra_args = list(extra_args)
        self.start()

    def start(self):
        self.log_path = Path(self.database).with_suffix(".log")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(SERVER), "--port", str(self.port), "--database", str(self.database), "--seed-demo",
                 "--public-directory", str(ROOT / "Public"), "--templates-directory", str(ROOT / "Templates"),
                 "--availability-debounce-ms", "150", "--log-level", "warning"] + self.extra_args,
                stdout=subprocess.PIPE, stderr=log, text=True)
        self.port = port_of(self.process, "signup-server " + " ".join(self.extra_args), self.log_path)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=10)

    def restart(self):
        self.stop()
        self.start()


def launch(directory, extra_args, log):
    """The server on a free port with a fresh database in `directory`, its log (stderr) going
    to the open file `log`; returns the process and its port. Stop it with terminate()."""
    process = subprocess.Popen(
        [str(SERVER), "--port", "0", "--database", str(Path(directory) / "accounts.sqlite"),
         "--public-directory", str(ROOT / "Public"), "--templates-directory", str(ROOT / "Templates"),
         "--log-level", "warning"] + list(extra_args),
        stdout=subprocess.PIPE, stderr=log, text=True)
    return process, port_of(process, "signup-server " + " ".join(extra_args), getattr(log, "name", None))


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


@pytest.fixture
def browser():
    driver = make_driver(javascript=True)
    yield Page(driver)
    driver.quit()


@pytest.fixture
def browser_without_javascript():
    driver = make_driver(javascript=False)
    yield Page(driver)
    driver.quit()


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


def loopback_request(port, address, method, path, form=None, host=None, cookie=None):
    """One request to the server on `port` from the loopback source address `address`
    (127.0.X.Y: a person of their own for the per-address limits), as a same-site page would
    send it; `host` names the site another way (e.g. "localhost:PORT", in Host and Origin).
    Returns (status, headers with lower-case names, body text)."""
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
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text
    finally:
        connection.close()


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
