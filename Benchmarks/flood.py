#!/usr/bin/env python3
"""Flood: does one abusive address leave the server usable for everyone else?

    python3 Benchmarks/flood.py .build/debug/signup-server [--phase page|slow|both]

The server's default per-address limits stay ON (this measures them). The attacker uses
127.0.0.2 and the control client 127.0.0.1, so the server sees two different addresses.
Each phase starts its own server (fresh database, fresh limiter state, clean RSS figures)
and runs the attack in a child process, so the attack's busy event loop cannot delay the
control's timers; the control runs for as long as the attack does.

1. page: C keep-alive connections flood `GET /` for D seconds, counting 200 / 429 / other /
   errors. Meanwhile the control (a) does a fresh-connection `GET /` every 0.5 s and (b)
   keeps one form's SSE stream open and sends one `POST /fields` email edit every 0.5 s.
   Edit latency = from sending the POST until the stream delivers the first event whose
   `rev` equals the POST's `X-Rev` header (that event may arrive before the POST's response,
   so arrival times are recorded per rev); no such event within 10 s counts as missing.
2. slow: N slowloris connections, each sending one byte of a never-ending request every
   10 s, held for --slow-seconds. "Refused" = the server closed it (EOF/reset) within 1 s of
   the connect (its per-address connection limit accepts, then closes); "open at end" = the
   server is still holding it. The control does a fresh-connection `GET /` every 0.5 s.

Server RSS is sampled every 0.5 s, CPU from /proc/PID/stat. Latencies are in ms, nearest
rank. Quick check: --duration 5 --slow-connections 500 --slow-seconds 12.
Last line: `RESULT {json}`.
"""

import argparse
import asyncio
import errno
import json
import math
import multiprocessing
import os
import resource
import signal
import sys
import time
from collections import Counter
from queue import Empty

import aiohttp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

ATTACKER, CONTROL = "127.0.0.2", "127.0.0.1"
TICK = 0.5            # control interval, seconds
REQUEST_TIMEOUT = 10.0  # a control request slower than this counts as failed
SLOW_PREFIX = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "  # then "a" forever: never complete
NET_ERRORS = (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
              ValueError, IndexError)


def log(message):
    print(message, flush=True)


def stats_ms(values):
    """p50/p99/max in ms (nearest rank) of a list of seconds."""
    if not values:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    v = sorted(values)
    rank = lambda p: v[max(0, math.ceil(p / 100 * len(v)) - 1)]  # noqa: E731
    return {"n": len(v), "p50": round(rank(50) * 1000, 1), "p99": round(rank(99) * 1000, 1),
            "max": round(v[-1] * 1000, 1)}


def fmt(s):
    return f"p50 {s['p50']} / p99 {s['p99']} / max {s['max']} ms (n={s['n']})"


async def sleep_unless(stop, seconds):
    """Sleeps `seconds`, or less if the event `stop` is set meanwhile."""
    try:
        await asyncio.wait_for(stop.wait(), max(0.0, seconds))
    except asyncio.TimeoutError:
        pass


