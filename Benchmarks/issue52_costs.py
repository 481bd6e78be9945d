#!/usr/bin/env python3
"""Issue 52's two measured attacks, on one or more server binaries, interleaved.

1. A signed-in page that costs a core: one account signed in 301 times, then ten
   `/account/events` streams open on it; the server's CPU is read from /proc while nobody
   does anything (the review saw half a core).
2. Unauthenticated work without a limit: four keep-alive connections send `POST /signout`
   with forty random session ids in the Cookie header each, as fast as they are answered;
   the answers by status, the rate, and the server's CPU per request.

    python3 Benchmarks/issue52_costs.py --server old=/path/to/old/signup-server \\
        --server new=.build/debug/signup-server --rounds 3

Figures mean something only beside each other from one run on one machine: quote medians.
"""

import argparse
import http.client
import secrets
import statistics
import sys
import threading
import time
import urllib.parse

import benchlib
from pathlib import Path

PASSWORD = "Idle-Streams-Cost-1952"


def checkout_of(binary):
    """The checkout a binary was built in: its Public/ and Templates/ go with it (an older
    binary refuses a newer catalog's texts)."""
    return next(p for p in Path(binary).resolve().parents if (p / "Templates").is_dir())


def request(port, method, path, body=None, headers=None, connection=None):
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    all_headers = {"Host": f"127.0.0.1:{port}"}
    all_headers.update(headers or {})
    if body is not None:
        all_headers["Content-Type"] = "application/x-www-form-urlencoded"
    connection.request(method, path, body=body, headers=all_headers)
    response = connection.getresponse()
    data = response.read()
    result = (response.status, response.getheaders(), data.decode(errors="replace"))
    if own:
        connection.close()
    return result


def cookie_of(headers, name="livesignup_auth"):
    for header, value in headers:
        if header.lower() == "set-cookie" and value.startswith(name + "=") and not value.startswith(name + "=;"):
            return value.split(";")[0]
    return None


def make_account(port, username):
    status, _, page = request(port, "GET", "/")
    token = benchlib.TOKEN_RE.search(page).group(1)
    body = urllib.parse.urlencode({"token": token, "username": username, "email": f"{username}@example.org",
                                   "password": PASSWORD, "confirm": PASSWORD})
    status, _, answer = request(port, "POST", "/signup", body)
    assert status == 303, (status, answer[:400])


def sign_in(port, username):
    body = urllib.parse.urlencode({"username": username, "password": PASSWORD})
    status, headers, answer = request(port, "POST", "/signin", body)
    assert status == 303, (status, answer[:400])
    return cookie_of(headers)


def idle_account_page(binary, seconds):
    """CPU share of a server holding ten idle account-page streams of one account signed in
    301 times."""
    server = benchlib.Server(binary, cwd=checkout_of(binary), extra_args=["--argon2-preset", "owasp-minimum"]).start()
    try:
        make_account(server.port, "busy")
        cookies = [sign_in(server.port, "busy") for _ in range(301)]
        streams = []
        for cookie in cookies[-10:]:
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            connection.request("GET", "/account/events", headers={"Host": f"127.0.0.1:{server.port}", "Cookie": cookie})
            response = connection.getresponse()
            assert response.status == 200, response.status
            # Drain in the background so the server never blocks on a full socket.
            threading.Thread(target=lambda r=response: _drain(r), daemon=True).start()
            streams.append(connection)
        time.sleep(3)  # warm-up: every stream has had its first payloads (a measurement, not a test)
        before = benchlib.cpu_seconds(server.pid)
        time.sleep(seconds)
        after = benchlib.cpu_seconds(server.pid)
        for connection in streams:
            connection.close()
        return (after - before) / seconds
    finally:
        server.stop()


def _drain(response):
    try:
        while response.read(1024):
            pass
    except Exception:
        pass


def signout_flood(binary, seconds, ids=40):
    """Statuses, requests a second, and server CPU microseconds per request, for four
    connections sending sign-outs with forty random session ids each."""
    server = benchlib.Server(binary, cwd=checkout_of(binary)).start()
    counts = {}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker():
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        while time.monotonic() < stop:
            cookie = "; ".join(f"livesignup_auth={secrets.token_urlsafe(32)}" for _ in range(ids))
            try:
                status, _, _ = request(server.port, "POST", "/signout", "", {"Cookie": cookie}, connection)
            except (http.client.HTTPException, OSError):
                # Closed without an answer: libmicrohttpd could not fit a refusal's headers
                # into the connection's memory beside a Cookie header this size (see
                # docs/DEVELOPMENT.md). Counted: it is what such a client gets.
                with lock:
                    counts["closed"] = counts.get("closed", 0) + 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                continue
            with lock:
                counts[status] = counts.get(status, 0) + 1
        connection.close()

    try:
        before = benchlib.cpu_seconds(server.pid)
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        after = benchlib.cpu_seconds(server.pid)
        total = sum(counts.values())
        # Per request sent, answered or not: what the flood costs the server.
        return counts, total / seconds, (after - before) / max(total, 1) * 1e6
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--server", action="append", required=True, help="LABEL=PATH of a signup-server binary")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--only", choices=["idle", "flood"], help="one of the two measurements")
    parser.add_argument("--ids", type=int, default=40, help="random session ids in each sign-out's Cookie header")
    arguments = parser.parse_args()
    servers = [entry.split("=", 1) for entry in arguments.server]
    idle = {label: [] for label, _ in servers}
    flood = {label: [] for label, _ in servers}
    for round_number in range(arguments.rounds):
        for label, path in servers:
            if arguments.only != "flood":
                share = idle_account_page(path, arguments.seconds)
                idle[label].append(share)
                print(f"round {round_number + 1} {label}: idle account page {share * 100:.1f} % of a core", flush=True)
            if arguments.only != "idle":
                counts, rate, micros = signout_flood(path, arguments.seconds, arguments.ids)
                flood[label].append((counts, rate, micros))
                print(f"round {round_number + 1} {label}: sign-out flood {rate:.0f} requests/s "
                      f"{dict(sorted(counts.items(), key=str))}, {micros:.0f} µs server CPU each", flush=True)
    for label, _ in servers:
        if idle[label]:
            print(f"{label}: idle account page median {statistics.median(idle[label]) * 100:.1f} % of a core")
        if flood[label]:
            print(f"{label}: sign-out flood median {statistics.median(f[1] for f in flood[label]):.0f} requests/s, "
                  f"{statistics.median(f[2] for f in flood[label]):.0f} µs server CPU per request")


if __name__ == "__main__":
    benchlib.exit_cleanly_on_sigterm()
    sys.exit(main())
