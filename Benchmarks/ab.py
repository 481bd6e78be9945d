#!/usr/bin/env python3
"""A/B of LiveSignup builds in one run: the standard typing scenario (200 people at 5 keys/s,
native generator, server on CPU 0, load on CPU 1), interleaved run by run (A, B, peer, A, B,
peer, ...), medians at the end. A noisy shared machine makes a figure mean something only
beside the other builds' from the same minutes.

    python3 Benchmarks/ab.py --build before=/tmp/ab/old/signup-server \
        --build after=.build-bench/release/signup-server --peer PEER --floor --runs 5 \
        [--shape connection] [--operator-defaults]

`--floor` adds the protocol with no logic (Benchmarks/loadgen/stub_server.c, built by
`make -C Benchmarks/loadgen`): what the machine and the generator cost by themselves.

The generator always gives each person a loopback address of its own; `--operator-defaults`
keeps LiveSignup's default limits on and its access log at `info`, as `make bench` does.
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import benchlib as bl  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", required=True, help="NAME=BINARY (repeatable)")
    parser.add_argument("--peer", help="the Hummingbird peer's binary")
    parser.add_argument("--floor", action="store_true", help="add the no-logic stub (the floor) to each round")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--window", type=float, default=15.0)
    parser.add_argument("--shape", choices=sorted(bench.SHAPES), default="open",
                        help="open-loop (up to 4 connections a person) or one keep-alive connection a person")
    parser.add_argument("--operator-defaults", action="store_true",
                        help="LiveSignup as operators run it (default limits, access log at info, a loopback "
                             "address per person) instead of limits off at --log-level warning")
    args = parser.parse_args()
    builds = [tuple(entry.split("=", 1)) for entry in args.build]
    if args.peer:
        builds.append(("peer", args.peer))
    if args.floor:
        builds.append(("floor", str(bench.STUB)))
    results = {name: [] for name, _ in builds}
    for run in range(args.runs):
        for name, binary in builds:
            peer = name == "peer"
            ours = ["--log-level", "info"] if args.operator_defaults else bl.LIMITS_OFF
            if name == "floor":
                server = bench.Stub().start()
            else:
                server = bl.Server(binary, extra_args=[] if peer else ours, peer=peer, cpus="0").start()
            try:
                result = bench.typing(server.port, server.pid, 200, args.window, shape=args.shape)
            finally:
                server.stop()
            bench.log(f"run {run + 1} {name}: {bench.summary(result)}")
            results[name].append(result)
    print("| build | runs | CPU per edit, µs (median) | p50 ms | p99 ms | each run, µs |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, rows in results.items():
        cpu = [row.get("server_cpu_us_per_edit") for row in rows]
        p50 = [(row.get("latency_ms") or {}).get("p50") for row in rows]
        p99 = [(row.get("latency_ms") or {}).get("p99") for row in rows]
        print(f"| {name} | {len(rows)} | {statistics.median(cpu):.1f} | {statistics.median(p50):.2f} | "
              f"{statistics.median(p99):.2f} | {', '.join(f'{c:.0f}' for c in cpu)} |")


if __name__ == "__main__":
    main()
