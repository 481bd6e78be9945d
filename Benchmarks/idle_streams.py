#!/usr/bin/env python3
"""Idle SSE streams: what N open, quiet event streams cost the server in CPU and memory.

    python3 Benchmarks/idle_streams.py .build-bench/release/signup-server [--streams 1000]

Starts the server (fresh temporary database), creates N form sessions (GET /), opens one
SSE stream per session, waits for every `snapshot`, then samples the server's CPU time
(/proc/PID/stat utime+stime) over a quiet window and its RSS (/proc/PID/status VmRSS).
Then waits for the server's heartbeat (`: ping`, every 15 s) on every stream, closes all
streams, watches the server release the connections, and stops it with SIGTERM.

The last line is `RESULT {json}` for run.sh.
"""

import argparse
import asyncio
import json
import os
import resource
import sys
import time

import aiohttp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def log(message):
    print(message, flush=True)


async def wait_until(predicate, timeout, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(interval)
    return predicate()


async def run(args):
    extra = [] if args.peer else bl.LIMITS_OFF + args.server_arg
    server = bl.Server(args.binary, extra_args=extra, peer=args.peer, cpus=args.server_cpus).start()
    pid = server.pid
    result = {"server": "peer" if args.peer else "livesignup", "streams": args.streams, "window_s": args.window,
              "server_args": args.server_arg}
    tasks = []
    try:
        log(f"server pid {pid} on {server.base_url}")
        await asyncio.sleep(1.0)
        rss_start = bl.rss_kib(pid)

        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout,
                                         connector=aiohttp.TCPConnector(limit=16)) as http:
            started = time.monotonic()
            tokens = await bl.create_sessions(http, server.base_url, args.streams)
            log(f"created {len(tokens)} form sessions in {time.monotonic() - started:.1f} s")

        await asyncio.sleep(args.settle)
        rss_sessions = bl.rss_kib(pid)
        # Reference: the server with sessions but no streams, doing nothing.
        cpu0 = bl.cpu_seconds(pid)
        await asyncio.sleep(args.baseline_window)
        cpu_no_streams = (bl.cpu_seconds(pid) - cpu0) / args.baseline_window * 100
        fds_before = bl.fd_count(pid)

        # One connection per stream; no pool limit.
        streams_http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30))
        stats = [bl.StreamStats(token) for token in tokens]
        started = time.monotonic()
        tasks = [asyncio.create_task(bl.read_stream(streams_http, server.base_url, s)) for s in stats]
        try:
            await asyncio.wait_for(asyncio.gather(*(s.snapshot.wait() for s in stats)),
                                   timeout=args.open_timeout)
        except asyncio.TimeoutError:
            pass
        open_seconds = time.monotonic() - started
        snapshots = sum(1 for s in stats if s.snapshot.is_set() and s.error is None)
        errors = [s.error for s in stats if s.error]
        log(f"opened {snapshots}/{len(stats)} streams with snapshot in {open_seconds:.1f} s"
            + (f"; {len(errors)} errors, first: {errors[0]}" if errors else ""))
        if snapshots != len(stats):
            result["error"] = f"only {snapshots}/{len(stats)} streams got a snapshot"

        await asyncio.sleep(args.settle)
        fds_streams = bl.fd_count(pid)

        # ---- the idle window
        pings_before = sum(s.pings for s in stats)
        bytes_before = sum(s.bytes for s in stats)
        events_before = sum(s.events for s in stats)
        host0 = bl.host_cpu_jiffies()
        self0 = os.times()
        threads0 = bl.thread_cpu_seconds(pid)
        ctx0 = bl.context_switches(pid)
        cpu0 = bl.cpu_seconds(pid)
        t0 = time.monotonic()
        await asyncio.sleep(args.window)
        cpu1 = bl.cpu_seconds(pid)
        elapsed = time.monotonic() - t0
        ctx1 = bl.context_switches(pid)
        threads1 = bl.thread_cpu_seconds(pid)
        self1 = os.times()
        host1 = bl.host_cpu_jiffies()
        rss_streams = bl.rss_kib(pid)

        cpu_percent = (cpu1 - cpu0) / elapsed * 100
        pings_in_window = sum(s.pings for s in stats) - pings_before
        bytes_in_window = sum(s.bytes for s in stats) - bytes_before
        events_in_window = sum(s.events for s in stats) - events_before
        per_stream_kib = (rss_streams - rss_sessions) / max(1, snapshots)
        result.update({
            "open_s": round(open_seconds, 2),
            "snapshots": snapshots,
            "stream_errors": len(errors),
            "cpu_percent_no_streams": round(cpu_no_streams, 2),
            "cpu_percent": round(cpu_percent, 2),
            "cpu_s_window": round(cpu1 - cpu0, 3),
            "ctx_switches_window": bl.context_switch_delta(ctx0, ctx1),
            "pings_in_window": pings_in_window,
            "events_in_window": events_in_window,
            "bytes_in_window": bytes_in_window,
            "client_cpu_percent": round(((self1.user + self1.system) - (self0.user + self0.system)) / elapsed * 100, 1),
            "host_busy_percent": round(bl.host_busy_percent(host0, host1), 1),
            "rss_start_mib": round(rss_start / 1024, 1),
            "rss_sessions_mib": round(rss_sessions / 1024, 1),
            "rss_streams_mib": round(rss_streams / 1024, 1),
            "rss_per_session_kib": round((rss_sessions - rss_start) / max(1, len(tokens)), 1),
            "rss_per_stream_kib": round(per_stream_kib, 1),
            # What issue 11 compares: a page view with its stream open, from a started server.
            "rss_per_session_with_stream_kib": round((rss_streams - rss_start) / max(1, snapshots), 1),
            "threads": bl.thread_count(pid),
            "fds_before_streams": fds_before,
            "fds_with_streams": fds_streams,
            "busiest_threads_window": bl.thread_cpu_delta(threads0, threads1),
        })
        log(f"idle window {elapsed:.1f} s: server CPU {cpu_percent:.2f}% of one core "
            f"({cpu1 - cpu0:.2f} s; {cpu_no_streams:.2f}% before the streams were opened), "
            f"context switches (voluntary, involuntary) {result['ctx_switches_window']}")
        log(f"  during the window: {pings_in_window} pings, {events_in_window} events, "
            f"{bytes_in_window} bytes reached the clients; benchmark client CPU "
            f"{result['client_cpu_percent']}%, whole host {result['host_busy_percent']}% of one core")
        log(f"  busiest server threads: {result['busiest_threads_window']}")
        log(f"RSS: start {rss_start / 1024:.1f} MiB, with {len(tokens)} sessions {rss_sessions / 1024:.1f} MiB "
            f"({result['rss_per_session_kib']} KiB/session), with {snapshots} streams "
            f"{rss_streams / 1024:.1f} MiB ({per_stream_kib:.1f} KiB/stream); "
            f"{result['threads']} threads, fds {fds_before} -> {fds_streams}")

        if args.quick:
            return result

        # ---- heartbeat: every stream must get at least one `: ping`.
        cpu_hb0 = bl.cpu_seconds(pid)
        got_all = await wait_until(lambda: all(s.pings > 0 for s in stats), args.heartbeat_wait)
        cpu_hb1 = bl.cpu_seconds(pid)
        with_ping = sum(1 for s in stats if s.pings > 0)
        first_pings = [s.ping_times[0] for s in stats if s.ping_times]
        spread = (max(first_pings) - min(first_pings)) if first_pings else None
        result.update({"heartbeat_ok": got_all, "streams_with_ping": with_ping,
                       "heartbeat_spread_s": round(spread, 3) if spread is not None else None})
        log(f"heartbeat: {with_ping}/{len(stats)} streams got `: ping`"
            + (f", first ping of each stream spread over {spread * 1000:.0f} ms" if spread is not None else "")
            + f"; server CPU while waiting {cpu_hb1 - cpu_hb0:.2f} s")
        if not got_all:
            result["error"] = result.get("error") or "heartbeat missing on some streams"
        ended = sum(1 for s in stats if s.ended)
        result["streams_ended_by_server"] = ended
        if ended:
            log(f"WARNING: the server ended {ended} streams while idle")

        # ---- close every stream from the client side and watch the server let go.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await streams_http.close()
        closed_at = time.monotonic()
        cpu_c0 = bl.cpu_seconds(pid)
        released = await wait_until(lambda: bl.fd_count(pid) <= fds_before + 5, args.release_wait, 0.25)
        release_s = time.monotonic() - closed_at
        cpu_after_close = (bl.cpu_seconds(pid) - cpu_c0) / max(0.001, release_s) * 100
        await asyncio.sleep(1.0)
        rss_released = bl.rss_kib(pid)
        result.update({"fds_released": released, "fds_release_s": round(release_s, 1),
                       "fds_after_close": bl.fd_count(pid),
                       "rss_after_close_mib": round(rss_released / 1024, 1)})
        log(f"after the clients closed: server fds {result['fds_after_close']} "
            f"({'back to baseline' if released else 'NOT back to baseline'} after {release_s:.1f} s; "
            f"each heartbeat closes the streams whose client hung up), "
            f"server CPU {cpu_after_close:.2f}% meanwhile, RSS {rss_released / 1024:.1f} MiB")
    finally:
        for task in tasks:
            task.cancel()
        code, seconds = server.stop()
        result["exit_code"] = code
        result["stop_s"] = round(seconds, 2)
        log(f"server stopped with exit code {code} in {seconds:.2f} s")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", help="path to the signup-server binary (or the peer's, with --peer)")
    parser.add_argument("--peer", action="store_true", help="the binary is the Hummingbird peer")
    parser.add_argument("--server-cpus", default=None, help="pin the server (taskset -c), e.g. 0")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="an extra argument for signup-server, e.g. --server-arg=--connection-memory-kib=8")
    parser.add_argument("--quick", action="store_true",
                        help="stop after the idle window (no heartbeat and release phases)")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--window", type=float, default=10.0, help="idle CPU sampling window, seconds")
    parser.add_argument("--baseline-window", type=float, default=3.0,
                        help="CPU sampling before the streams are opened, seconds")
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--open-timeout", type=float, default=60.0)
    parser.add_argument("--heartbeat-wait", type=float, default=25.0,
                        help="how long to wait for a ping on every stream (the heartbeat is 15 s)")
    parser.add_argument("--release-wait", type=float, default=40.0,
                        help="how long to wait for the server to drop closed connections")
    args = parser.parse_args()
    bl.exit_cleanly_on_sigterm()
    # One socket per stream: 19,000 streams need more than the usual 1,024 descriptors.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    result = asyncio.run(run(args))
    print("RESULT " + json.dumps(result), flush=True)
    # (The peer's exit code on SIGTERM is its own business.)
    ok = "error" not in result and (result.get("exit_code") == 0 or args.peer)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
