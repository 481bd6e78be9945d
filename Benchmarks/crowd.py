#!/usr/bin/env python3
"""Typing in a crowd: 200 people typing (one keep-alive connection each, 5 keys/s) while many
more sit on the page with their event streams open and quiet, as a sign-up page's visitors do.

    python3 Benchmarks/crowd.py BINARY [--idle 12000] [--peer]

Why a scenario of its own: libmicrohttpd 0.9.75 walks its whole list of suspended
connections on every loop that resumes one, so a server that resumed a stream per event paid,
per edit, for every idle stream open (issue 24, step 17). The plain typing scenarios have
only the typists' 200 streams and cannot show it.

The idle streams come from one address, so LiveSignup runs with its per-address limits off
here (`benchlib.LIMITS_OFF`) and its access log at `info`; the typists still come from a
loopback address each. Server on CPU 0, this script and the generator on CPU 1.
The last line is `RESULT {json}`: the typing generator's result plus `idle_streams`.
"""
import argparse
import asyncio
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aiohttp  # noqa: E402
import bench  # noqa: E402
import benchlib as bl  # noqa: E402


def typing_in_crowd(binary, idle, peer=False, window=10.0):
    """Starts the server, opens `idle` quiet streams, runs the typing generator beside them.
    This process (which holds the streams) runs on CPU 1 meanwhile, off the server's CPU."""
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {1})
    try:
        return _typing_in_crowd(binary, idle, peer, window)
    finally:
        os.sched_setaffinity(0, affinity)


def _typing_in_crowd(binary, idle, peer, window):
    extra = [] if peer else bl.LIMITS_OFF + ["--log-level", "info"]
    server = bl.Server(binary, extra_args=extra, peer=peer, cpus="0").start()
    ready, stop = threading.Event(), threading.Event()
    opened = {"streams": 0, "error": None}

    async def hold_streams():
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16),
                                             timeout=aiohttp.ClientTimeout(total=60)) as http:
                tokens = await bl.create_sessions(http, server.base_url, idle) if idle else []
            streams_http = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30))
            stats = [bl.StreamStats(token) for token in tokens]
            tasks = [asyncio.create_task(bl.read_stream(streams_http, server.base_url, s)) for s in stats]
            try:
                if stats:
                    await asyncio.wait_for(asyncio.gather(*(s.snapshot.wait() for s in stats)), timeout=180)
            except asyncio.TimeoutError:
                pass
            opened["streams"] = sum(1 for s in stats if s.snapshot.is_set() and s.error is None)
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.2)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await streams_http.close()
        except Exception as error:  # reported in the result, never hangs the caller
            opened["error"] = repr(error)
            ready.set()

    holder = threading.Thread(target=lambda: asyncio.run(hold_streams()), daemon=True)
    holder.start()
    try:
        ready.wait(400)
        result = bench.typing(server.port, server.pid, 200, window, shape="connection")
    finally:
        stop.set()
        holder.join(30)
        server.stop()
    result["idle_streams"] = opened["streams"]
    if opened["error"]:
        result["error"] = opened["error"]
    elif opened["streams"] != idle:
        result["error"] = f"only {opened['streams']}/{idle} idle streams opened"
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--idle", type=int, default=12000, help="quiet streams open beside the typists")
    parser.add_argument("--peer", action="store_true", help="the binary is the Hummingbird peer")
    parser.add_argument("--window", type=float, default=10.0)
    args = parser.parse_args()
    result = typing_in_crowd(args.binary, args.idle, peer=args.peer, window=args.window)
    print(f"{'peer' if args.peer else 'LiveSignup'} beside {result['idle_streams']} idle streams: "
          f"{bench.summary(result)}", file=sys.stderr)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
