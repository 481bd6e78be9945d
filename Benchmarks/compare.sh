#!/usr/bin/env bash
# Issue 11's side-by-side run: LiveSignup and the Hummingbird peer, alternating A, B, A, B,
# each server pinned to CPU 0 and the load generator to CPU 1, typing at ~1,000 edits/s.
#
#   PEER=../shared/peers/hummingbird/signup-peer/.build/release/signup-peer bash Benchmarks/compare.sh
#   RUNS=3 SKIP_BUILD=1 bash Benchmarks/compare.sh
#
# Without PEER only LiveSignup runs. Needs python3 with aiohttp and taskset (util-linux).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${RUNS:-2}"
PYTHON="$(python3 -c 'import sys; print(sys.executable)')"
"$PYTHON" -c 'import aiohttp' 2>/dev/null || "$PYTHON" -m pip install -q aiohttp
if [[ -z "${SKIP_BUILD:-}" ]]; then
    swift build -c release --scratch-path .build-bench --product signup-server
fi
BIN="$(swift build -c release --scratch-path .build-bench --show-bin-path)/signup-server"
OUT="$(mktemp -d)"; trap 'rm -rf "$OUT"' EXIT
for run in $(seq 1 "$RUNS"); do
    taskset -c 1 timeout -k 10 180 "$PYTHON" Benchmarks/typing.py "$BIN" --server-cpus 0 | tee -a "$OUT/results"
    if [[ -n "${PEER:-}" ]]; then
        taskset -c 1 timeout -k 10 180 "$PYTHON" Benchmarks/typing.py "$PEER" --peer --server-cpus 0 | tee -a "$OUT/results"
    fi
done
"$PYTHON" - "$OUT/results" "$(git rev-parse --short HEAD)" <<'PY'
import json, statistics, sys
rows = [json.loads(line[7:]) for line in open(sys.argv[1]) if line.startswith("RESULT ")]
print(f"\n| commit {sys.argv[2]} | server | edits/s | CPU µs/edit | p50 ms | p99 ms | errors |")
print("|---|---|---|---|---|---|---|")
for row in rows:
    lat = row["latency_ms"]
    print(f"| | {row['server']} | {row['edits_per_s']} | {row['server_cpu_us_per_edit']} | {lat['p50']} | {lat['p99']} | {row['errors']} |")
medians = {}
for server in ("livesignup", "peer"):
    values = [row["server_cpu_us_per_edit"] for row in rows if row["server"] == server]
    if values:
        medians[server] = statistics.median(values)
if len(medians) == 2:
    print(f"\nCPU per edit, LiveSignup / peer (medians): {medians['livesignup'] / medians['peer']:.2f}")
PY
