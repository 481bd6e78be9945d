"""Shared helpers for the LiveSignup benchmarks: start/stop the server, read /proc, SSE.

Everything talks to 127.0.0.1 only. Every wait is bounded by a timeout.
"""

import asyncio
import ctypes
import json
import os
import re
import signal
import subprocess
import select
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TOKEN_RE = re.compile(r'name="token"\s+value="([A-Za-z0-9._~-]{16,200})"')

# The throughput benchmarks load the server from one address, which is exactly what the
# per-address abuse limits stop; they measure capacity, so they switch the limits off.
# (flood.py measures the limits themselves and leaves them on.)
LIMITS_OFF = [
    "--pages-per-address", "off", "--sessions-per-address", "off",
    "--live-sessions-per-address", "1000000", "--edits-per-session", "off",
    "--edits-per-address", "off", "--lookups-per-session", "off", "--lookups-per-address", "off",
    "--signups-per-address", "off", "--connections-per-address", "0",
]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------- server process

def _die_with_parent():
    """In the child before exec: get SIGTERM if the benchmark process dies, so a killed
    benchmark never leaves a server behind."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def exit_cleanly_on_sigterm():
    """Turn SIGTERM (e.g. from `timeout`) into KeyboardInterrupt so `finally` blocks run
    and the server is stopped."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, handler)


class Server:
    """The signup-server binary on 127.0.0.1, port 0, with a fresh temporary database."""

    def __init__(self, binary, cwd=REPO_ROOT, extra_args=(), peer=False, cpus=None, database=None):
        """`peer`: the Hummingbird peer (../shared/peers/hummingbird), which takes fewer
        options. `cpus`: pin the server to these CPUs with taskset (e.g. "0"). `database`:
        a --database value (a PostgreSQL URL) instead of a fresh SQLite file."""
        self.database = database
        self.binary = str(Path(binary).resolve())
        self.cwd = str(cwd)
        self.extra_args = list(extra_args)
        self.peer = peer
        self.cpus = cpus
        self.tmp = None
        self.proc = None
        self.port = None

    def start(self, timeout=30.0):
        self.tmp = tempfile.TemporaryDirectory(prefix="livesignup-bench-")
        db = self.database or os.path.join(self.tmp.name, "bench.sqlite")
        if self.peer:
            args = [self.binary, "--host", "127.0.0.1", "--port", "0", "--database", db, *self.extra_args]
        else:
            args = [self.binary, "--host", "127.0.0.1", "--port", "0", "--database", db,
                    "--public-directory", "Public", "--templates-directory", "Templates",
                    "--log-level", "warning", *self.extra_args]
        if self.cpus is not None:
            # taskset execs the server, so the pid stays the server's.
            args = ["taskset", "-c", str(self.cpus), *args]
        self.stderr_path = os.path.join(self.tmp.name, "stderr.log")
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(args, cwd=self.cwd, stdout=subprocess.PIPE, stderr=self._stderr,
                                     preexec_fn=_die_with_parent)
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buffer = b""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                message = f"server exited early ({self.proc.returncode}): {self.stderr_text()}"
                self.stop()
                raise RuntimeError(message)
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                chunk = os.read(fd, 4096)
                buffer += chunk
                match = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", buffer)
                if match:
                    self.port = int(match.group(1))
                    # Keep draining stdout so the server can never block on a full pipe.
                    threading.Thread(target=self._drain, args=(fd,), daemon=True).start()
                    return self
        self.stop()
        raise RuntimeError("server did not print its port in time")

    def _drain(self, fd):
        try:
            while os.read(fd, 4096):
                pass
        except OSError:
            pass

    def stderr_text(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    @property
    def pid(self):
        return self.proc.pid

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self, timeout=15.0):
        """SIGTERM, wait, SIGKILL only if it does not exit. Returns (exit code, seconds)."""
        if self.proc is None:
            return None, 0.0
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        elapsed = time.monotonic() - started
        code = self.proc.returncode
        self.stderr_tail = self.stderr_text()
        self._stderr.close()
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None
        return code, elapsed


# ---------------------------------------------------------------- /proc sampling

