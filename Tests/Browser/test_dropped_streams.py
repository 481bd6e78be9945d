"""A closed tab is not an error (issue 25): event streams dropped in every way a client can
drop them are released at once (within RELEASE_SECONDS, not the 30 s idle timeout), and the
operator's error log stays empty.

Eight clients open and drop event streams as fast as they can for a few seconds, each drop
one of: closed mid-headers, closed right after the request, closed or reset right after the
stream's headers, or a second stream request pipelined on the same keep-alive connection.
Before the fix this left thousands of descriptors for the 30 s idle timeout and wrote about
3,400 `error` lines a second (libmicrohttpd's "Failed to send … forcibly closed by remote
peer"). Now: the descriptors return to their baseline at once, no line is logged at
`warning` or above, and the hang-ups are counted in `livesignup_client_disconnects_total`.
"""
import http.client
import random
import re
import socket
import struct
import tempfile
import threading
import time

from conftest import ProcessReadings, Server, wait_for

CHURN_SECONDS = 4
CLIENTS = 8
# How long after the churn the descriptors may take to come back (the idle timeout is 30 s).
RELEASE_SECONDS = 5


def fetch(port, path, source="127.0.0.1"):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    connection.request("GET", path)
    return connection.getresponse().read().decode()


def read_headers(client):
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = client.recv(4096)
        if not chunk:
            return
        received += chunk


def reset(client):
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


def churn(port, index, until, dropped):
    source = f"127.0.{index + 1}.1"
    token = re.search(r'name="token" value="([^"]+)"', fetch(port, "/", source)).group(1)
    request = f"GET /events?token={token} HTTP/1.1\r\nHost: a\r\n\r\n".encode()
    ways = [
        lambda c: (c.sendall(request[:30]), c.close()),
        lambda c: (c.sendall(request), c.close()),
        lambda c: (c.sendall(request), read_headers(c), c.close()),
        lambda c: (c.sendall(request), read_headers(c), reset(c)),
        lambda c: (c.sendall(request + request), read_headers(c), c.close()),
    ]
    count = 0
    while time.monotonic() < until:
        count += 1
        client = socket.create_connection(("127.0.0.1", port),
                                          source_address=(f"127.0.{index + 1}.{count % 250 + 2}", 0))
        random.choice(ways)(client)
        dropped[index] += 1


def test_dropped_streams_are_released_at_once_and_are_not_errors():
    with tempfile.TemporaryDirectory() as directory:
        server = Server(directory, seed_demo=False)
        port, log_path = server.port, server.log_path
        try:
            process = ProcessReadings(server.pid)
            fetch(port, "/healthz")
            # Warmed up as the churn begins (a page, a few dropped streams), and settled: what
            # the server opens lazily on its first page or stream (a store connection, a
            # worker's) belongs in the baseline. Once, a baseline taken before them counted
            # two such descriptors as left open.
            churn(port, CLIENTS, time.monotonic() + 0.2, [0] * (CLIENTS + 1))
            readings = []

            def settled():
                readings.append(process.descriptors())
                return len(readings) >= 3 and readings[-1] == readings[-2] == readings[-3]
            assert wait_for(settled, 10), f"the descriptors never settled: {readings}"
            baseline = process.descriptors()
            dropped = [0] * CLIENTS
            until = time.monotonic() + CHURN_SECONDS
            clients = [threading.Thread(target=churn, args=(port, index, until, dropped)) for index in range(CLIENTS)]
            for thread in clients:
                thread.start()
            peak = [baseline]

            def churn_over():
                peak[0] = max(peak[0], process.descriptors())  # sampled on each poll of the wait
                return not any(thread.is_alive() for thread in clients)
            assert wait_for(churn_over, CHURN_SECONDS + 30), "the churning clients never finished"
            peak = peak[0]
            at_end = process.descriptors()
            # Within RELEASE_SECONDS: a leak holds them until the 30 s idle timeout, and the
            # usual release is well under a second; the bound leaves room for a busy machine (the
            # suite runs two workers at once: a 1 s bound failed once under that load).
            released = wait_for(lambda: process.descriptors() <= baseline + 1, RELEASE_SECONDS)
            print(f"\n{sum(dropped)} streams dropped in {CHURN_SECONDS} s; descriptors {baseline} before, "
                  f"{peak} at most, {at_end} at the end, {process.descriptors()} after the wait")
            assert sum(dropped) > 1000, "the churn did not get going"
            assert released, f"{process.descriptors() - baseline} descriptors still open {RELEASE_SECONDS} s after the churn"
            disconnects = re.search(r"livesignup_client_disconnects_total (\d+)", fetch(port, "/metrics"))
            assert disconnects and int(disconnects.group(1)) > 0, "the hang-ups were not counted"
        finally:
            server.stop()
        lines = log_path.read_text().splitlines()
        assert lines == [], f"{len(lines)} lines at warning or above for clients that went away:\n" + \
            "\n".join(lines[:5])
