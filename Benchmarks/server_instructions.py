#!/usr/bin/env python3
"""Instructions per edit of the whole server (HTTP, routing, the view model, the access log),
counted by callgrind: a figure that repeats on this noisy machine where seconds do not.

    python3 Benchmarks/server_instructions.py BINARY [--people 10] [--window 20] [--out FILE]

Strips the release binary's debug information (valgrind 3.19 cannot read its DWARF 5), runs
it under `valgrind --tool=callgrind` with `SWIFT_DETERMINISTIC_HASHING=1`, warms it up with
the native load generator (one keep-alive connection a person, loopback address a person),
zeroes the counters, types for `--window` seconds, dumps, and prints the instructions per
answered edit. Compare two builds with the same arguments; read the dump with
`callgrind_annotate --inclusive=yes FILE.1` for where they go.

valgrind crashes in libdispatch's `dispatch_main` (its signal thread's `sigsuspend`), so the
server runs with a preloaded `dispatch_main` that parks the main thread in `pause()`
instead; the signal sources (SIGINT stops the server) work as before.
"""
import argparse
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PRELOAD_SOURCE = "#include <unistd.h>\nvoid dispatch_main(void) { for (;;) pause(); }\n"


def load(port, pid, people, window):
    command = ["taskset", "-c", "1", str(bench.LOADGEN), "--port", str(port), "--people", str(people),
               "--rate", "5", "--warmup", "0", "--window", str(window), "--server-pid", str(pid),
               "--post-connections", "1", "--spread-addresses", "1"]
    return bench.result_line(subprocess.run(command, capture_output=True, text=True, timeout=window + 120).stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--people", type=int, default=10)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--out", default=None, help="callgrind output file (default: in a temporary folder)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="livesignup-callgrind-"))
    binary = Path(args.binary).resolve()
    stripped = work / binary.name
    subprocess.run(["strip", "--strip-debug", "-o", str(stripped), str(binary)], check=True)
    for bundle in binary.parent.glob("*.resources"):  # SwiftPM resources sit beside the binary
        shutil.copytree(bundle, work / bundle.name)
    (work / "nodispatchmain.c").write_text(PRELOAD_SOURCE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(work / "nodispatchmain.so"),
                    str(work / "nodispatchmain.c")], check=True)
    out = Path(args.out) if args.out else work / "callgrind.out"
    env = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1", LD_PRELOAD=str(work / "nodispatchmain.so"))
    server = subprocess.Popen(
        ["taskset", "-c", "0", "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(stripped),
         "--host", "127.0.0.1", "--port", "0", "--database", str(work / "db.sqlite"),
         "--public-directory", "Public", "--templates-directory", "Templates", "--log-level", "info"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=open(work / "stderr.log", "wb"), env=env)
    buffer, port, deadline = b"", None, time.monotonic() + 180
    while port is None and time.monotonic() < deadline and server.poll() is None:
        ready, _, _ = select.select([server.stdout], [], [], 0.5)
        if ready:
            buffer += os.read(server.stdout.fileno(), 4096)
            match = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", buffer)
            port = int(match.group(1)) if match else None
    if port is None:
        server.kill()
        sys.exit(f"the server did not start under valgrind; see {work / 'stderr.log'}")
    try:
        load(port, server.pid, args.people, 8)  # first-use costs (word lists, type caches) out
        subprocess.run(["callgrind_control", "--zero", str(server.pid)], capture_output=True, check=True)
        result = load(port, server.pid, args.people, args.window)
        subprocess.run(["callgrind_control", "--dump=load", str(server.pid)], capture_output=True, check=True)
    finally:
        server.send_signal(2)
        server.wait(timeout=120)
    dump = Path(f"{out}.1")
    totals = subprocess.run(["callgrind_annotate", str(dump)], capture_output=True, text=True).stdout
    total = int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", totals).group(1).replace(",", ""))
    edits = result["answered"]
    print(json.dumps({"instructions": total, "edits": edits, "per_edit": round(total / max(edits, 1)),
                      "errors": result["errors"], "non_202": result["non_202"], "dump": str(dump)}))


if __name__ == "__main__":
    main()