def cpu_seconds(pid):
    """utime + stime of the whole process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is state (field 3); utime is field 14, stime field 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_cpu_seconds(pid):
    """{tid: (comm, cpu seconds)} for every thread of the process."""
    result = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        result[int(tid)] = (comm, (int(fields[11]) + int(fields[12])) / CLK_TCK)
    return result


def thread_cpu_delta(before, after, top=6):
    rows = []
    for tid, (comm, cpu) in after.items():
        delta = cpu - before.get(tid, (comm, 0.0))[1]
        if delta > 0:
            rows.append((delta, tid, comm))
    rows.sort(reverse=True)
    return [{"tid": tid, "comm": comm, "cpu_s": round(delta, 2)} for delta, tid, comm in rows[:top]]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def context_switches(pid):
    """{tid: (voluntary, nonvoluntary)} per thread (a process-wide sum would drop when
    short-lived Dispatch worker threads exit)."""
    result = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        vol = nonvol = 0
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        nonvol = int(line.split()[1])
        except FileNotFoundError:
            continue
        result[int(tid)] = (vol, nonvol)
    return result


def context_switch_delta(before, after):
    """[voluntary, involuntary] switches since `before`, over threads alive at the end."""
    vol = nonvol = 0
    for tid, (v, n) in after.items():
        v0, n0 = before.get(tid, (0, 0))
        vol += v - v0
        nonvol += n - n0
    return [vol, nonvol]


# ---------------------------------------------------------------- HTTP + SSE

async def create_session(http, base_url):
    """GET / and return the form token."""
    async with http.get(base_url + "/") as resp:
        text = await resp.text()
        if resp.status != 200:
            raise RuntimeError(f"GET / answered {resp.status}: {text[:200]}")
    match = TOKEN_RE.search(text)
    if not match:
        raise RuntimeError("no token input in the page")
    return match.group(1)


async def create_sessions(http, base_url, count, concurrency=16):
    semaphore = asyncio.Semaphore(concurrency)

    async def one():
        async with semaphore:
            return await create_session(http, base_url)

    return await asyncio.gather(*(one() for _ in range(count)))


class StreamStats:
    """What one SSE reader has seen."""

    def __init__(self, token):
        self.token = token
        self.status = None
        self.retry_seen = False
        self.snapshot = asyncio.Event()
        self.events = 0           # events after the snapshot
        self.events_by_name = {}
        self.pings = 0
        self.ping_times = []
        self.bytes = 0
        self.max_rev = 0
        self.last_id = 0
        self.id_gaps = 0          # ids that did not follow the previous one by exactly 1
        self.ended = False        # the server ended the stream (EOF) while we were reading
        self.error = None


async def read_stream(http, base_url, stats, read_timeout=None):
    """Reads `GET /events?token=…` until cancelled; counts events, pings, ids and revs."""
    url = f"{base_url}/events?token={stats.token}"
    try:
        async with http.get(url, timeout=None) as resp:
            stats.status = resp.status
            if resp.status != 200:
                stats.error = f"status {resp.status}"
                stats.snapshot.set()
                return
            event_name = None
            event_id = None
            data = None
            while True:
                line = await resp.content.readline()
                if not line:
                    stats.ended = True
                    return
                stats.bytes += len(line)
                line = line.rstrip(b"\r\n")
                if line == b"":
                    if data is not None:
                        _dispatch(stats, event_name or "message", event_id, data)
                    event_name = event_id = data = None
                elif line.startswith(b":"):
                    if line[1:].strip() == b"ping":
                        stats.pings += 1
                        stats.ping_times.append(time.monotonic())
                elif line.startswith(b"retry:"):
                    stats.retry_seen = True
                elif line.startswith(b"event:"):
                    event_name = line[6:].strip().decode()
                elif line.startswith(b"id:"):
                    event_id = int(line[3:].strip())
                elif line.startswith(b"data:"):
                    data = line[5:].strip() if data is None else data + b"\n" + line[5:].strip()
    except asyncio.CancelledError:
        raise
    except Exception as error:  # connection reset etc.
        stats.error = f"{type(error).__name__}: {error}"
        stats.snapshot.set()


def _dispatch(stats, name, event_id, data):
    if event_id is not None:
        if stats.last_id and event_id != stats.last_id + 1:
            stats.id_gaps += 1
        stats.last_id = event_id
    payload = json.loads(data)
    rev = payload.get("rev")
    if isinstance(rev, int):
        stats.max_rev = max(stats.max_rev, rev)
    if name == "snapshot":
        stats.snapshot.set()
        return
    stats.events += 1
    stats.events_by_name[name] = stats.events_by_name.get(name, 0) + 1


def host_cpu_jiffies():
    """(busy, total) jiffies of the whole machine from /proc/stat, to see other load."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])
    return total - idle, total


def host_busy_percent(before, after):
    busy = after[0] - before[0]
    total = after[1] - before[1]
    return 100.0 * busy / total * os.cpu_count() if total else 0.0
