#!/usr/bin/env python3
"""`make bench`: issue 11's standard scenarios, LiveSignup beside the Hummingbird peer.

    python3 Benchmarks/bench.py BINARY [--peer PEER_BINARY] [--runs 2] [--write-readme]

Scenarios, each run RUNS times, alternating LiveSignup and the peer (A, B, A, B), every
server pinned to CPU 0 and every load generator to CPU 1:

1. typing: 200 people typing at 5 keys/s (about 1,000 edits/s) through the native generator
   (Benchmarks/loadgen), open-loop (up to 4 connections a person): server CPU per edit,
   p50/p99 edit→event, events per edit; LiveSignup, the peer and the no-logic floor.
1b. connection: the same with one keep-alive connection a person (a browser's shape).
2. saturation: the highest offered rate (people × 5 keys/s) the server sustains on one core
   with p99 edit→event ≤ 50 ms and at least 97 % of the offered edits answered, in both shapes.

Every simulated person comes from a loopback address of its own (127.0.X.Y) and LiveSignup
runs with its default limits on: the configuration operators run.
3. idle: 2,000 and 10,000 sessions with their event streams open: memory per session
   (RSS growth from a started server / sessions), server CPU while idle.
4. streams: 19,000 idle streams in one process: how many connect, server CPU.
4b. crowd: the connection shape's 200 typists beside 12,000 idle streams (Benchmarks/crowd.py;
   LiveSignup's per-address limits off, since the idle streams share one address).
5. instances (LiveSignup only): on PostgreSQL, one instance direct, one through nginx, two
   through nginx with the shipped routing (Benchmarks/instances.py): highest edits/s and p99.
6. generator ceiling: the generator against a no-logic stub of the protocol, so a
   saturation figure can be trusted only below it.

Prints one markdown table (medians, ratios LiveSignup / peer) and, with --write-readme,
puts it into Benchmarks/README.md between the `bench:begin` / `bench:end` markers with the
commit, the machine and the command.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

HERE = Path(__file__).resolve().parent
LOADGEN = HERE / "loadgen" / "build" / "typing_load"
STUB = HERE / "loadgen" / "build" / "stub_server"
KEYS_PER_SECOND = 5
P99_BOUND_MS = 50.0


def log(text):
    print(text, file=sys.stderr, flush=True)


def result_line(output):
    for line in reversed(output.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("no RESULT line in:\n" + output[-2000:])


# The two load shapes (issue 24): `open` is issue 11's open-loop shape (up to 4 keep-alive
# POST connections per person, a keystroke never waits); `connection` is a browser's: one
# keep-alive connection per person, a keystroke waits while it is busy. Both come from a
# loopback address per person (127.0.X.Y), so LiveSignup runs with its default limits on,
# as operators run it.
SHAPES = {"open": 4, "connection": 1}


def typing(port, pid, people, window, warmup=4.0, rate=KEYS_PER_SECOND, token_in_url=False, shape="open"):
    """The native generator against a running server; returns its RESULT. `token_in_url`:
    edits go to /fields?token=… as the page sends them (needed behind nginx with several
    instances; the peer reads the body only)."""
    command = ["taskset", "-c", "1", str(LOADGEN), "--port", str(port), "--people", str(people),
               "--rate", str(rate), "--warmup", str(warmup), "--window", str(window),
               "--server-pid", str(pid), "--token-in-url", "1" if token_in_url else "0",
               "--post-connections", str(SHAPES[shape]), "--spread-addresses", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=warmup + window + 90)
    if done.returncode != 0:
        log(done.stderr[-2000:])
    return result_line(done.stdout)


class Stub:
    """The no-logic floor (Benchmarks/loadgen/stub_server.c), pinned to CPU 0."""

    def start(self):
        self.proc = subprocess.Popen(["taskset", "-c", "0", str(STUB), "--port", "0"], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.port = int(line.split("127.0.0.1:")[1].split()[0])
        self.pid = self.proc.pid
        return self

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Servers:
    """Starts LiveSignup (its default limits on), the peer, or the floor, pinned to CPU 0,
    each with a fresh database."""

    def __init__(self, binary, peer_binary):
        self.binaries = {"livesignup": binary, "peer": peer_binary, "floor": STUB}

    @property
    def names(self):
        return [name for name, path in self.binaries.items() if path]

    def start(self, name):
        if name == "floor":
            return Stub().start()
        if name == "peer":
            return bl.Server(self.binaries[name], peer=True, cpus="0").start()
        # The defaults operators run: limits on, and the info level, so one access line per request.
        return bl.Server(self.binaries[name], extra_args=["--log-level", "info"], cpus="0").start()


def run_typing(servers, runs, window, shape):
    """200 people typing at 5 keys/s in `shape`: LiveSignup, the peer and the floor in turn."""
    rows = {name: [] for name in servers.names}
    for run in range(runs):
        for name in servers.names:
            server = servers.start(name)
            try:
                result = typing(server.port, server.pid, 200, window, shape=shape)
            finally:
                server.stop()
            log(f"typing ({shape}) {name} run {run + 1}: {summary(result)}")
            rows[name].append(result)
    return rows


def sustains(result):
    """p99 within the bound, every due keystroke answered (the generator's `offered_per_s`
    counts the keystrokes due in the window; forms pause between them), nothing refused."""
    p99 = (result.get("latency_ms") or {}).get("p99")
    offered = result.get("offered_per_s") or 0
    return (p99 is not None and p99 <= P99_BOUND_MS and result["edits_per_s"] >= 0.97 * offered
            and result.get("errors", 0) == 0 and result.get("non_202", 0) == 0)


def find_saturation(start_server, low_people=200, step=200, window=8.0, limit=6000, token_in_url=False, shape="open"):
    """Raises the number of typists in steps until the bound breaks, then halves the step
    twice around the edge. Returns (highest sustained edits/s, the results tried)."""
    tried = []
    best = 0.0

    def attempt(people):
        server = start_server()
        try:
            result = typing(server.port, server.pid, people, window, warmup=3.0, token_in_url=token_in_url, shape=shape)
        finally:
            server.stop()
        ok = sustains(result)
        tried.append({"people": people, "offered": result.get("offered_per_s"), "achieved": result["edits_per_s"],
                      "p99_ms": (result.get("latency_ms") or {}).get("p99"), "ok": ok})
        log(f"  {people} people ({result.get('offered_per_s')} edits/s due): {summary(result)} -> {'ok' if ok else 'over'}")
        return ok, result["edits_per_s"]

    people = low_people
    while people <= limit:
        ok, achieved = attempt(people)
        if not ok:
            break
        best = max(best, achieved)
        people += step
        step = int(step * 1.5)
    else:
        return best, tried
    # Refine between the last good and the first bad.
    good = people - int(step / 1.5) if best else 0
    bad = people
    for _ in range(2):
        middle = (good + bad) // 2
        if middle <= good or middle >= bad:
            break
        ok, achieved = attempt(middle)
        if ok:
            good, best = middle, max(best, achieved)
        else:
            bad = middle
    return best, tried


def run_saturation(servers, runs, shape):
    rows = {name: [] for name in servers.names if name != "floor"}
    for run in range(runs):
        for name in rows:
            log(f"saturation ({shape}) {name} run {run + 1}")
            best, tried = find_saturation(lambda: servers.start(name), shape=shape)
            rows[name].append({"edits_per_s": best, "tried": tried})
    return rows


INSTANCE_SETUPS = (("one instance, direct", 1, False), ("one instance through nginx", 1, True),
                   ("two instances through nginx", 2, True))


def run_instances(binary, window):
    """Issue 12: LiveSignup on PostgreSQL, direct and behind nginx (Benchmarks/instances.py)."""
    import instances
    cluster = instances.PostgresCluster()
    rows = {}
    try:
        for label, count, through_nginx in INSTANCE_SETUPS:
            def start():
                return instances.Deployment(binary, cluster.database(), count, through_nginx)
            deployment = start()
            try:
                result = typing(deployment.port, deployment.pid, 200, window, token_in_url=True)
            finally:
                deployment.stop()
            log(f"instances, {label}, 200 people: {summary(result)}")
            best, tried = find_saturation(start, token_in_url=True)
            log(f"instances, {label}: highest {best:.0f} edits/s")
            rows[label] = {"typing": result, "saturation": best, "tried": tried}
    finally:
        cluster.stop()
    return rows


# Both servers ping every stream every 15 s (LiveSignup's default `--heartbeat-seconds`, the
# peer's constant). The idle window holds two whole intervals, so its CPU figure is the average
# with the heartbeats in it: a 10 s window read 0.0 % or 3.6 % for the same build, depending
# on whether a round fell inside it.
HEARTBEAT_SECONDS = 15
IDLE_WINDOW_SECONDS = 2 * HEARTBEAT_SECONDS


def run_idle(servers, binary_for, runs, streams, quick=True):
    rows = {name: [] for name in servers.names if name != "floor"}
    for run in range(runs):
        for name in rows:
            command = [sys.executable, str(HERE / "idle_streams.py"), binary_for[name], "--streams", str(streams),
                       "--server-cpus", "0", "--window", str(IDLE_WINDOW_SECONDS), "--quick", "--open-timeout", "120"]
            if name == "peer":
                command.append("--peer")
            done = subprocess.run(["taskset", "-c", "1", *command], capture_output=True, text=True, timeout=600)
            try:
                result = result_line(done.stdout)
            except RuntimeError:
                log(done.stdout[-1500:] + done.stderr[-1500:])
                result = {"error": "idle_streams.py printed no result"}
            log(f"idle {streams} {name} run {run + 1}: {result.get('snapshots')} streams, "
                f"{result.get('rss_per_session_with_stream_kib')} KiB/session, CPU {result.get('cpu_percent')} %"
                + (f", error: {result['error']}" if "error" in result else ""))
            rows[name].append(result)
    return rows


CROWD_IDLE_STREAMS = 12000


def run_crowd(binary_for, runs, window):
    """Typists beside many idle streams (Benchmarks/crowd.py), LiveSignup and the peer in turn."""
    import crowd
    rows = {name: [] for name, binary in binary_for.items() if binary}
    for run in range(runs):
        for name in rows:
            result = crowd.typing_in_crowd(binary_for[name], CROWD_IDLE_STREAMS, peer=name == "peer", window=window)
            log(f"crowd ({result.get('idle_streams')} idle streams) {name} run {run + 1}: {summary(result)}"
                + (f", error: {result['error']}" if "error" in result else ""))
            rows[name].append(result)
    return rows


def run_ceiling(window=8.0, people=1000):
    """The generator against the stub at rising rates (1,000 people typing faster and
    faster: more people would need more descriptors than the limit allows); the highest
    rate it still drives with p99 ≤ 50 ms."""
    tried = []
    best = 0.0
    for rate in (5, 10, 16, 24, 32):
        stub = subprocess.Popen(["taskset", "-c", "0", str(STUB), "--port", "0"], stdout=subprocess.PIPE, text=True)
        try:
            line = stub.stdout.readline()
            port = int(line.split("127.0.0.1:")[1].split()[0])
            result = typing(port, stub.pid, people, window, warmup=3.0, rate=rate)
        finally:
            stub.terminate()
            stub.wait(timeout=10)
        ok = sustains(result)
        tried.append({"people": people, "rate": rate, "offered": result.get("offered_per_s"),
                      "achieved": result["edits_per_s"], "p99_ms": (result.get("latency_ms") or {}).get("p99"),
                      "generator_cpu_percent": result.get("generator_cpu_percent"), "ok": ok})
        log(f"ceiling, {people} people × {rate} keys/s: {summary(result)}")
        if not ok:
            break
        best = result["edits_per_s"]
    return best, tried


def summary(result):
    latency = result.get("latency_ms") or {}
    return (f"{result.get('edits_per_s')} edits/s, {result.get('server_cpu_us_per_edit')} µs/edit "
            f"({result.get('server_kernel_us_per_edit')} in the kernel), "
            f"p50 {latency.get('p50')} / p99 {latency.get('p99')} ms, non-202 {result.get('non_202')}, "
            f"errors {result.get('errors')}, generator CPU {result.get('generator_cpu_percent')} %")


def median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=1):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def ratio(ours, theirs):
    return f"{ours / theirs:.2f}" if ours is not None and theirs else "–"


def table(measures, args, commit, machine):
    lines = [
        f"Commit `{commit}`, {machine}, {time.strftime('%Y-%m-%d')}; `{' '.join(args.command)}`.",
        f"Medians of {args.runs} alternating runs (LiveSignup, peer, floor, LiveSignup, …); servers on CPU 0, "
        "load on CPU 1; LiveSignup with its default limits, each simulated person from its own loopback "
        "address. Floor: `Benchmarks/loadgen/stub_server.c`, the protocol with no logic.",
        "",
        "| measure | LiveSignup | peer | floor | LiveSignup / peer | LiveSignup / floor |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, ours, theirs, floor, digits in measures:
        lines.append(f"| {label} | {fmt(ours, digits)} | {fmt(theirs, digits)} | {fmt(floor, digits)} "
                     f"| {ratio(ours, theirs)} | {ratio(ours, floor)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--peer", default=None, help="the Hummingbird peer's signup-peer binary")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--window", type=float, default=15.0, help="typing window, seconds")
    parser.add_argument("--scenarios", default="ceiling,typing,connection,saturation,idle,streams,crowd,instances")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    args.command = ["python3", "Benchmarks/bench.py", *sys.argv[1:]]
    bl.exit_cleanly_on_sigterm()
    scenarios = set(args.scenarios.split(","))
    servers = Servers(args.binary, args.peer)
    binary_for = {"livesignup": args.binary, "peer": args.peer}
    raw = {}

    raw_path = HERE / "last-bench.json"

    def keep(key, value):
        # Written after every scenario, so a late failure loses nothing measured before it.
        raw[key] = value
        raw_path.write_text(json.dumps(raw, indent=1, default=str))

    if "ceiling" in scenarios:
        keep("ceiling", run_ceiling())
    if "typing" in scenarios:
        keep("typing", run_typing(servers, args.runs, args.window, "open"))
    if "connection" in scenarios:
        keep("connection", run_typing(servers, args.runs, args.window, "connection"))
    if "saturation" in scenarios:
        keep("saturation", run_saturation(servers, args.runs, "open"))
        keep("saturation_connection", run_saturation(servers, args.runs, "connection"))
    if "idle" in scenarios:
        keep("idle2000", run_idle(servers, binary_for, args.runs, 2000))
        keep("idle10000", run_idle(servers, binary_for, args.runs, 10000))
    if "streams" in scenarios:
        keep("streams19000", run_idle(servers, binary_for, 1, 19000))
    if "crowd" in scenarios:
        keep("crowd", run_crowd(binary_for, args.runs, args.window))
    if "instances" in scenarios:
        keep("instances", run_instances(args.binary, args.window))

    def med(key, name, pick):
        rows = raw.get(key, {}).get(name, [])
        return median([pick(row) for row in rows])

    def both(label, key, pick, digits=1):
        return (label, med(key, "livesignup", pick), med(key, "peer", pick), med(key, "floor", pick), digits)

    measures = []
    for key, name in (("typing", "open-loop typing (≤ 4 connections a person)"),
                      ("connection", "typing on one keep-alive connection a person")):
        if key not in raw:
            continue
        measures += [
            both(f"{name}, 200 people × 5 keys/s: edits/s", key, lambda r: r["edits_per_s"], 0),
            both(f"{name}: server CPU per edit, µs", key, lambda r: r.get("server_cpu_us_per_edit")),
            both(f"{name}: of which in the kernel, µs", key, lambda r: r.get("server_kernel_us_per_edit")),
            both(f"{name}: p50 edit→event, ms", key, lambda r: r["latency_ms"]["p50"], 2),
            both(f"{name}: p99 edit→event, ms", key, lambda r: r["latency_ms"]["p99"], 2),
            both(f"{name}: edits that changed nothing visible, %", key,
                 lambda r: 100 * r["edits_without_event"] / max(1, r["edits_without_event"] + r["latency_ms"]["n"])),
            both(f"{name}: errors + non-202", key, lambda r: r.get("errors", 0) + r.get("non_202", 0), 0),
        ]
    for key, name in (("saturation", "open-loop"), ("saturation_connection", "one connection a person")):
        if key in raw:
            measures.append(both(f"{name}: highest edits/s on one core with p99 ≤ {P99_BOUND_MS:.0f} ms", key,
                                 lambda r: r["edits_per_s"], 0))
    for key, count in (("idle2000", 2000), ("idle10000", 10000)):
        if key in raw:
            measures += [
                both(f"{count:,} idle sessions with streams: KiB per session", key,
                     lambda r: r.get("rss_per_session_with_stream_kib")),
                both(f"{count:,} idle sessions: server CPU over {IDLE_WINDOW_SECONDS} s (two heartbeats), % of a core", key, lambda r: r.get("cpu_percent"), 2),
            ]
    if "streams19000" in raw:
        measures += [
            both("19,000 idle streams: connected", "streams19000", lambda r: r.get("snapshots"), 0),
            both(f"19,000 idle streams: server CPU over {IDLE_WINDOW_SECONDS} s (two heartbeats), % of a core", "streams19000", lambda r: r.get("cpu_percent"), 2),
            both("19,000 idle streams: KiB per session", "streams19000",
                 lambda r: r.get("rss_per_session_with_stream_kib")),
        ]
    if "crowd" in raw:
        crowd = f"typing beside {CROWD_IDLE_STREAMS:,} idle streams (one connection a person, limits off)"
        measures += [
            both(f"{crowd}: server CPU per edit, µs", "crowd", lambda r: r.get("server_cpu_us_per_edit")),
            both(f"{crowd}: p50 edit→event, ms", "crowd", lambda r: r["latency_ms"]["p50"], 2),
            both(f"{crowd}: p99 edit→event, ms", "crowd", lambda r: r["latency_ms"]["p99"], 2),
        ]
    for label, _, _ in INSTANCE_SETUPS:
        row = raw.get("instances", {}).get(label)
        if row:
            latency = row["typing"].get("latency_ms") or {}
            measures += [
                (f"PostgreSQL, {label}: highest edits/s with p99 ≤ {P99_BOUND_MS:.0f} ms (all server processes on CPU 0)",
                 row["saturation"], None, None, 0),
                (f"PostgreSQL, {label}: p99 edit→event at ~1,000 edits/s, ms", latency.get("p99"), None, None, 2),
            ]
    if "ceiling" in raw:
        best, _ = raw["ceiling"]
        measures.append(("generator ceiling against the no-logic stub, edits/s (p99 ≤ 50 ms)",
                         None, None, best, 0))

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE.parent).stdout.strip()
    machine = f"{os.cpu_count()} cores, {platform.system()} {platform.release()}"
    markdown = table(measures, args, commit, machine)
    print(markdown)
    log(f"raw results: {raw_path}")
    if args.write_readme:
        readme = HERE / "README.md"
        text = readme.read_text()
        begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
        block = f"{begin}\n{markdown}\n{end}"
        if begin in text and end in text:
            text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
        else:
            text = text.rstrip() + "\n\n## `make bench`: the latest table\n\n" + block + "\n"
        readme.write_text(text)
        log("wrote the table into Benchmarks/README.md")


if __name__ == "__main__":
    main()
