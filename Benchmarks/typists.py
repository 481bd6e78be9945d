#!/usr/bin/env python3
"""People typing a sign-up form, the way issue 11 measures LiveSignup against its peer.

N people (default 200) each open the form (`GET /`, token from the page), open its event
stream, then type username, email, password and confirmation at K keys per second (default
5), one `POST /fields` per keystroke carrying the whole value so far, and a blur
(`touched=1`) when leaving each field. When a person finishes, the next form starts. The
schedule is open-loop: each keystroke is sent at its time whatever the server answered, so a
slow server shows up as latency, not as a lower offered rate.

Measured over a steady window after a warm-up:
- server CPU per edit (utime + stime from /proc over the window / edits answered);
- edit → event latency: from writing the POST to receiving the first event whose `rev` is the
  edit's `X-Rev` (edits that change nothing visible send no event and are counted apart; the
  debounced availability answer is not counted as an edit's event);
- edits/s achieved, non-202 answers, errors, and the load generator's own CPU.

Works against LiveSignup and the Hummingbird peer (`--peer`). Pin with `--server-cpus 0`
and run this script under `taskset -c 1` to keep the load off the server's core.
Last line: `RESULT {json}`.
"""
import argparse
import asyncio
import json
import os
import random
import re
import sys
import time
import urllib.parse

import aiohttp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

# Any token (the peer's use base64url characters, ours hex).
TOKEN_RE = re.compile(r'name="token"\s+value="([^"]+)"')


def log(text):
    print(text, file=sys.stderr, flush=True)


def keystrokes(person):
    """The edits of one person: (field, value so far, touched) in typing order."""
    username = f"typist{person:05d}"
    fields = [
        ("username", username),
        ("email", f"{username}@example.com"),
        ("password", f"Lantern-Orbit-{person % 97:02d}x"),
    ]
    fields.append(("confirm", fields[2][1]))
    edits = []
    for name, full in fields:
        for end in range(1, len(full) + 1):
            edits.append((name, full[:end], False))
        edits.append((name, full, True))  # the blur
    return edits


class Totals:
    def __init__(self):
        self.sent = 0
        self.answered = 0
        self.non_202 = 0
        self.errors = 0
        self.error_kinds = {}     # what went wrong, by kind, for the report
        self.latencies = []       # seconds, edits in the window whose event arrived
        self.by_kind = {}         # the same, by the kind of the first event
        self.without_event = 0    # edits in the window that changed nothing visible
        self.in_window = False
        self.window_answered = 0

    def error(self, kind):
        self.errors += 1
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1


async def person(http, base_url, index, rate, totals, stop_at):
    """One person typing forms one after another until `stop_at`."""
    form = index
    while time.monotonic() < stop_at:
        async with http.get(base_url + "/") as resp:
            page = await resp.text()
        match = TOKEN_RE.search(page)
        if not match:
            totals.error(f"GET / {resp.status}: no token")
            await asyncio.sleep(1)
            continue
        token = match.group(1)
        arrivals = {}
        snapshot = asyncio.Event()
        reader = asyncio.create_task(read_events(http, base_url, token, arrivals, snapshot))
        try:
            await asyncio.wait_for(snapshot.wait(), 10)
        except asyncio.TimeoutError:
            totals.error("no snapshot within 10 s")
            reader.cancel()
            continue
        sent_at = {}
        seqs = {}
        tasks = []
        started = time.monotonic()
        for number, (field, value, touched) in enumerate(keystrokes(form)):
            due = started + number / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if time.monotonic() >= stop_at:
                break
            seqs[field] = seqs.get(field, 0) + 1
            body = {"token": token, "field": field, "value": value, "seq": str(seqs[field])}
            if touched:
                body["touched"] = "1"
            tasks.append(asyncio.create_task(post(http, base_url, body, sent_at, totals)))
        await asyncio.gather(*tasks, return_exceptions=True)
        # Give the last events a moment, then score this form's edits.
        await asyncio.sleep(0.5)
        reader.cancel()
        for rev, (sent, counted) in sent_at.items():
            if not counted:
                continue
            if rev in arrivals:
                arrival, kind = arrivals[rev]
                totals.latencies.append(arrival - sent)
                totals.by_kind.setdefault(kind, []).append(arrival - sent)
            else:
                totals.without_event += 1
        form += 100_000


async def post(http, base_url, body, sent_at, totals):
    totals.sent += 1
    counted = totals.in_window
    sent = time.monotonic()
    try:
        async with http.post(base_url + "/fields", data=body) as resp:
            await resp.read()
            totals.answered += 1
            if counted:
                totals.window_answered += 1
            if resp.status != 202:
                totals.non_202 += 1
                return
            rev = int(resp.headers.get("X-Rev", "0"))
            if json.loads(await resp.text()).get("applied", True):
                sent_at[rev] = (sent, counted)
    except Exception as error:
        totals.error(f"POST /fields: {type(error).__name__}: {error}"[:120])


