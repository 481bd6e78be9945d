"""Apache httpd with mod_auth_openidc on loopback: a relying party we did not write, set up as
docs/CONNECTING-APPLICATIONS.md tells an operator to, in front of a page that shows what
Apache hands an application (REMOTE_USER and every OIDC_CLAIM_* variable).

Debian's apache2 runs in the foreground from a configuration of its own in a directory of its
own (its pid file, runtime files and error log there too), on a port chosen before it starts:
the port is part of the redirect URI, the page signing out returns to and the back-channel
logout URI that LiveSignup's policy must declare first. The protected page is a small CGI
script; the page signing out ends on is a static file outside the protected location. When
these tests run as root, Apache serves as www-data, so that directory is readable by all (it
holds no secret the test does not also hold).
"""
import os
import shutil
import signal
import subprocess
import tempfile
import urllib.parse
from pathlib import Path

from conftest import free_port
from instances import http_status, poll, read_text

APACHE = Path("/usr/sbin/apache2")
MODULES = Path("/usr/lib/apache2/modules")
START_SECONDS = 30

# The protected page: what Apache's environment says about the person, one <p> each.
WHOAMI = """#!/usr/bin/python3
import html, os
print("Content-Type: text/html; charset=utf-8")
print()
print("<!DOCTYPE html><html lang=en><title>Protected</title><h1>Protected</h1>")
print("<p id=REMOTE_USER>" + html.escape(os.environ.get("REMOTE_USER", "")) + "</p>")
for name in sorted(n for n in os.environ if n.startswith("OIDC_CLAIM_")):
    print("<p class=claim id=" + name + ">" + html.escape(os.environ[name]) + "</p>")
"""

# Where signing out through Apache ends: a plain page of Apache's own, not protected.
LOGGED_OUT = """<!DOCTYPE html><html lang=en><title>Signed out</title>
<h1 id=logged-out>You are signed out of the wiki</h1>
"""


def missing():
    """What is not installed, or None (make test-browser installs both)."""
    if not APACHE.exists():
        return f"Apache is not installed at {APACHE} (apt-get install apache2)"
    if not (MODULES / "mod_auth_openidc.so").exists():
        return f"mod_auth_openidc is not installed in {MODULES} (apt-get install libapache2-mod-auth-openidc)"
    return None


class ApacheRelyingParty:
    """Apache protecting /protected/ with mod_auth_openidc for one client of `issuer`. Its port
    (and so `redirect_uri`, `logged_out_page` and `backchannel_logout_uri`) is known from
    construction; `start()` needs the provider running (mod_auth_openidc reads discovery at the
    first request, not at start)."""

    def __init__(self, *, auth_request_params=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.redirect_uri = f"{self.url}/protected/redirect_uri"
        self.page = f"{self.url}/protected/whoami"
        self.logged_out_page = f"{self.url}/loggedout.html"
        # mod_auth_openidc takes logout tokens at its redirect URI (2.4: `?logout=backchannel`).
        self.backchannel_logout_uri = f"{self.redirect_uri}?logout=backchannel"
        self.auth_request_params = auth_request_params
        self.directory = Path(tempfile.mkdtemp(prefix="livesignup-apache-"))
        os.chmod(self.directory, 0o755)
        self.error_log = self.directory / "error.log"
        self.process = None

    def logout_url(self, return_to):
        """Where an application sends the browser to sign out with mod_auth_openidc: its redirect
        URI with `logout=` the page to end on (on this host). It ends its own session and revokes
        its tokens, then sends the browser to the provider's end_session_endpoint with the ID
        token as hint and `return_to` as post_logout_redirect_uri."""
        return f"{self.redirect_uri}?logout={urllib.parse.quote(return_to, safe='')}"

    def start(self, issuer, client_id, client_secret):
        cgi = self.directory / "cgi"
        cgi.mkdir(mode=0o755)
        (cgi / "whoami").write_text(WHOAMI)
        os.chmod(cgi / "whoami", 0o755)
        site = self.directory / "site"
        site.mkdir(mode=0o755)
        (site / "loggedout.html").write_text(LOGGED_OUT)
        os.chmod(site / "loggedout.html", 0o644)
        run_as = "User www-data\nGroup www-data\n" if os.geteuid() == 0 else ""
        modules = "\n".join(f"LoadModule {name}_module {MODULES}/mod_{name}.so" for name in
                            ("mpm_prefork", "authn_core", "authz_core", "authz_user", "alias", "cgi", "mime",
                             "auth_openidc"))
        extra = f"OIDCAuthRequestParams {self.auth_request_params}\n" if self.auth_request_params else ""
        configuration = self.directory / "httpd.conf"
        configuration.write_text(f"""ServerRoot {self.directory}
ServerName 127.0.0.1
Listen 127.0.0.1:{self.port}
PidFile {self.directory}/httpd.pid
DefaultRuntimeDir {self.directory}
ErrorLog {self.error_log}
LogLevel warn auth_openidc:info
{run_as}{modules}
DocumentRoot {site}
TypesConfig /dev/null
AddType text/html .html
ScriptAlias /protected/ {cgi}/

OIDCProviderMetadataURL {issuer}/.well-known/openid-configuration
OIDCClientID {client_id}
OIDCClientSecret {client_secret}
OIDCRedirectURI {self.redirect_uri}
OIDCCryptoPassphrase {os.urandom(16).hex()}
OIDCScope "openid email profile"
OIDCPKCEMethod S256
OIDCRemoteUserClaim preferred_username
{extra}
<Location /protected>
    AuthType openid-connect
    Require valid-user
</Location>
""")
        self.stderr = open(self.directory / "stderr.log", "w")
        # A session of its own: when it stops, Apache signals its whole process group, which
        # would otherwise be pytest's.
        self.process = subprocess.Popen([str(APACHE), "-DFOREGROUND", "-f", str(configuration)],
                                        stdout=self.stderr, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)

        def answers():
            assert self.process.poll() is None, f"Apache exited with {self.process.returncode}:\n{self.log()}"
            return http_status(f"{self.url}/") is not None  # anything (a 404) once it listens
        poll(answers, START_SECONDS, f"Apache on port {self.port}")
        return self

    def log(self):
        return read_text(self.directory / "stderr.log") + read_text(self.error_log)

    def stop(self):
        """SIGTERM (Apache stops its children and exits), SIGKILL after 10 s; then its directory goes."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.process is not None:
            self.stderr.close()
        shutil.rmtree(self.directory, ignore_errors=True)
