"""Mail goes out through libcurl's SMTP client, tested against a real SMTP server (issue 21's
transport): aiosmtpd on loopback with STARTTLS required before AUTH, a certificate of the
test's own, and a user and password. `signup-server mail test` sends one mail; the server
receives it encrypted and authenticated, as multipart text + HTML with the headers a mail from
a sign-up service must have. A wrong password, a server that is down and a certificate nobody
trusts are refused with the reason, and nothing is sent.
"""
import email
import email.policy
import errno
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from conftest import SERVER, free_port

import ssl


class Mailbox:
    def __init__(self):
        self.messages = []
        self.sessions = []

    async def handle_DATA(self, server, session, envelope):
        self.sessions.append({"tls": session.ssl is not None, "user": getattr(session, "login_data", None),
                              "from": envelope.mail_from, "to": list(envelope.rcpt_tos)})
        self.messages.append(email.message_from_bytes(envelope.original_content, policy=email.policy.default))
        return "250 OK"


def authenticate(server, session, envelope, mechanism, auth_data):
    ok = auth_data.login == b"mailer" and auth_data.password == b"s3cret-pass"
    return AuthResult(success=ok, handled=False)



@pytest.fixture
def smtp_server():
    with tempfile.TemporaryDirectory() as directory:
        certificate, key = Path(directory) / "cert.pem", Path(directory) / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                        str(certificate), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(certificate), str(key))
        mailbox = Mailbox()
        port = free_port()
        controller = Controller(mailbox, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
                                authenticator=authenticate, auth_require_tls=True)
        controller.start()
        try:
            yield mailbox, port, str(certificate)
        finally:
            controller.stop()


def mail_test(port, certificate, password="s3cret-pass", user="mailer"):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LIVESIGNUP_")}
    environment["LIVESIGNUP_SMTP_PASSWORD"] = password
    arguments = [str(SERVER), "mail", "test", "--smtp-url", f"smtp://{user}@127.0.0.1:{port}", "--smtp-require-tls",
                 "--mail-from", "Anmeldung Müller <noreply@example.org>", "--to", "ada@example.org"]
    if certificate:
        arguments += ["--smtp-ca-file", certificate]
    return subprocess.run(arguments, capture_output=True, text=True, env=environment, timeout=60)


def test_a_mail_goes_out_encrypted_authenticated_and_well_formed(smtp_server):
    mailbox, port, certificate = smtp_server
    result = mail_test(port, certificate)
    assert result.returncode == 0, result.stderr
    assert "Sent a test mail to ada@example.org" in result.stdout
    assert len(mailbox.messages) == 1
    session = mailbox.sessions[0]
    assert session["tls"], "STARTTLS before anything else"
    assert session["from"] == "noreply@example.org" and session["to"] == ["ada@example.org"]
    message = mailbox.messages[0]
    assert message["From"] == "Anmeldung Müller <noreply@example.org>", "the display name, RFC 2047 encoded and decoded"
    assert message["Subject"] == "LiveSignup: Testnachricht / test message ✓"
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["Message-ID"].startswith("<") and message["Message-ID"].endswith("@example.org>")
    assert message["Date"] is not None
    assert message.get_content_type() == "multipart/alternative" or any(
        part.get_content_type() == "multipart/alternative" for part in message.walk())
    kinds = {part.get_content_type(): part.get_content() for part in message.walk() if not part.is_multipart()}
    assert "funktionieren" in kinds["text/plain"] and "<code>signup-server mail test</code>" in kinds["text/html"]


def test_refusals_say_why_and_send_nothing(smtp_server):
    mailbox, port, certificate = smtp_server
    wrong = mail_test(port, certificate, password="guess")
    assert wrong.returncode != 0 and "did not take the mail" in wrong.stderr, wrong.stderr
    untrusted = mail_test(port, None)
    assert untrusted.returncode != 0 and "did not take the mail" in untrusted.stderr, "a certificate nobody trusts"
    down = mail_test(free_port(), certificate)
    assert down.returncode != 0 and "did not take the mail" in down.stderr
    assert mailbox.messages == []


def own_network_address():
    """An IPv4 address of this machine that is not loopback: the mail server reached as if it
    were across the network. Failing a global one, a /32 added to `lo` for the test (root)."""
    found = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    for line in found.splitlines():
        address = line.split()[3].split("/")[0]
        if not address.startswith("127."):
            return address, None
    subprocess.run(["ip", "addr", "add", "10.254.254.254/32", "dev", "lo"], check=True, capture_output=True)
    return "10.254.254.254", "10.254.254.254/32"


@pytest.fixture
def plain_smtp_server():
    """aiosmtpd offering no STARTTLS at all (as a man in the middle who stripped it would), and
    taking AUTH in clear, so the test sees whether a password would have crossed the wire."""
    address, added = own_network_address()
    logins = []

    def record(server, session, envelope, mechanism, auth_data):
        logins.append(auth_data.login)
        return AuthResult(success=True, handled=False)

    mailbox = Mailbox()
    # aiosmtpd must be told its port before it binds, on every address: a port found free on
    # loopback was once taken on another address (or by another worker) by the time it bound
    # (EADDRINUSE, in make test). A few fresh ports, then the error.
    for attempt in range(5):
        port = free_port()
        controller = Controller(mailbox, hostname="0.0.0.0", port=port, authenticator=record, auth_require_tls=False)
        try:
            controller.start()
            break
        except OSError as error:
            if error.errno != errno.EADDRINUSE or attempt == 4:
                raise
    try:
        yield mailbox, port, address, logins
    finally:
        controller.stop()
        if added:
            subprocess.run(["ip", "addr", "del", added, "dev", "lo"], capture_output=True)


def plain_mail_test(host, port, *flags):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LIVESIGNUP_")}
    environment["LIVESIGNUP_SMTP_PASSWORD"] = "s3cret-pass"
    arguments = [str(SERVER), "mail", "test", "--smtp-url", f"smtp://mailer@{host}:{port}",
                 "--mail-from", "noreply@example.org", "--to", "ada@example.org", *flags]
    return subprocess.run(arguments, capture_output=True, text=True, env=environment, timeout=60)


def test_a_server_across_the_network_without_starttls_gets_no_password_and_no_mail(plain_smtp_server):
    """Issue 40, item 5: STARTTLS was used only when offered, so a stripped offer sent AUTH PLAIN
    and the codes in clear. Now TLS is required unless the server is on loopback or the
    operator says --smtp-allow-plaintext, which warns."""
    mailbox, port, address, logins = plain_smtp_server
    refused = plain_mail_test(address, port)
    assert refused.returncode != 0 and "did not take the mail" in refused.stderr, refused.stderr
    assert logins == [] and mailbox.messages == [], "no password and no mail crossed the network in clear"

    allowed = plain_mail_test(address, port, "--smtp-allow-plaintext")
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: --smtp-allow-plaintext" in allowed.stderr and "unencrypted" in allowed.stderr
    assert logins == [b"mailer"] and len(mailbox.messages) == 1

    relay = plain_mail_test("127.0.0.1", port)
    assert relay.returncode == 0, "a relay on this machine may be plain: " + relay.stderr
    assert "warning" not in relay.stderr
    assert len(mailbox.messages) == 2
