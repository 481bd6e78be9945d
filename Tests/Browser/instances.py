"""Helpers for the several-instances browser test: a throwaway PostgreSQL cluster on
loopback, signup-server instances that share it, and nginx in front of them with the
shipped configuration (deploy/nginx/livesignup-instances.conf and livesignup-proxy.conf).

Every wait here is a bounded poll on a condition, never a fixed sleep.
"""
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import types
import urllib.error
import urllib.request
from pathlib import Path

from selenium.webdriver.support.ui import WebDriverWait

import conftest
from conftest import ROOT, SERVER, free_port

POSTGRESQL_ROOT = Path("/usr/lib/postgresql")
NGINX = Path("/usr/sbin/nginx")
NGINX_DIR = ROOT / "deploy/nginx"
# The example addresses of web1 and web2 in the shipped livesignup-instances.conf.
EXAMPLE_ADDRESSES = {"web1": "127.0.0.1:8081", "web2": "127.0.0.1:8082"}
START_SECONDS = 30



def poll(condition, seconds, what, interval=0.05):
    """Waits (bounded) until `condition` returns something truthy, and returns that."""
    return WebDriverWait(None, seconds, poll_frequency=interval).until(
        lambda _: condition(), message=f"timed out after {seconds} s waiting for {what}")


def child_environment():
    """The environment without LIVESIGNUP_* variables, so the flags alone configure a server
    (in particular no LIVESIGNUP_FORM_TOKEN_KEY: the instances must share the key through
    the database)."""
    return {name: value for name, value in os.environ.items() if not name.startswith("LIVESIGNUP_")}


def http_status(url, timeout=2):
    """The status of GET `url`, or None when nothing answers; never through a proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (OSError, urllib.error.URLError):
        return None


def read_text(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


# ---------- PostgreSQL ----------

def postgresql_bin():
    """The newest installed PostgreSQL's bin directory with the server tools, or None."""
    if not POSTGRESQL_ROOT.is_dir():
        return None
    versions = sorted((entry for entry in POSTGRESQL_ROOT.iterdir() if re.fullmatch(r"\d+(\.\d+)?", entry.name)),
                      key=lambda entry: [int(part) for part in entry.name.split(".")], reverse=True)
    for version in versions:
        bin_dir = version / "bin"
        if all((bin_dir / tool).exists() for tool in ("postgres", "initdb", "pg_ctl", "createdb")):
            return bin_dir
    return None


class PostgreSQL:
    """A throwaway cluster on 127.0.0.1 with one database; trust authentication, user
    `livesignup`. As root it runs as `postgres` (PostgreSQL refuses root)."""

    USER = "livesignup"

    def __init__(self, bin_dir, database="livesignup"):
        self.bin_dir = Path(bin_dir)
        self.directory = Path(tempfile.mkdtemp(prefix="livesignup-pg-"))
        self.as_postgres = os.getuid() == 0
        if self.as_postgres:
            account = pwd.getpwnam("postgres")
            os.chown(self.directory, account.pw_uid, account.pw_gid)
        self.data = self.directory / "data"
        self.log = self.directory / "server.log"
        self.port = free_port()
        self.database = database
        self.started = False
        self.url = f"postgres://{self.USER}@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def run(self, tool, *arguments):
        command = [str(self.bin_dir / tool), *arguments]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        # The cluster's directory as working directory: `postgres` may not read the checkout.
        result = subprocess.run(command, cwd=self.directory, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (
            f"{tool} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}\n{read_text(self.log)}")
        return result

    def start(self):
        self.run("initdb", "-D", str(self.data), "-U", self.USER, "--auth=trust", "-E", "UTF8", "--locale=C")
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log),
                 "-o", f"-p {self.port} -h 127.0.0.1 -k {self.directory} -c fsync=off", "-t", str(START_SECONDS),
                 "-w", "start")
        self.started = True
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.USER, self.database)
        return self

    def new_database(self, name):
        """Another database in this cluster (one per test, the cluster once per file); returns
        an object with its URL, as this cluster's own."""
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.USER, name)
        return types.SimpleNamespace(url=f"postgres://{self.USER}@127.0.0.1:{self.port}/{name}?sslmode=disable")

    def stop(self):
        try:
            if self.started:
                self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
                self.started = False
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


