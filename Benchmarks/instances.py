"""Issue 12's bench scenario: LiveSignup on PostgreSQL, one instance direct, one through
nginx, two through nginx (the shipped deploy/nginx/livesignup-instances.conf), each found at
its highest edits/s with p99 edit→event ≤ 50 ms, and p99 at about 1,000 edits/s.

Every server process (the instances and nginx) is pinned to CPU 0 and the generator to CPU 1,
as in the other scenarios, so the three are compared on the same single core: a second
instance cannot add capacity here, it shows what the extra hop and the routing cost.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import benchlib as bl

INSTANCES_CONF = bl.REPO_ROOT / "deploy/nginx/livesignup-instances.conf"
PROXY_CONF = bl.REPO_ROOT / "deploy/nginx/livesignup-proxy.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)  # polling a condition, bounded by the deadline
    raise RuntimeError(f"timed out waiting for {what}")


class PostgresCluster:
    """initdb + pg_ctl on loopback in a temporary folder, as the postgres user when root."""

    def __init__(self):
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
        if not versions:
            raise RuntimeError("PostgreSQL's server is not installed (apt-get install postgresql)")
        self.bin = versions[-1].parent
        self.dir = tempfile.mkdtemp(prefix="livesignup-bench-pg-")
        self.port = free_port()
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self.run("initdb", "-D", f"{self.dir}/data", "-U", "livesignup", "--auth=trust", "-E", "UTF8", "--locale=C")
        # Pinned to CPU 0 with the servers: the database is part of the server side.
        self.run("pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/server.log", "-w",
                 "-o", f"-p {self.port} -h 127.0.0.1 -k {self.dir} -c fsync=off", "start", pin=True)
        self.databases = 0

    def run(self, tool, *args, pin=False):
        command = [str(self.bin / tool), *args]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        if pin:
            command = ["taskset", "-c", "0", *command]
        subprocess.run(command, check=True, capture_output=True)

    def database(self):
        self.databases += 1
        name = f"bench{self.databases}"
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "livesignup", name)
        return f"postgres://livesignup@127.0.0.1:{self.port}/{name}?sslmode=disable"

    def stop(self):
        try:
            self.run("pg_ctl", "-D", f"{self.dir}/data", "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class Deployment:
    """`count` instances on one database, optionally behind nginx; looks like a bl.Server to
    the saturation search (port, pid, stop). `pid` is the first instance's."""

    def __init__(self, binary, database, count, through_nginx):
        self.instances = []
        self.nginx = None
        self.dir = tempfile.mkdtemp(prefix="livesignup-bench-nginx-")
        for index in range(count):
            extra = [*bl.LIMITS_OFF, "--instance-id", f"web{index + 1}", "--trusted-proxy", "127.0.0.1"]
            self.instances.append(bl.Server(binary, extra_args=extra, cpus="0", database=database).start())
        self.port = self.instances[0].port
        if through_nginx:
            self.port = self.start_nginx()

    def start_nginx(self):
        ports = [server.port for server in self.instances]
        routing = INSTANCES_CONF.read_text()
        # With one instance both example addresses become it (nginx accepts a peer twice).
        routing = routing.replace("127.0.0.1:8081", f"127.0.0.1:{ports[0]}")
        routing = routing.replace("127.0.0.1:8082", f"127.0.0.1:{ports[-1]}")
        port = free_port()
        d = self.dir
        (Path(d) / "nginx.conf").write_text(f"""
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 65536;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
{routing}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        include {PROXY_CONF};
    }}
}}
""")
        self.nginx = subprocess.Popen(["taskset", "-c", "0", NGINX, "-p", d, "-c", f"{d}/nginx.conf"],
                                      stderr=subprocess.DEVNULL, preexec_fn=bl._die_with_parent)

        def answers():
            try:
                return urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).status == 200
            except OSError:
                return False
        wait_until(answers, 10, "nginx")
        return port

    @property
    def pid(self):
        return self.instances[0].pid

    def stop(self):
        if self.nginx and self.nginx.poll() is None:
            self.nginx.send_signal(signal.SIGKILL)
            self.nginx.wait()
        for server in self.instances:
            server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