async def read_response(reader):
    """Status of one HTTP/1.1 response, body consumed; and whether the server will close."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:] if l)}
    if "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
        return status, headers.get("connection", "").lower() == "close"
    await reader.read()  # no length: the body runs to EOF
    return status, True


async def get_once(port, local, timeout):
    """`GET /` on a new connection from address `local`: (status or error name, seconds)."""
    started, writer = time.monotonic(), None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, local_addr=(local, 0)),
                                                timeout)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        status = (await asyncio.wait_for(read_response(reader), timeout - (time.monotonic() - started)))[0]
    except NET_ERRORS as error:
        status = type(error).__name__
    finally:
        if writer is not None:
            writer.close()
    return status, time.monotonic() - started


async def control_pages(port, stop):
    """Until the event `stop` is set. Open loop: a request starts every TICK whether or not
    the last one finished, so a slow server shows up as latency, not as fewer samples."""
    tasks = []
    while not stop.is_set():
        tasks.append(asyncio.create_task(get_once(port, CONTROL, REQUEST_TIMEOUT)))
        await sleep_unless(stop, TICK)
    results = await asyncio.gather(*tasks)  # each is bounded by REQUEST_TIMEOUT
    failures = Counter(str(status) for status, _ in results if status != 200)
    return {"latency_ms": stats_ms([s for status, s in results if status == 200]), "requests": len(results),
            "non_200": sum(failures.values()), "failures": failures}


async def control_form(base_url, stop):
    """One real form: SSE stream open, an email edit every TICK, edit -> event latency."""
    arrivals, changed = {}, asyncio.Event()  # rev -> monotonic time its first event arrived
    http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(CONTROL, 0)),
                                 timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT))

    async def read_events(token):
        async with http.get(f"{base_url}/events?token={token}", timeout=aiohttp.ClientTimeout(total=None)) as resp:
            if resp.status != 200:
                raise RuntimeError(f"/events answered {resp.status}")
            async for line in resp.content:
                if line.startswith(b"data:"):
                    rev = json.loads(line[5:]).get("rev")
                    if isinstance(rev, int):
                        arrivals.setdefault(rev, time.monotonic())
                        changed.set()

    latencies, missing, non_202, reader, seq = [], 0, Counter(), None, 0
    try:
        token = await bl.create_session(http, base_url)
        reader = asyncio.create_task(read_events(token))
        await asyncio.wait_for(changed.wait(), REQUEST_TIMEOUT)  # the snapshot
        while not stop.is_set():
            tick = time.monotonic()
            seq += 1
            # Alternating valid/invalid flips `email.format`, so every edit publishes at
            # least one event; an edit that changes no output would publish nothing.
            value = f"control{seq}@example.com" if seq % 2 else f"control{seq}"
            try:
                async with http.post(base_url + "/fields", data={"token": token, "field": "email",
                                                                 "value": value, "seq": str(seq)}) as resp:
                    await resp.read()
                    rev = int(resp.headers["X-Rev"]) if resp.status == 202 else None
                    non_202.update([str(resp.status)] if rev is None else [])
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                non_202[type(error).__name__] += 1
                rev = None
            if rev is not None:
                deadline = tick + REQUEST_TIMEOUT
                # No await between the check and clear(), so no event can slip in unseen.
                while rev not in arrivals and time.monotonic() < deadline and not reader.done():
                    changed.clear()
                    await sleep_unless(changed, deadline - time.monotonic())
                if rev in arrivals:
                    latencies.append(arrivals[rev] - tick)
                else:
                    missing += 1
            await sleep_unless(stop, tick + TICK - time.monotonic())
        stream_error = (repr(reader.exception()) if reader.exception() else "stream ended") if reader.done() else None
    except (aiohttp.ClientError, asyncio.TimeoutError, RuntimeError) as error:
        # No form at all (no token, no snapshot): keep the phase's other numbers.
        stream_error = f"{type(error).__name__}: {error}" + (
            f" (stream: {reader.exception()!r})" if reader is not None and reader.done() else "")
    finally:
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        await http.close()
    return {"latency_ms": stats_ms(latencies), "edits": seq, "missing_events": missing,
            "non_202": sum(non_202.values()), "failures": non_202, "stream_error": stream_error}


class ProcSampler:
    """Server RSS every TICK (start/peak/end) and its CPU over the phase; `stop()` reports."""

    def __init__(self, pid):
        self.pid, self.rss0, self.peak = pid, bl.rss_kib(pid), 0
        self.cpu0, self.t0, self.host0 = bl.cpu_seconds(pid), time.monotonic(), bl.host_cpu_jiffies()
        self.task = asyncio.create_task(self._sample())

    async def _sample(self):
        while True:
            self.peak = max(self.peak, bl.rss_kib(self.pid))
            await asyncio.sleep(TICK)

    async def stop(self):
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        elapsed, end = time.monotonic() - self.t0, bl.rss_kib(self.pid)
        return {"rss_mib": {"start": round(self.rss0 / 1024, 1), "peak": round(max(self.peak, end) / 1024, 1),
                            "end": round(end / 1024, 1)},
                "server_cpu_percent": round((bl.cpu_seconds(self.pid) - self.cpu0) / elapsed * 100, 1),
                "host_busy_percent": round(bl.host_busy_percent(self.host0, bl.host_cpu_jiffies()), 1)}


# ---------------------------------------------------------------- attacks (child process)

def attacker_process(name, kwargs, queue):
    """Each attack runs in its own process so its busy event loop (the flood, or the burst
    of thousands of connects) cannot delay the control's timers: the control latencies then
    measure the server, not this script."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's job; it stops us
    bl._die_with_parent()
    queue.put("ready")  # spawn takes a while to import; the control must not start earlier
    queue.put(asyncio.run({"page": flood, "slow": slowloris}[name](**kwargs)))


async def flood(port, connections, seconds):
    counts = Counter({"sent": 0, "200": 0, "429": 0, "other": 0, "errors": 0, "connects": 0})
    request = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    t0, cpu0 = time.monotonic(), sum(os.times()[:2])
    end = t0 + seconds

    async def worker():
        while time.monotonic() < end:
            writer = None
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port, local_addr=(ATTACKER, 0)), 5)
                counts["connects"] += 1
                while time.monotonic() < end:
                    writer.write(request)
                    counts["sent"] += 1
                    status, closing = await asyncio.wait_for(read_response(reader), 5)
                    counts[str(status) if status in (200, 429) else "other"] += 1
                    if closing:
                        break
            except NET_ERRORS:
                counts["errors"] += 1
                await asyncio.sleep(0.01)  # a refused connect must not become a busy loop
            finally:
                if writer is not None:
                    writer.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed = time.monotonic() - t0
    return {**counts, "seconds": round(elapsed, 2), "requests_per_s": round(counts["sent"] / elapsed, 1),
            "attacker_cpu_percent": round((sum(os.times()[:2]) - cpu0) / elapsed * 100, 1)}


