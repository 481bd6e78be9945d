"""Issue 59: the sign-up funnel, from real browsers to what the operator reads.

Four people, scripted: one leaves at the password's rules (the tab goes elsewhere), one
finishes, one without JavaScript is refused once and then finishes, one signs up with a
passkey (Chromium's virtual authenticator). `/metrics` (read with prometheus_client's parser,
the reference) and `signup-server funnel` (reading the store the server flushed to) must show
exactly those counts, and the requirement that stopped the first. Then two instances on
one PostgreSQL database: `funnel` sums both.
"""
import json
import re
import subprocess

from prometheus_client.parser import text_string_to_metric_families

from conftest import SERVER, STRONG_PASSWORD, Page, loopback_request, make_driver, wait_for
from test_passkeys import PasskeyPage, add_authenticator, sign_up_with_passkey

# The abandoned form ends when its session is dropped: idle (no stream) for a minute here,
# found by a sweep every 15 s; its stream's end is noticed by the next heartbeat.
ABANDON_SECONDS = 120


def funnel_samples(server):
    """Every livesignup_form_* sample, as {(name, frozenset(labels)): value}, parsed by
    prometheus_client (so the exposition is valid Prometheus text, not just ours)."""
    status, _, body = loopback_request(server.port, "127.0.0.1", "GET", "/metrics")
    assert status == 200
    samples = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name.startswith("livesignup_form_") and sample.name != "livesignup_form_sessions":
                samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def total(samples, name, **labels):
    """The sum of `name`'s samples carrying these labels."""
    return sum(value for (sample, sample_labels), value in samples.items()
               if sample == name and all((key, want) in sample_labels for key, want in labels.items()))


def funnel_report(database, since="24h"):
    result = subprocess.run([str(SERVER), "funnel", "--database", str(database), "--since", since, "--format", "json"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def funnel_table(database):
    result = subprocess.run([str(SERVER), "funnel", "--database", str(database), "--since", "1h"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_four_people_and_exactly_their_counts_in_metrics_and_the_funnel_command(server_with, browser,
                                                                                browser_without_javascript):
    server = server_with(["--session-idle-minutes", "1", "--heartbeat-seconds", "2"])

    # 1. Leaves at the password's rules: a name, a short password, then the tab goes elsewhere.
    leaving = browser
    leaving.open(server.url)
    leaving.until_live()
    leaving.type("username", "leaves_at_rules", leave=True)
    leaving.type("password", "short", leave=True)
    leaving.until_state("username.available", "met")
    leaving.until_state("password.length", "unmet")
    leaving.open("about:blank")

    # 2. Finishes, with JavaScript.
    finishing = browser
    finishing.open(server.url)
    finishing.until_live()
    finishing.fill_valid("finishes_fine")
    finishing.until(lambda: finishing.button_enabled(), "ready to sign up")
    finishing.button().click()
    finishing.until(lambda: "/welcome" in finishing.driver.current_url, "signed up")

    # 3. Without JavaScript: the confirmation differs, refused once; then made.
    plain = browser_without_javascript
    plain.open(server.url)
    plain.type("username", "plain_person")
    plain.type("email", "plain@example.com")
    plain.type("password", STRONG_PASSWORD)
    plain.type("confirm", STRONG_PASSWORD + "x")
    plain.button().click()
    plain.until(lambda: plain.driver.title.startswith("Error: "), "refused once")
    plain.type("password", STRONG_PASSWORD)
    plain.type("confirm", STRONG_PASSWORD)
    plain.button().click()
    plain.until(lambda: "/welcome" in plain.driver.current_url, "signed up without JavaScript")

    # 4. A passkey, on http://localhost (WebAuthn's secure context).
    driver = make_driver()
    try:
        add_authenticator(driver)
        sign_up_with_passkey(PasskeyPage(driver, f"http://localhost:{server.port}"), "keyed_person")
    finally:
        driver.quit()

    # The first form ends once its session is dropped.
    assert wait_for(lambda: total(funnel_samples(server), "livesignup_form_abandoned_total") == 1, ABANDON_SECONDS), \
        server.log()
    samples = funnel_samples(server)
    js, no_js = {"javascript": "yes"}, {"javascript": "no"}
    assert total(samples, "livesignup_form_started_total", **js) == 3
    assert total(samples, "livesignup_form_started_total", **no_js) == 1
    assert total(samples, "livesignup_form_first_edits_total", **js) == 3
    assert total(samples, "livesignup_form_first_edits_total", **no_js) == 1
    assert total(samples, "livesignup_form_completed_total", credential="password", **js) == 1
    assert total(samples, "livesignup_form_completed_total", credential="passkey", **js) == 1
    assert total(samples, "livesignup_form_completed_total", credential="password", **no_js) == 1
    assert total(samples, "livesignup_form_completed_total") == 3
    assert total(samples, "livesignup_form_abandoned_total", credential="password", **js) == 1
    assert total(samples, "livesignup_form_submits_refused_total", reason="invalid", **no_js) == 1
    assert total(samples, "livesignup_form_submits_refused_total") == 1, "nobody else was refused"
    # What stopped the first: its password's rules, not its name.
    stopped = {dict(labels)["requirement"] for (name, labels), value in samples.items()
               if name == "livesignup_form_abandoned_unmet_total" and value > 0}
    assert "password.length" in stopped and not any(r.startswith("username.") for r in stopped), stopped
    # The finished forms' times: one per form and requirement, however often it flipped.
    assert total(samples, "livesignup_form_requirement_met_seconds_count", requirement="username.available") == 3
    assert total(samples, "livesignup_form_completion_seconds_count") == 3
    assert total(samples, "livesignup_form_steps_entered_total", step="proof_of_work") == 3
    assert total(samples, "livesignup_form_steps_finished_total", step="proof_of_work") == 3

    # The same from the store (flushed every 5 s), through the command an operator runs.
    def flushed():
        return funnel_report(server.database)["totals"]
    assert wait_for(lambda: flushed() == {"started": 4, "first_edits": 4, "completed": 3, "abandoned": 1}, 15), flushed()
    report = funnel_report(server.database)
    assert report["refused"] == {"invalid": 1}
    assert report["abandoned_unmet"].get("password.length") == 1
    assert not any(r.startswith("username.") for r in report["abandoned_unmet"]), report["abandoned_unmet"]
    assert report["by"]["javascript"]["no"] == {"started": 1, "completed": 1, "abandoned": 0}
    assert report["by"]["credential"]["passkey"]["completed"] == 1
    assert report["requirements_met"]["username.available"]["forms"] == 3
    assert report["completion"]["forms"] == 3
    table = funnel_table(server.database)
    assert re.search(r"^started\s+4\s+100%$", table, re.M), table
    assert re.search(r"^completed\s+3\s+75%$", table, re.M), table
    assert re.search(r"^password\.length\s+1$", table, re.M), table
    # Counts only: nothing anyone typed, in either.
    status, _, metrics_text = loopback_request(server.port, "127.0.0.1", "GET", "/metrics")
    for typed in ("leaves_at_rules", "finishes_fine", "plain_person", "keyed_person", "example.com", STRONG_PASSWORD):
        assert typed not in metrics_text and typed not in table and typed not in json.dumps(report), typed


def test_bad_since_is_refused_with_a_clear_message(server):
    for since in ("24", "h", "-5m", "1y", "9999999999d"):
        result = subprocess.run([str(SERVER), "funnel", "--database", str(server.database), f"--since={since}"],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode != 0, since
        assert "--since takes a number and a unit" in result.stderr, result.stderr