# ---------- signup-server ----------

class Instance(conftest.Server):
    """One signup-server process with its own instance id, on an ephemeral port, sharing the
    PostgreSQL database and trusting nginx on loopback; configured by its flags alone (no
    LIVESIGNUP_FORM_TOKEN_KEY: the instances must share the key through the database)."""

    def __init__(self, instance_id, database_url, directory, extra_args=()):
        self.id = instance_id
        self.database_url = database_url
        super().__init__(directory, ["--instance-id", instance_id, "--trusted-proxy", "127.0.0.1",
                                     "--connections-per-address", "0", "--argon2-preset", "owasp-minimum",
                                     *extra_args],
                         database=database_url, inherit_settings=False, seed_demo=False, name=instance_id, start=False)


def list_accounts(database_url):
    """`signup-server accounts list --database URL`, parsed: a list of (username, email)."""
    result = subprocess.run([str(SERVER), "accounts", "list", "--database", database_url],
                            capture_output=True, text=True, timeout=30, env=child_environment())
    assert result.returncode == 0, f"accounts list failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    lines = result.stdout.strip().splitlines()
    assert lines and re.fullmatch(r"\d+ accounts?", lines[-1]), f"unexpected accounts list:\n{result.stdout}"
    header = lines[0].split()
    assert header[:3] == ["id", "username", "email"], f"unexpected accounts list header:\n{result.stdout}"
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[1:-1]]
    assert len(rows) == int(lines[-1].split()[0]), f"row count disagrees with the total:\n{result.stdout}"
    return [(row[1], row[2]) for row in rows]


# ---------- nginx ----------

def nginx_configuration(directory, error_log, http_body):
    """A whole nginx.conf for a test: one process in the foreground, every temporary path in
    `directory`, no access log, and `http_body` inside `http { }`."""
    return f"""
daemon off;
master_process off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {error_log} warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
{http_body}
}}
"""


def http_call(port, method, path, body=None, cookie=None):
    """One plain request to 127.0.0.1:`port` (a urlencoded body, a cookie), redirects not
    followed; returns the status, the headers by lower-case name, and the body."""
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    headers = {"Content-Type": "application/x-www-form-urlencoded"} if body else {}
    if cookie:
        headers["Cookie"] = cookie
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    return response.status, dict((k.lower(), v) for k, v in response.getheaders()), response.read().decode()


class Nginx:
    """nginx in the foreground (no master, one worker) on a free loopback port, in front of
    `ports` ({"web1": port, "web2": port}) with the shipped configuration files."""

    def __init__(self, directory, ports):
        self.directory = Path(directory) / "nginx"
        self.directory.mkdir()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.error_log = self.directory / "error.log"
        self.process = None

        shipped = (NGINX_DIR / "livesignup-instances.conf").read_text()
        for instance, address in EXAMPLE_ADDRESSES.items():
            assert address in shipped, f"livesignup-instances.conf no longer names {instance} as {address}"
            shipped = shipped.replace(address, f"127.0.0.1:{ports[instance]}")
        instances_conf = self.directory / "livesignup-instances.conf"
        instances_conf.write_text(shipped)

        self.configuration = self.directory / "nginx.conf"
        self.configuration.write_text(nginx_configuration(self.directory, self.error_log, f"""
    include {instances_conf};
    server {{
        listen 127.0.0.1:{self.port};
        include {NGINX_DIR / "livesignup-proxy.conf"};
    }}"""))

    def start(self):
        output = open(self.directory / "stderr.log", "w")
        try:
            self.process = subprocess.Popen(
                [str(NGINX), "-p", str(self.directory), "-e", str(self.error_log), "-c", str(self.configuration)],
                stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            output.close()

        def healthy():
            assert self.process.poll() is None, f"nginx exited with {self.process.returncode}:\n{self.log()}"
            return http_status(self.url + "/healthz") == 200

        poll(healthy, START_SECONDS, "nginx to answer /healthz with 200")
        return self

    def kill(self):
        # Started with master_process off it is a single process; SIGKILL ends it at once.
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=10)

    def log(self):
        return read_text(self.directory / "stderr.log") + read_text(self.error_log)