async def read_events(http, base_url, token, arrivals, snapshot):
    try:
        async with http.get(f"{base_url}/events?token={urllib.parse.quote(token)}", timeout=None) as resp:
            data = None
            async for raw in resp.content:
                line = raw.rstrip(b"\r\n")
                if line.startswith(b"data:"):
                    data = line[5:]
                elif line == b"" and data is not None:
                    payload = json.loads(data)
                    rev = payload.get("rev")
                    # The availability answer comes from the debounce timer, not from the edit
                    # whose rev it carries (typically the blur after the last keystroke, 100 ms
                    # before the 300 ms debounce ends): it says nothing about edit latency.
                    timed = payload.get("id") != "username.available"
                    if timed and isinstance(rev, int) and rev not in arrivals:
                        kind = payload.get("id") or payload.get("field") or ("submit" if "enabled" in payload else "strength" if "score" in payload else "snapshot")
                        arrivals[rev] = (time.monotonic(), kind)
                    snapshot.set()
                    data = None
    except asyncio.CancelledError:
        pass
    except Exception:
        snapshot.set()


def percentile(values, fraction):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def run(args):
    extra = [] if args.peer else bl.LIMITS_OFF
    server = bl.Server(args.binary, extra_args=extra, peer=args.peer, cpus=args.server_cpus).start()
    totals = Totals()
    result = {"server": "peer" if args.peer else "livesignup", "people": args.people, "keys_per_s": args.rate}
    try:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as http:
            begin = time.monotonic()
            stop_at = begin + args.warmup + args.window
            people = []
            for index in range(args.people):
                # Spread the starts over a second so the keystrokes do not arrive in step.
                people.append(asyncio.create_task(start_later(random.random(), http, server.base_url, index,
                                                              args.rate, totals, stop_at)))
            await asyncio.sleep(args.warmup)
            totals.in_window = True
            cpu0, self0, t0 = bl.cpu_seconds(server.pid), os.times(), time.monotonic()
            await asyncio.sleep(args.window)
            cpu1, self1, t1 = bl.cpu_seconds(server.pid), os.times(), time.monotonic()
            totals.in_window = False
            rss = bl.rss_kib(server.pid)
            await asyncio.wait(people, timeout=30)
        elapsed = t1 - t0
        edits = totals.window_answered
        latencies_ms = [value * 1000 for value in totals.latencies]
        result.update({
            "window_s": round(elapsed, 1),
            "edits_per_s": round(edits / elapsed, 1),
            "server_cpu_percent": round((cpu1 - cpu0) / elapsed * 100, 1),
            "server_cpu_us_per_edit": round((cpu1 - cpu0) / max(1, edits) * 1e6, 1),
            "latency_ms": {
                "n": len(latencies_ms),
                "p50": round(percentile(latencies_ms, 0.50), 2) if latencies_ms else None,
                "p99": round(percentile(latencies_ms, 0.99), 2) if latencies_ms else None,
                "max": round(max(latencies_ms), 2) if latencies_ms else None,
            },
            "p99_ms_by_first_event": {kind: round(percentile(values, 0.99) * 1000, 2)
                                      for kind, values in sorted(totals.by_kind.items())},
            "edits_without_event": totals.without_event,
            "non_202": totals.non_202,
            "errors": totals.errors,
            "error_kinds": totals.error_kinds,
            "generator_cpu_percent": round(((self1.user + self1.system) - (self0.user + self0.system)) / elapsed * 100, 1),
            "server_rss_mib": round(rss / 1024, 1),
        })
        log(f"{result['server']}: {result['edits_per_s']} edits/s, server CPU {result['server_cpu_percent']} % "
            f"= {result['server_cpu_us_per_edit']} µs/edit, edit→event p50 {result['latency_ms']['p50']} / "
            f"p99 {result['latency_ms']['p99']} ms, {totals.without_event} edits without event, "
            f"non-202 {totals.non_202}, errors {totals.errors}, generator CPU {result['generator_cpu_percent']} %")
    finally:
        code, _ = server.stop()
        result["exit_code"] = code
    print("RESULT " + json.dumps(result), flush=True)


async def start_later(delay, *args):
    await asyncio.sleep(delay)
    await person(*args)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", help="signup-server, or the peer's signup-peer with --peer")
    parser.add_argument("--peer", action="store_true", help="the binary is the Hummingbird peer")
    parser.add_argument("--people", type=int, default=200)
    parser.add_argument("--rate", type=float, default=5.0, help="keys per second per person")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--server-cpus", default=None, help="pin the server (taskset -c), e.g. 0")
    args = parser.parse_args()
    bl.exit_cleanly_on_sigterm()
    try:
        asyncio.run(run(args))
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