class Slow(asyncio.Protocol):
    """One slowloris connection; records when the server ended it (EOF or reset)."""
    transport = closed_at = None
    sent = 0

    def connection_made(self, transport):
        self.transport, self.opened_at = transport, time.monotonic()

    def connection_lost(self, exc=None):
        self.closed_at = self.closed_at or time.monotonic()
    eof_received = connection_lost  # returns None: the transport then closes our side too

    def drip(self):
        """The next byte of a request that never ends, so the connection is never idle."""
        if self.closed_at is None:
            self.transport.write(SLOW_PREFIX[self.sent:self.sent + 1] or b"a")
            self.sent += 1


async def slowloris(port, pid, connections, seconds, drip_interval, connect_limit_s=60.0):
    loop, t0 = asyncio.get_running_loop(), time.monotonic()
    conns, errors, gate = [], Counter(), asyncio.Semaphore(256)
    is_open = lambda: sum(1 for c in conns if c.closed_at is None)  # noqa: E731

    async def connect():
        # Bounded concurrency: thousands of simultaneous SYNs overflow the listen backlog
        # and would then measure the kernel's SYN retry timer rather than the server.
        async with gate:
            if time.monotonic() - t0 > connect_limit_s:  # keeps the whole phase bounded
                errors["not tried, connect phase over"] += 1
                return
            try:
                _, proto = await asyncio.wait_for(loop.create_connection(
                    Slow, "127.0.0.1", port, local_addr=(ATTACKER, 0)), 10)
                proto.drip()
                conns.append(proto)
            except asyncio.TimeoutError:
                errors["timeout"] += 1
            except OSError as error:  # EMFILE here means the client ran out, not the server
                errors[errno.errorcode.get(error.errno, type(error).__name__)] += 1

    try:
        await asyncio.gather(*(connect() for _ in range(connections)))
        connect_s, held_from, peak = time.monotonic() - t0, time.monotonic(), is_open()
        while (left := seconds - (time.monotonic() - held_from)) > 0:
            await asyncio.sleep(min(drip_interval, left))
            peak = max(peak, is_open())
            for c in conns:
                c.drip()
        server_fds, still_open = bl.fd_count(pid), is_open()
    finally:
        for c in conns:
            c.transport.abort()
    quick = sum(1 for c in conns if c.closed_at is not None and c.closed_at - c.opened_at < 1.0)
    return {"attempted": connections, "connected": len(conns), "connect_errors": errors,
            "connect_s": round(connect_s, 2), "open_at_end": still_open, "open_peak": peak,
            "closed_within_1s": quick, "closed_later": len(conns) - still_open - quick, "server_fds_at_end": server_fds}


