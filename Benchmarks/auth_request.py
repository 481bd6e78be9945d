#!/usr/bin/env python3
"""GET /auth on one core (issue 20): requests/s straight at the server, and what an
application pays through nginx's auth_request with deploy/nginx/livesignup-protect.conf,
against the same application behind nginx without it. Server on CPU 0, nginx and wrk on CPU 1,
3 interleaved runs, medians.

    python3 Benchmarks/auth_request.py .build-bench/release/signup-server
"""
import os, re, subprocess, sys, tempfile, time, urllib.parse, http.client, statistics
ROOT = "/work/main"
BIN = sys.argv[1]
d = tempfile.mkdtemp()
def free_port():
    import socket
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
server = subprocess.Popen(["taskset", "-c", "0", BIN, "--port", "0", "--database", f"{d}/a.sqlite",
    "--public-directory", f"{ROOT}/Public", "--templates-directory", f"{ROOT}/Templates", "--log-level", "warning",
    "--access-log", "off", "--argon2-preset", "owasp-minimum"], stdout=subprocess.PIPE, text=True)
port = int(re.search(r":(\d+)", server.stdout.readline()).group(1))
def req(method, path, body=None, headers={}, p=port):
    c = http.client.HTTPConnection("127.0.0.1", p, timeout=10)
    c.request(method, path, body=body, headers=headers); r = c.getresponse(); b = r.read()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), b.decode(errors="replace")
_, _, page = req("GET", "/")
token = re.search(r'name="token" value="([^"]+)"', page).group(1)
pw = "Lantern-Orbit-Quietly-42"
_, h, _ = req("POST", "/signup", urllib.parse.urlencode({"token": token, "username": "benchuser", "email": "b@example.org", "password": pw, "confirm": pw}), {"Content-Type": "application/x-www-form-urlencoded"})
cookie = h["set-cookie"].split(";")[0]
assert req("GET", "/auth", headers={"Cookie": cookie})[0] == 200
def wrk(url, seconds=10, conns=16):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency", "-H", f"Cookie: {cookie}", url],
                         capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    v = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, v, int(non2xx.group(1)) if non2xx else 0
# nginx: an "application" that answers 200 itself, with and without the protect snippet.
nd = f"{d}/nginx"; os.makedirs(nd)
plain, protected, appp = free_port(), free_port(), free_port()
conf = f"""
daemon off; master_process off; worker_processes 1; pid {nd}/nginx.pid; error_log {nd}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off; client_body_temp_path {nd}/b; proxy_temp_path {nd}/p; fastcgi_temp_path {nd}/f; uwsgi_temp_path {nd}/u; scgi_temp_path {nd}/s;
  upstream livesignup_auth {{ server 127.0.0.1:{port}; keepalive 16; }}
  server {{ listen 127.0.0.1:{appp}; location / {{ return 200 "app"; }} }}
  server {{ listen 127.0.0.1:{plain}; location / {{ proxy_pass http://127.0.0.1:{appp}; }} }}
  server {{ listen 127.0.0.1:{protected};
    set $livesignup_signin http://127.0.0.1:{port}/signin; set $livesignup_app http://127.0.0.1:{appp};
    include {ROOT}/deploy/nginx/livesignup-protect.conf; }}
}}"""
open(f"{nd}/nginx.conf", "w").write(conf)
ng = subprocess.Popen(["taskset", "-c", "1", "/usr/sbin/nginx", "-p", nd, "-c", f"{nd}/nginx.conf"], stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 10
while time.monotonic() < deadline:  # bounded wait for nginx to listen
    try:
        if req("GET", "/x", headers={"Cookie": cookie}, p=protected)[0] == 200:
            break
    except OSError:
        time.sleep(0.05)
assert req("GET", "/x", headers={"Cookie": cookie}, p=protected)[0] == 200
results = {"direct": [], "plain": [], "protected": []}
for run in range(3):
    results["direct"].append(wrk(f"http://127.0.0.1:{port}/auth"))
    results["plain"].append(wrk(f"http://127.0.0.1:{plain}/x", conns=8))
    results["protected"].append(wrk(f"http://127.0.0.1:{protected}/x", conns=8))
    results.setdefault("plain c1", []).append(wrk(f"http://127.0.0.1:{plain}/x", seconds=5, conns=1))
    results.setdefault("protected c1", []).append(wrk(f"http://127.0.0.1:{protected}/x", seconds=5, conns=1))
for name, rs in results.items():
    print(name, "req/s median", statistics.median(r[0] for r in rs), "p99 ms median", statistics.median(r[1] for r in rs),
          "each", [(round(r[0]), r[1], r[2]) for r in rs])
ng.kill(); server.terminate(); server.wait()
