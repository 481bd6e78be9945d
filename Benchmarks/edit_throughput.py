#!/usr/bin/env python3
"""Edit throughput: POST /fields as fast as possible while every session's SSE stream drains.

    python3 Benchmarks/edit_throughput.py .build-bench/release/signup-server [--sessions 50]

Starts the server (fresh temporary database), creates S form sessions, opens one SSE stream
per session (read by this script, which counts every event), then runs wrk with S threads
and S connections (Benchmarks/edits.lua: one token and one in-order seq counter per
connection, `password` alternating between a weak and a strong value so each edit changes
requirements and strength). Reports edits/s, latency percentiles (closed loop), the server's
CPU seconds per edit (/proc/PID/stat), and checks that the streams received every event:
ids without gaps, no stream ended, and each stream's last `rev` equal to its session's
final rev (read back with a stale edit, `seq=0`, which changes nothing).

The last line is `RESULT {json}` for run.sh.
"""

import argparse
import asyncio
import json
import os
import resource
import shutil
import sys
import tempfile
import time

import aiohttp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

LUA_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "edits.lua")


def log(message):
    print(message, flush=True)


async def current_rev(http, base_url, token):
    """The session's rev, without changing anything: a stale edit answers the current rev."""
    body = {"token": token, "field": "password", "value": "", "seq": "0"}
    async with http.post(base_url + "/fields", data=body) as resp:
        payload = await resp.json(content_type=None)
        if resp.status != 202 or payload.get("applied") is not False:
            raise RuntimeError(f"rev probe answered {resp.status} {payload}")
        return payload["rev"]


