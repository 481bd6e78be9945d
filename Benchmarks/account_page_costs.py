#!/usr/bin/env python3
"""What the account page costs the server, per render, for builds compared in one run (issue
58 moved its dates from Foundation's DateFormatter to ICU and its sentences to whole catalog
texts with isolated names).

One account signed in `--devices` times; then, per round and per build in turn, `--pages`
GET /account in each language asked for, on one keep-alive connection; the server's CPU
seconds (from /proc) divided by the pages. Builds run one after another inside each round, so
a slow moment of this noisy machine falls on all of them: quote medians over rounds.

    python3 Benchmarks/account_page_costs.py \\
        --server old=/tmp/ab/bin/issue57:/tmp/ab/checkout57 --server new=.build-bench/release/signup-server:. \\
        --rounds 5 --pages 300 --devices 50 --languages en,ar,ja

Each build runs with its own checkout's Public/ and Templates/ (an older binary refuses a
newer catalog's texts).
"""

import argparse
import http.client
import statistics
import urllib.parse

import benchlib
from issue52_costs import request

PASSWORD = "Account-Page-Costs-58"


def prepared(binary, checkout, devices):
    """A server with one account signed in `devices` times; its port and the last cookie."""
    server = benchlib.Server(binary, cwd=checkout, extra_args=["--argon2-preset", "owasp-minimum", "--pages-per-address", "100000/s,burst=100000"]).start()
    _, _, page = request(server.port, "GET", "/")
    token = benchlib.TOKEN_RE.search(page).group(1)
    body = urllib.parse.urlencode({"token": token, "username": "busy_person", "email": "busy@example.org",
                                   "password": PASSWORD, "confirm": PASSWORD})
    status, _, answer = request(server.port, "POST", "/signup", body)
    assert status == 303, (status, answer[:300])
    cookie = None
    for index in range(devices):
        body = urllib.parse.urlencode({"username": "busy_person", "password": PASSWORD})
        # Each sign-in from a browser of its own kind, so the list names different devices.
        agent = f"Mozilla/5.0 (X11; Linux x86_64) Firefox/{100 + index}.0"
        status, headers, answer = request(server.port, "POST", "/signin", body, {"User-Agent": agent})
        assert status == 303, (status, answer[:300])
        cookie = next(v.split(";")[0] for h, v in headers if h.lower() == "set-cookie" and v.startswith("livesignup_auth="))
    return server, cookie


def cost(server, cookie, language, pages):
    """Server CPU microseconds per GET /account in `language`."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    path = "/account" + ("" if language == "en" else f"?lang={language}")
    status, _, page = request(server.port, "GET", path, headers={"Cookie": cookie}, connection=connection)
    assert status == 200 and "data-devices" in page, (status, page[:300])
    before = benchlib.cpu_seconds(server.pid)
    for _ in range(pages):
        status, _, _ = request(server.port, "GET", path, headers={"Cookie": cookie}, connection=connection)
        assert status == 200, status
    after = benchlib.cpu_seconds(server.pid)
    connection.close()
    return (after - before) / pages * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", action="append", required=True, help="name=binary:checkout")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--devices", type=int, default=50)
    parser.add_argument("--languages", default="en,ar,ja")
    arguments = parser.parse_args()
    builds = []
    for spec in arguments.server:
        name, rest = spec.split("=", 1)
        binary, checkout = rest.rsplit(":", 1)
        builds.append((name, binary, checkout))
    languages = arguments.languages.split(",")
    servers = {name: prepared(binary, checkout, arguments.devices) for name, binary, checkout in builds}
    figures = {(name, language): [] for name, _, _ in builds for language in languages}
    try:
        for _ in range(arguments.rounds):
            for language in languages:
                for name, _, _ in builds:
                    server, cookie = servers[name]
                    figures[(name, language)].append(cost(server, cookie, language, arguments.pages))
    finally:
        for server, _ in servers.values():
            server.stop()
    print(f"GET /account with {arguments.devices} devices: server CPU µs per page, median of {arguments.rounds} rounds "
          f"of {arguments.pages} pages")
    first = builds[0][0]
    for language in languages:
        base = statistics.median(figures[(first, language)])
        for name, _, _ in builds:
            median = statistics.median(figures[(name, language)])
            print(f"  {language:3} {name:8} {median:9.0f}  ×{median / base:.2f}  (rounds: "
                  + ", ".join(f"{value:.0f}" for value in figures[(name, language)]) + ")")


if __name__ == "__main__":
    main()