async def queue_get(queue, proc, timeout):
    """Polls, because a thread blocked in queue.get would hold up asyncio.run's exit on Ctrl-C."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return queue.get_nowait()
        except Empty:
            if not proc.is_alive() and queue.empty():
                raise RuntimeError(f"attacker process exited ({proc.exitcode})")
            await asyncio.sleep(0.1)
    raise RuntimeError("attacker process did not answer in time")


async def under_attack(server, name, kwargs, timeout, controls):
    """Runs attack `name` in a child process and each `control(stop)` until it ends.
    Returns (attack result, [control results], server /proc figures)."""
    ctx = multiprocessing.get_context("spawn")  # forking a running event loop is unsafe
    queue = ctx.Queue()
    proc = ctx.Process(target=attacker_process, args=(name, kwargs, queue))
    try:
        proc.start()
        await queue_get(queue, proc, 30)
        sampler, stop = ProcSampler(server.pid), asyncio.Event()
        tasks = [asyncio.create_task(control(stop)) for control in controls]
        try:
            attack = await queue_get(queue, proc, timeout)
        finally:
            stop.set()
        return attack, await asyncio.gather(*tasks), await sampler.stop()
    except BaseException:
        if proc.is_alive():  # interrupted: do not let the attack run on for its full time
            proc.terminate()
        raise
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)


async def page_phase(args, server):
    a, (pages, form), figures = await under_attack(
        server, "page", {"port": server.port, "connections": args.connections, "seconds": args.duration},
        args.duration + 30, [lambda stop: control_pages(server.port, stop),
                             lambda stop: control_form(server.base_url, stop)])
    log(f"[page] attacker {ATTACKER}, {args.connections} keep-alive connections, {a['seconds']} s: {a['sent']} "
        f"requests = {a['requests_per_s']}/s (200: {a['200']}, 429: {a['429']}, other: {a['other']}, "
        f"errors: {a['errors']}; {a['connects']} connects; attacker CPU {a['attacker_cpu_percent']}%)")
    log(f"[page] control GET / (fresh connection every {TICK} s): {fmt(pages['latency_ms'])}, "
        f"non-200: {pages['non_200']} {dict(pages['failures']) or ''}")
    log(f"[page] control edit -> event with rev = X-Rev: {fmt(form['latency_ms'])}, missing events: "
        f"{form['missing_events']}, non-202: {form['non_202']} {dict(form['failures']) or ''}"
        + (f", stream error: {form['stream_error']}" if form["stream_error"] else ""))
    log(f"[page] server RSS {figures['rss_mib']} MiB, CPU {figures['server_cpu_percent']}% of one core; "
        f"host busy {figures['host_busy_percent']}% of one core")
    return {"duration_s": args.duration, "connections": args.connections, "attacker": a, "control_pages": pages,
            "control_edits": form, **figures}


async def slow_phase(args, server):
    a, (pages,), figures = await under_attack(
        server, "slow", {"port": server.port, "pid": server.pid, "connections": args.slow_connections,
                         "seconds": args.slow_seconds, "drip_interval": args.drip_interval},
        args.slow_seconds + 90, [lambda stop: control_pages(server.port, stop)])
    log(f"[slow] attacker {ATTACKER}: {a['attempted']} attempted in {a['connect_s']} s, {a['connected']} "
        f"connected, connect errors {dict(a['connect_errors']) or 0}; held {args.slow_seconds} s")
    log(f"[slow] accepted and still open at the end: {a['open_at_end']} (peak {a['open_peak']}); closed by "
        f"the server within 1 s of connecting (refused): {a['closed_within_1s']}, later: {a['closed_later']}; "
        f"server fds at end {a['server_fds_at_end']}")
    log(f"[slow] control GET /: {fmt(pages['latency_ms'])}, non-200: {pages['non_200']} "
        f"{dict(pages['failures']) or ''}")
    log(f"[slow] server RSS {figures['rss_mib']} MiB, CPU {figures['server_cpu_percent']}% of one core")
    return {"slow_connections": args.slow_connections, "slow_seconds": args.slow_seconds, "attacker": a,
            "control_pages": pages, **figures}


async def run(args):
    result = {"phase": args.phase}
    for phase, fn in (("page", page_phase), ("slow", slow_phase)):
        if args.phase not in (phase, "both"):
            continue
        server = bl.Server(args.binary).start()
        try:
            # Warm up: the first page of a fresh server is slow (lazy set-up), not the attack's doing.
            status, seconds = await get_once(server.port, CONTROL, REQUEST_TIMEOUT)
            log(f"[{phase}] server pid {server.pid} on {server.base_url}, default limits on; "
                f"warm-up GET / {status} in {seconds * 1000:.1f} ms")
            result[phase] = await fn(args, server)
        except Exception as error:  # report the failure in RESULT instead of a bare traceback
            result[phase] = {"error": f"{type(error).__name__}: {error}"}
            result["error"] = f"{phase}: {type(error).__name__}: {error}"
            log(f"[{phase}] FAILED: {result['error']}")
        finally:
            code, seconds = server.stop()
            result.setdefault(phase, {})["exit_code"] = code
            log(f"[{phase}] server stopped with exit code {code} in {seconds:.2f} s")
            if code != 0:
                log(server.stderr_tail)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", help="path to the signup-server binary")
    parser.add_argument("--phase", choices=["page", "slow", "both"], default="both")
    parser.add_argument("--duration", type=float, default=60.0, help="page flood seconds")
    parser.add_argument("--connections", type=int, default=32, help="attacker keep-alive connections")
    parser.add_argument("--slow-connections", type=int, default=10_000)
    parser.add_argument("--slow-seconds", type=float, default=40.0, help="how long slow connections are held")
    parser.add_argument("--drip-interval", type=float, default=10.0, help="seconds between slow bytes")
    args = parser.parse_args()
    # 10,000 slow sockets need more descriptors than the usual soft limit of 1024. Raised
    # before the server starts, so it inherits the same limit, as a service unit would set.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.slow_connections + 100 > hard:
        log(f"warning: RLIMIT_NOFILE hard limit {hard} is below --slow-connections")
    bl.exit_cleanly_on_sigterm()
    try:
        result = asyncio.run(run(args))
    except KeyboardInterrupt:  # run()'s finally blocks have stopped the server by now
        log("interrupted")
        sys.exit(130)
    print("RESULT " + json.dumps(result), flush=True)
    ok = "error" not in result and all(result[p].get("exit_code") == 0 for p in ("page", "slow") if p in result)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