async def run_wrk(args, url, tokens_file, seq_base, duration):
    command = [args.wrk, "-t", str(args.sessions), "-c", str(args.sessions), "-d", f"{duration}s",
               "--timeout", "5s", "--latency", "-s", LUA_SCRIPT, url, "--", tokens_file, str(seq_base)]
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=duration + 30)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise RuntimeError("wrk did not finish in time")
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = out.decode()
    if proc.returncode != 0:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {err.decode()}\n{text}")
    line = next((l for l in text.splitlines() if l.startswith("JSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no JSON line:\n{text}\n{err.decode()}")
    report = json.loads(line[5:])
    report["wrk_cpu_s"] = (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
    report["wrk_text"] = text
    return report


async def run(args):
    server = bl.Server(args.binary, extra_args=bl.LIMITS_OFF).start()
    pid = server.pid
    result = {"sessions": args.sessions, "duration_s": args.duration}
    tasks = []
    streams_http = None
    tmpdir = tempfile.mkdtemp(prefix="livesignup-wrk-")
    try:
        log(f"server pid {pid} on {server.base_url}")
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30),
                                     connector=aiohttp.TCPConnector(limit=16))
        tokens = await bl.create_sessions(http, server.base_url, args.sessions)
        tokens_file = os.path.join(tmpdir, "tokens.txt")
        with open(tokens_file, "w") as f:
            f.write("\n".join(tokens) + "\n")

        streams_http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30))
        stats = [bl.StreamStats(token) for token in tokens]
        tasks = [asyncio.create_task(bl.read_stream(streams_http, server.base_url, s)) for s in stats]
        await asyncio.wait_for(asyncio.gather(*(s.snapshot.wait() for s in stats)), timeout=60)
        bad = [s.error for s in stats if s.error]
        if bad:
            raise RuntimeError(f"{len(bad)} streams failed to open, first: {bad[0]}")
        log(f"{len(tokens)} sessions, {len(stats)} streams open")

        seq_base = 0
        if args.warmup > 0:
            warm = await run_wrk(args, server.base_url + "/fields", tokens_file, seq_base, args.warmup)
            seq_base = warm["last_seq"] + 1
            log(f"warm-up: {warm['requests']} edits in {args.warmup} s")
            await asyncio.sleep(1.0)

        events0 = sum(s.events for s in stats)
        by_name0 = {}
        for s in stats:
            for name, n in s.events_by_name.items():
                by_name0[name] = by_name0.get(name, 0) + n
        rss0 = bl.rss_kib(pid)
        host0 = bl.host_cpu_jiffies()
        self0 = os.times()
        threads0 = bl.thread_cpu_seconds(pid)
        ctx0 = bl.context_switches(pid)
        cpu0 = bl.cpu_seconds(pid)
        report = await run_wrk(args, server.base_url + "/fields", tokens_file, seq_base, args.duration)
        cpu1 = bl.cpu_seconds(pid)
        ctx1 = bl.context_switches(pid)
        threads1 = bl.thread_cpu_seconds(pid)
        self1 = os.times()
        host1 = bl.host_cpu_jiffies()
        rss1 = bl.rss_kib(pid)
        events_during = sum(s.events for s in stats) - events0
        wall = report["duration_us"] / 1e6

        # Every stream must catch up with its session's final rev.
        catch_up_started = time.monotonic()
        revs = await asyncio.gather(*(current_rev(http, server.base_url, t) for t in tokens))
        deadline = time.monotonic() + args.catch_up_timeout
        while time.monotonic() < deadline:
            if all(s.max_rev >= rev or s.ended or s.error for s, rev in zip(stats, revs)):
                break
            await asyncio.sleep(0.05)
        catch_up_s = time.monotonic() - catch_up_started
        behind = sum(1 for s, rev in zip(stats, revs) if s.max_rev < rev)
        gaps = sum(s.id_gaps for s in stats)
        ended = sum(1 for s in stats if s.ended)
        stream_errors = [s.error for s in stats if s.error]
        events_total = sum(s.events for s in stats) - events0
        by_name = {}
        for s in stats:
            for name, n in s.events_by_name.items():
                by_name[name] = by_name.get(name, 0) + n
        by_name = {name: n - by_name0.get(name, 0) for name, n in by_name.items()}
        await http.close()

        edits = report["requests"]
        cpu_s = cpu1 - cpu0
        result.update({
            "edits": edits,
            "edits_per_s": round(edits / wall, 1),
            "applied": report["applied"],
            "stale": report["stale"],
            "non_202": report["non_202"],
            "socket_errors": report["errors"],
            "latency_ms": {k: round(v / 1000, 2) for k, v in report["latency_us"].items()},
            "server_cpu_s": round(cpu_s, 2),
            "server_cpu_percent": round(cpu_s / wall * 100, 1),
            "server_cpu_us_per_edit": round(cpu_s / max(1, edits) * 1e6, 1),
            "wrk_cpu_percent": round(report["wrk_cpu_s"] / wall * 100, 1),
            "client_cpu_percent": round(((self1.user + self1.system) - (self0.user + self0.system)) / wall * 100, 1),
            "host_busy_percent": round(bl.host_busy_percent(host0, host1), 1),
            "ctx_switches": bl.context_switch_delta(ctx0, ctx1),
            "busiest_threads": bl.thread_cpu_delta(threads0, threads1),
            "rss_before_mib": round(rss0 / 1024, 1),
            "rss_after_mib": round(rss1 / 1024, 1),
            "events_during_load": events_during,
            "events_total": events_total,
            "events_per_edit": round(events_total / max(1, report["applied"]), 2),
            "events_by_name": by_name,
            "streams_behind": behind,
            "id_gaps": gaps,
            "streams_ended": ended,
            "stream_errors": len(stream_errors),
            "catch_up_s": round(catch_up_s, 2),
        })
        log(report["wrk_text"].rstrip())
        log(f"edits: {edits} in {wall:.1f} s = {edits / wall:.0f}/s ({report['applied']} applied, "
            f"{report['stale']} stale, {report['non_202']} non-202, socket errors {report['errors']})")
        lat = result["latency_ms"]
        log(f"latency (closed loop, {args.sessions} connections): p50 {lat['p50']} ms, p90 {lat['p90']} ms, "
            f"p99 {lat['p99']} ms, max {lat['max']} ms")
        log(f"server CPU {cpu_s:.2f} s = {result['server_cpu_percent']}% of one core, "
            f"{result['server_cpu_us_per_edit']} µs per edit; wrk {result['wrk_cpu_percent']}%, "
            f"SSE reader (this script) {result['client_cpu_percent']}%, whole host "
            f"{result['host_busy_percent']}% of one core; context switches {result['ctx_switches']}")
        log(f"  busiest server threads: {result['busiest_threads']}")
        log(f"events: {events_total} received ({result['events_per_edit']} per applied edit) {by_name}; "
            f"{behind} streams behind their session's rev, {gaps} id gaps, {ended} streams ended by the "
            f"server, {len(stream_errors)} stream errors; caught up in {catch_up_s:.2f} s")
        log(f"RSS {rss0 / 1024:.1f} MiB before, {rss1 / 1024:.1f} MiB after the load")
        problems = []
        if behind or gaps or ended or stream_errors:
            problems.append("events lost or streams dropped")
        if report["non_202"] or any(report["errors"].values()):
            problems.append("failed requests")
        if report["stale"]:
            problems.append("stale edits (seq out of order)")
        if problems:
            result["error"] = "; ".join(problems)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if streams_http is not None:
            await streams_http.close()
        code, seconds = server.stop()
        shutil.rmtree(tmpdir, ignore_errors=True)
        result["exit_code"] = code
        result["stop_s"] = round(seconds, 2)
        log(f"server stopped with exit code {code} in {seconds:.2f} s")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", help="path to the signup-server binary")
    parser.add_argument("--sessions", type=int, default=50, help="sessions = streams = wrk connections")
    parser.add_argument("--duration", type=int, default=10, help="seconds of load")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of warm-up load (0: none)")
    parser.add_argument("--catch-up-timeout", type=float, default=15.0)
    parser.add_argument("--wrk", default=shutil.which("wrk") or "wrk")
    args = parser.parse_args()
    bl.exit_cleanly_on_sigterm()
    result = asyncio.run(run(args))
    print("RESULT " + json.dumps(result), flush=True)
    sys.exit(0 if "error" not in result and result.get("exit_code") == 0 else 1)


if __name__ == "__main__":
    main()
