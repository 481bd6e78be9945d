"""The suite's own guarantees (issue 53): a test server that never says its port, or dies
before it does, fails its test within the bound, named, with its log's tail; it never hangs
the run. No browser and no real server: stand-ins that misbehave on purpose."""
import subprocess
import sys
import time

import pytest

from conftest import port_of


# What a stand-in does once it has misbehaved: wait for a signal (the kill that ends it), not
# for a fixed time.
UNTIL_KILLED = "import signal; signal.pause()"


def stand_in(code):
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_server_that_never_prints_its_port_is_killed_within_the_bound_and_named(tmp_path):
    log = tmp_path / "silent.log"
    log.write_text("opening the database\nwaiting for a lock that never comes\n")
    silent = stand_in(UNTIL_KILLED)
    started = time.monotonic()
    with pytest.raises(AssertionError) as failure:
        port_of(silent, "signup-server --silent", log, timeout=1)
    took = time.monotonic() - started
    message = str(failure.value)
    assert took < 5, f"the bound of 1 s took {took:.1f} s"
    assert silent.poll() is not None, "the silent server was left running"
    assert "signup-server --silent did not start" in message
    assert "printed no port within 1 s and was killed" in message
    assert "waiting for a lock that never comes" in message, "the log's tail is shown"


def test_a_server_that_exits_before_its_port_line_says_how_it_exited(tmp_path):
    log = tmp_path / "refused.log"
    log.write_text("error: --webhook-url must be an http(s) URL\n")
    refused = stand_in("import sys; sys.exit(64)")
    with pytest.raises(AssertionError) as failure:
        port_of(refused, "signup-server --webhook-url ftp://x", log, timeout=10)
    message = str(failure.value)
    assert "exited with 64" in message
    assert "--webhook-url must be an http(s) URL" in message


def test_a_server_that_prints_something_else_first_is_refused_and_stopped(tmp_path):
    chatty = stand_in("print('hello', flush=True); " + UNTIL_KILLED)
    with pytest.raises(AssertionError) as failure:
        port_of(chatty, "signup-server --chatty", tmp_path / "none.log", timeout=5)
    assert "its first line: 'hello\\n'" in str(failure.value)
    assert chatty.poll() is not None, "the server that said something else was left running"


def test_a_server_that_prints_its_port_is_read():
    server = stand_in("print('LiveSignup listening on http://127.0.0.1:43210', flush=True); " + UNTIL_KILLED)
    try:
        assert port_of(server, timeout=5) == 43210
    finally:
        server.kill()
        server.wait(timeout=10)
