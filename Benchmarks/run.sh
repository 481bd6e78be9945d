#!/usr/bin/env bash
# Builds the release server into .build-bench and runs both benchmarks RUNS times (default 2).
#
#   bash Benchmarks/run.sh                 # build + idle streams + edit throughput
#   RUNS=3 STREAMS=2000 bash Benchmarks/run.sh
#   SKIP_BUILD=1 bash Benchmarks/run.sh    # reuse the existing .build-bench binary
#
# Needs python3 with aiohttp (pip install aiohttp) and wrk. Talks to 127.0.0.1 only.
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS="${RUNS:-2}"
STREAMS="${STREAMS:-1000}"
SESSIONS="${SESSIONS:-50}"
DURATION="${DURATION:-10}"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/livesignup-bench-results.XXXXXX")"
trap 'rm -rf "$OUT"' EXIT

# The real interpreter, not a shim: `timeout` must signal the process that owns the server.
PYTHON="$(python3 -c 'import sys; print(sys.executable)')"
"$PYTHON" -c 'import aiohttp' 2>/dev/null || { echo "aiohttp is missing: pip install aiohttp" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }

if [[ -z "${SKIP_BUILD:-}" ]]; then
    echo "== building signup-server (release, --scratch-path .build-bench)"
    swift build -c release --scratch-path .build-bench --product signup-server
fi
BIN="$(swift build -c release --scratch-path .build-bench --show-bin-path)/signup-server"
[[ -x "$BIN" ]] || { echo "no binary at $BIN" >&2; exit 1; }

status=0
for run in $(seq 1 "$RUNS"); do
    echo
    echo "== idle streams, run $run/$RUNS ($STREAMS streams)"
    timeout -k 10 240 "$PYTHON" Benchmarks/idle_streams.py "$BIN" --streams "$STREAMS" \
        | tee "$OUT/idle-$run.log" || status=1
done
for run in $(seq 1 "$RUNS"); do
    echo
    echo "== edit throughput, run $run/$RUNS ($SESSIONS sessions, ${DURATION}s)"
    timeout -k 10 180 "$PYTHON" Benchmarks/edit_throughput.py "$BIN" --sessions "$SESSIONS" \
        --duration "$DURATION" | tee "$OUT/edits-$run.log" || status=1
done

echo
echo "== summary ($(nproc) cores, $(date -u +%Y-%m-%d))"
"$PYTHON" - "$OUT" <<'EOF'
import glob, json, os, sys

def results(pattern):
    rows = []
    for path in sorted(glob.glob(os.path.join(sys.argv[1], pattern))):
        for line in open(path):
            if line.startswith("RESULT "):
                rows.append(json.loads(line[7:]))
    return rows

idle = results("idle-*.log")
edits = results("edits-*.log")

def table(rows, columns):
    header = ["metric"] + [f"run {i + 1}" for i in range(len(rows))]
    lines = [header]
    for label, get in columns:
        values = []
        for row in rows:
            try:
                values.append(str(get(row)))
            except (KeyError, TypeError):
                values.append("-")
        lines.append([label] + values)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(line, widths)))

if idle:
    print(f"idle streams ({idle[0]['streams']} streams, {idle[0]['window_s']:.0f} s window)")
    table(idle, [
        ("streams with snapshot", lambda r: r["snapshots"]),
        ("server CPU, % of one core", lambda r: r["cpu_percent"]),
        ("  (pings in window)", lambda r: r["pings_in_window"]),
        ("RSS with streams, MiB", lambda r: r["rss_streams_mib"]),
        ("RSS per stream, KiB", lambda r: r["rss_per_stream_kib"]),
        ("RSS per session, KiB", lambda r: r["rss_per_session_kib"]),
        ("heartbeat on all streams", lambda r: r["heartbeat_ok"]),
        ("closed conns released, s", lambda r: r["fds_release_s"]),
        ("host busy, % of one core", lambda r: r["host_busy_percent"]),
        ("error", lambda r: r.get("error", "none")),
    ])
if edits:
    print(f"edit throughput ({edits[0]['sessions']} sessions/streams/connections, {edits[0]['duration_s']} s)")
    table(edits, [
        ("edits/s", lambda r: r["edits_per_s"]),
        ("latency p50, ms", lambda r: r["latency_ms"]["p50"]),
        ("latency p99, ms", lambda r: r["latency_ms"]["p99"]),
        ("server CPU, % of one core", lambda r: r["server_cpu_percent"]),
        ("server CPU per edit, µs", lambda r: r["server_cpu_us_per_edit"]),
        ("events received", lambda r: r["events_total"]),
        ("events per edit", lambda r: r["events_per_edit"]),
        ("lost (behind/gaps/ended)", lambda r: f"{r['streams_behind']}/{r['id_gaps']}/{r['streams_ended']}"),
        ("non-202 / socket errors", lambda r: f"{r['non_202']}/{sum(r['socket_errors'].values())}"),
        ("host busy, % of one core", lambda r: r["host_busy_percent"]),
        ("error", lambda r: r.get("error", "none")),
    ])
EOF
exit $status
