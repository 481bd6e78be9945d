"""Email hygiene: "can this domain receive mail?" asked of DNS (`--email-dns-check`), throwaway
domains from the policy file (`email.disposable`), and "Did you mean ada@gmail.com?" for a
likely typo in the domain.

DNS questions go to a scripted DNS server on loopback (dns_server.py), whose query log shows
what the sign-up server asked and how often. People are plain HTTP clients, each posting from
a loopback address of its own (127.0.X.Y), with their own event stream; one test drives
headless Chromium for the suggestion button, by keyboard, with axe.
"""
import html
import http.client
import json
import re
import subprocess
import threading
import urllib.parse
from pathlib import Path

import pytest
from dnslib import QTYPE, RR, SOA
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import ROOT, SERVER, STRONG_PASSWORD, Person, wait_for, loopback_request, metric
from dns_server import TestDNSServer
from test_accessibility import audit

WAIT = 10  # seconds any one answer may take to show, at most

DOMAINS = {
    "mx.test": "mx", "aonly.test": "a-only", "v6only.test": "aaaa-only", "nullmx.test": "null-mx",
    "gone.test": "nxdomain", "silent.test": "silent", "broken.test": "servfail",
    "gmail.com": "mx", "example.org": "mx", "mailinator.com": "mx", "inbox.mailinator.com": "mx",
}
EMPTY_DOMAINS = {"empty.test"}  # exists (NOERROR), but has no MX, A or AAAA record

THROWAWAY = ("That is a throwaway address. Use one you will keep, so you can always get back into "
             "your account")


def cannot_receive(domain):
    return f"{domain} cannot receive mail. Check the part after the @"


class ScriptedDNS(TestDNSServer):
    """dns_server's TestDNSServer plus domains that exist with no record at all (NODATA for
    MX, A and AAAA), which its behaviours do not cover."""

    __test__ = False

    def __init__(self, behaviours, empty=()):
        self.empty = {name.lower() for name in empty}
        super().__init__(behaviours)

    def names_asked(self):
        """Every name asked about so far, once each."""
        with self._changed:
            return {name for name, _ in self._queries}

    def _answer(self, request):
        qname = str(request.q.qname).lower().rstrip(".")
        if qname not in self.empty:
            return super()._answer(request)
        with self._changed:
            self._queries.append((qname, QTYPE[request.q.qtype]))
            self._changed.notify_all()
        reply = request.reply()
        soa = SOA(f"ns.{qname}", f"hostmaster.{qname}", (1, 3600, 600, 86400, 300))
        reply.add_auth(RR(qname, QTYPE.SOA, rdata=soa, ttl=300))
        return reply


@pytest.fixture
def dns():
    with ScriptedDNS(DOMAINS, EMPTY_DOMAINS) as server:
        yield server


def dns_flags(dns, timeout_ms=1000):
    return ["--email-dns-check", "--dns-server", dns.address, "--email-dns-timeout-ms", str(timeout_ms)]


def write_policy(directory, text, lists=None):
    """A policy file (and list files beside it) in `directory`; returns its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in (lists or {}).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(content)
    path = directory / "policy.yaml"
    path.write_text(text)
    return path


# ---------- people ----------

class Crowd:
    """People at 127.0.<block>.1, .2, …: one address each, so per-address limits stay on."""

    def __init__(self, port, block):
        self.port, self.block, self.people = port, block, []

    def person(self, stream=True, lang=None):
        someone = Person(self.port, f"127.0.{self.block}.{len(self.people) + 1}").open_form(lang)
        self.people.append(someone)
        return someone.open_stream() if stream else someone

    def close(self):
        for someone in self.people:
            someone.close()


@pytest.fixture
def crowds():
    made = []

    def make(server, block):
        made.append(Crowd(server.port, block))
        return made[-1]
    yield make
    for crowd in made:
        crowd.close()


def lookups(server, result):
    return metric(server, "livesignup_email_dns_lookups_total", result=result)


def element_text(page, attribute, value):
    """The text of the first element carrying attribute="value" (tags stripped), or None."""
    match = re.search(rf'<(\w+)[^>]*\b{attribute}="{re.escape(value)}"[^>]*>(.*?)</\1>', page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", match.group(2))).strip() if match else None


def requirement_in_page(page, requirement):
    """(data-state, text) of a requirement's checklist line in served HTML, or None."""
    match = re.search(rf'data-requirement="{re.escape(requirement)}" data-state="(\w+)">.*?'
                      r'<span class="requirement-text">(.*?)</span>', page)
    return (match.group(1), html.unescape(match.group(2))) if match else None


# ---------- "Can receive mail" (DNS) ----------

def test_the_checklist_says_whether_the_email_domain_can_receive_mail(server_with, dns, crowds):
    server = server_with(dns_flags(dns))
    crowd = crowds(server, 11)
    expected = {  # domain: (state, metric result)
        "mx.test": ("met", "accepts_mail"), "aonly.test": ("met", "accepts_mail"),
        "v6only.test": ("met", "accepts_mail"), "nullmx.test": ("unmet", "null_mx"),
        "gone.test": ("unmet", "no_such_domain"), "empty.test": ("unmet", "no_mail_host"),
    }
    people = {domain: crowd.person() for domain in expected}
    assert requirement_in_page(people["mx.test"].page, "email.deliverable") == ("unmet", "Can receive mail")
    assert people["mx.test"].events[0][1]["requirements"]["email.deliverable"] == "unmet"

    # Everyone types at once; each whole address arrives in one edit, left with Tab.
    revs = {domain: someone.edit("email", f"ada@{domain}", touched=True) for domain, someone in people.items()}
    for domain, someone in people.items():
        state, _ = expected[domain]
        someone.until(lambda: [s for s, _ in someone.states_of("email.deliverable")][-1:] == [state]
                      and someone.states_of("email.deliverable")[-1][1] == revs[domain], f"{domain}: {state}")
        assert someone.states_of("email.deliverable") == [("pending", revs[domain]), (state, revs[domain])], \
            f"{domain}: pending while DNS is asked, then its verdict"
        assert someone.requirements["email.format"] == "met"
        message = cannot_receive(domain) if state == "unmet" else ""
        someone.until(lambda: someone.messages.get("email") == message, f"{domain}: message {message!r}")
        snapshot = someone.fresh_snapshot(revs[domain])
        assert snapshot["requirements"]["email.deliverable"] == state and snapshot["messages"]["email"] == message
        assert snapshot["submit"] == {"enabled": False}, "the rest of the form is still empty"
        assert dns.queries_for(domain)[:1] == ["MX"], f"{domain}: the MX question comes first"

    assert dns.queries_for("mx.test") == ["MX"], "an MX answer needs no address question"
    assert dns.count("empty.test", "A") == 1 and dns.count("empty.test", "AAAA") == 1, \
        "no MX: the address records (the implicit MX) are asked for"
    for result, count in (("accepts_mail", 3), ("null_mx", 1), ("no_such_domain", 1), ("no_mail_host", 1),
                          ("failed", 0)):
        assert lookups(server, result) == count, f"{result}: {lookups(server, result)}"


def test_a_silent_or_failing_resolver_lets_the_address_through_and_is_counted(server_with, dns, crowds):
    server = server_with(dns_flags(dns, timeout_ms=200))
    crowd = crowds(server, 12)
    waiting, failing = crowd.person(), crowd.person()

    rev = waiting.edit("email", "ada@silent.test", touched=True)
    assert dns.wait_for_queries("silent.test", 1, timeout=WAIT)
    assert waiting.fresh_snapshot(rev)["requirements"]["email.deliverable"] == "pending", \
        "pending while the question is out"
    failing_rev = failing.edit("email", "bob@broken.test", touched=True)
    waiting.until_state("email.deliverable", "met")
    failing.until_state("email.deliverable", "met")
    assert waiting.states_of("email.deliverable") == [("pending", rev), ("met", rev)]
    assert failing.states_of("email.deliverable") == [("pending", failing_rev), ("met", failing_rev)]
    for someone in (waiting, failing):
        assert someone.fresh_snapshot()["messages"]["email"] == "", "no complaint about an unanswered question"

    assert wait_for(lambda: lookups(server, "failed") == 2, WAIT), lookups(server, "failed")
    assert lookups(server, "accepts_mail") == 0, "a failure is no verdict"
    assert metric(server, "livesignup_upstream_failures_total", upstream="email_dns", reason="timeout") == 1
    # The SERVFAIL is counted too; under Debian's c-ares 1.18 its reason reads "connection"
    # (c-ares reports a server answering SERVFAIL as ECONNREFUSED), so only the sum is checked.
    assert metric(server, "livesignup_upstream_failures_total", upstream="email_dns") == 2

    # A failure is not remembered: the next person's address is asked about again, and a
    # sign-up while DNS fails goes through.
    asked = dns.count("broken.test", "MX")
    late = crowd.person()
    late_rev = late.edit("email", "cy@broken.test", touched=True)
    late.until(lambda: late.states_of("email.deliverable")[-1:] == [("met", late_rev)], "met again")
    assert dns.count("broken.test", "MX") > asked, "asked again after a failure"
    status, headers, page = crowd.person(stream=False).sign_up("dns_outage", "dee@broken.test")
    assert (status, headers.get("location")) == (303, "/welcome"), (status, element_text(page, "data-message", "email"))
    assert wait_for(lambda: lookups(server, "failed") == 4, WAIT), lookups(server, "failed")


def test_a_late_answer_for_an_address_no_longer_typed_is_ignored(server_with, dns, crowds):
    # Each try waits 400 ms: the silent domain's question is out long after the next address
    # was typed and answered.
    server = server_with(dns_flags(dns, timeout_ms=400))
    crowd = crowds(server, 13)
    ada, control = crowd.person(), crowd.person()

    first_rev = ada.edit("email", "ada@silent.test", touched=True)
    control_rev = control.edit("email", "cy@mx.test", touched=True)
    assert dns.wait_for_queries("silent.test", 1, timeout=WAIT), "the first address's question is out"
    rev = ada.edit("email", "ada@gone.test", touched=True)
    ada.until(lambda: ada.messages.get("email") == cannot_receive("gone.test"), "the latest address's verdict")
    # Pending from the first address on (no event repeats it), then the latest one's verdict.
    verdicts = [("pending", first_rev), ("unmet", rev)]
    assert ada.states_of("email.deliverable") == verdicts

    # The silent domain's question ends (it fails, which would say "met") ...
    assert wait_for(lambda: lookups(server, "failed") >= 1, WAIT), "the silent question never ended"
    # ... and an edit of another field after it is heard of before anything it might cause.
    barrier = ada.edit("username", "ada_lovelace")
    ada.until(lambda: any(data.get("rev") == barrier for _, data in ada.events[1:]), "the username edit")
    assert ada.states_of("email.deliverable") == verdicts, \
        "the stale answer for ada@silent.test changed nothing"
    snapshot = ada.fresh_snapshot()
    assert snapshot["rev"] == barrier, "the snapshot is at the latest edit"
    assert snapshot["requirements"]["email.deliverable"] == "unmet"
    assert snapshot["messages"]["email"] == cannot_receive("gone.test")

    # The control person, typing meanwhile, got their own answer only.
    assert control.states_of("email.deliverable") == [("pending", control_rev), ("met", control_rev)]
    assert control.messages["email"] == ""


def test_a_burst_of_keystrokes_costs_one_question_and_the_problem_waits_for_tab(server_with, dns, crowds):
    server = server_with(dns_flags(dns))
    crowd = crowds(server, 23)
    ada = crowd.person()
    # Typed key by key, as quickly as a person types: "ada@gone.t", "ada@gone.te"… are well-formed
    # addresses too, but only the settled one is asked about.
    address = "ada@gone.test"
    for end in range(len("ada@g"), len(address) + 1):
        rev = ada.edit("email", address[:end])
    ada.until(lambda: ada.states_of("email.deliverable")[-1:] == [("unmet", rev)], "the settled address's verdict")
    assert [state for state, _ in ada.states_of("email.deliverable")] == ["pending", "unmet"]
    assert dns.queries_for("gone.test") == ["MX"]
    assert dns.names_asked() == {"gone.test"}, "no question for a half-typed domain"
    assert ada.fresh_snapshot(rev)["messages"]["email"] == "", "no message before the field is left"

    left = ada.edit("email", address, touched=True)
    ada.until(lambda: ada.messages.get("email") == cannot_receive("gone.test"), "the message once left")
    assert ada.fresh_snapshot(left)["requirements"]["email.deliverable"] == "unmet"
    assert dns.queries_for("gone.test") == ["MX"], "leaving the field asks nothing new"


def test_a_domain_asked_about_once_is_not_asked_again_for_the_next_person(server_with, dns, crowds):
    dns.set_behaviour("kept.test", "mx")
    server = server_with(dns_flags(dns))
    crowd = crowds(server, 14)
    first = crowd.person()
    first.edit("email", "ada@kept.test", touched=True)
    first.until_state("email.deliverable", "met")
    assert dns.queries_for("kept.test") == ["MX"]

    # DNS changes its mind; the verdict is kept for 15 minutes, so nobody hears of it yet.
    dns.set_behaviour("kept.test", "nxdomain")
    second = crowd.person()
    rev = second.edit("email", "Bob@Kept.TEST", touched=True)
    second.until(lambda: second.states_of("email.deliverable")[-1:] == [("met", rev)], "the remembered verdict")
    status, headers, _ = first.sign_up("kept_first", "ada@kept.test")
    assert (status, headers.get("location")) == (303, "/welcome")
    assert dns.queries_for("kept.test") == ["MX"], "one question for two people and a sign-up"
    assert lookups(server, "accepts_mail") == 1

    # Control: another domain is asked about as usual.
    third = crowd.person()
    third.edit("email", "cy@aonly.test", touched=True)
    third.until_state("email.deliverable", "met")
    assert dns.queries_for("aonly.test") == ["MX", "A"]
    assert lookups(server, "accepts_mail") == 2


def test_addresses_the_email_rules_refuse_are_never_asked_about(server_with, dns, crowds, tmp_path):
    policy = write_policy(tmp_path, "name: hygiene\nemail:\n  disposable: [mailinator.com]\n")
    server = server_with(dns_flags(dns) + ["--policy", str(policy)])
    crowd = crowds(server, 15)
    ada = crowd.person()

    ada.edit("email", "ada@mailinator.com", touched=True)
    ada.until(lambda: ada.messages.get("email") == THROWAWAY, "the throwaway message")
    ada.edit("email", "ada@inbox.mailinator.com", touched=True)
    ada.edit("email", "ada@gone", touched=True)
    ada.until(lambda: ada.messages.get("email") not in ("", THROWAWAY), "the format message")
    assert ada.requirements["email.format"] == "unmet"
    assert all(state == "unmet" for state, _ in ada.states_of("email.deliverable")), \
        "never pending: nothing is asked"
    assert ada.requirements["email.deliverable"] == "unmet"
    status, _, page = crowd.person(stream=False).sign_up("thrown_away", "ada@mailinator.com")
    assert status == 422 and THROWAWAY in page

    # The same person's next valid address is asked about (after the same debounce the
    # refused ones would have had), and nothing else was.
    rev = ada.edit("email", "ada@mx.test", touched=True)
    ada.until(lambda: ada.states_of("email.deliverable")[-1:] == [("met", rev)], "met")
    assert [state for state, _ in ada.states_of("email.deliverable")] == ["pending", "met"]
    assert dns.count("mailinator.com") == dns.count("inbox.mailinator.com") == 0
    assert dns.names_asked() == {"mx.test"}, "nothing else was asked"


def test_signing_up_at_a_domain_that_cannot_receive_mail_is_refused_and_keeps_the_name_free(
        server_with, dns, crowds):
    server = server_with(dns_flags(dns))
    crowd = crowds(server, 16)
    for attempt, domain in enumerate(("gone.test", "nullmx.test", "empty.test")):
        grace = crowd.person(stream=False)
        status, _, page = grace.sign_up("grace_hopper", f"grace@{domain}")
        assert status == 422, (domain, status)
        assert page.split("<title>")[1].startswith("Error: ")
        assert element_text(page, "data-message", "email") == cannot_receive(domain)
        assert f'<a href="#email">{cannot_receive(domain)}</a>' in page, "listed in the error summary"
        assert requirement_in_page(page, "email.deliverable")[0] == "unmet"
        assert re.search(r'name="email"[^>]*value="grace@' + re.escape(domain), page), "the address is kept"
        assert lookups(server, "accepts_mail") == 0
    grace = crowd.person(stream=False)
    status, headers, page = grace.sign_up("grace_hopper", "grace@mx.test")
    assert (status, headers.get("location")) == (303, "/welcome"), \
        f"the name was not taken by the refused sign-ups: {element_text(page, 'data-message', 'username')}"
    status, _, page = crowd.person(stream=False).sign_up("grace_hopper", "other@mx.test")
    assert status == 422 and "That username is taken" in page, "control: now it is taken"


# ---------- Throwaway addresses (policy file) ----------

def test_throwaway_domains_and_their_subdomains_are_refused_live_and_on_submit(server_with, crowds, tmp_path):
    policy = write_policy(tmp_path, "name: hygiene\nemail:\n  disposable_file: lists/disposable.txt\n"
                                    "  disposable: [tempmail.test]\n",
                          {"lists/disposable.txt": "# throwaway mail domains, one a line\n\nmailinator.com\n"
                                                   "guerrillamail.com\n# 10minutemail.com is not listed\n"})
    server = server_with(["--policy", str(policy)])  # run from the repository, not the policy's folder
    crowd = crowds(server, 17)
    assert requirement_in_page(crowd.person(stream=False).page, "email.disposable") == \
        ("unmet", "Not a throwaway address")

    verdicts = {
        "ada@mailinator.com": "unmet", "ada@inbox.mailinator.com": "unmet", "ada@guerrillamail.com": "unmet",
        "ada@tempmail.test": "unmet", "ada@MAILINATOR.com": "unmet",
        # Controls: a name that only ends like a listed one, a listed name under another
        # domain, a commented-out line, and an ordinary address.
        "ada@notmailinator.com": "met", "ada@mailinator.com.example.org": "met",
        "ada@10minutemail.com": "met", "ada@example.org": "met",
    }
    people = {address: crowd.person() for address in verdicts}
    revs = {address: someone.edit("email", address, touched=True) for address, someone in people.items()}
    for address, someone in people.items():
        snapshot = someone.fresh_snapshot(revs[address])
        assert snapshot["requirements"]["email.format"] == "met", address
        assert snapshot["requirements"]["email.disposable"] == verdicts[address], address
        assert snapshot["messages"]["email"] == (THROWAWAY if verdicts[address] == "unmet" else ""), address
    # Before the field is left the checklist says so, the message waits.
    quiet = crowd.person()
    rev = quiet.edit("email", "ada@mailinator.com")
    snapshot = quiet.fresh_snapshot(rev)
    assert snapshot["requirements"]["email.disposable"] == "unmet" and snapshot["messages"]["email"] == ""

    status, _, page = crowd.person(stream=False).sign_up("throwaway_tester", "ada@sub.guerrillamail.com")
    assert status == 422 and element_text(page, "data-message", "email") == THROWAWAY
    assert requirement_in_page(page, "email.disposable")[0] == "unmet"
    status, headers, _ = crowd.person(stream=False).sign_up("throwaway_tester", "ada@example.org")
    assert (status, headers.get("location")) == (303, "/welcome"), "a kept address, the same name"


@pytest.mark.parametrize("email_section,list_files,line,words", [
    ("email:\n  disposable_file: missing.txt\n", {}, 3, "missing.txt"),
    ("email:\n  disposable_file: disposable.txt\n  throwaway: [a.test]\n", {"disposable.txt": "a.test\n"},
     4, "email.throwaway"),
], ids=["missing-list-file", "unknown-setting"])
def test_a_broken_email_policy_stops_the_server_naming_the_file_and_line(tmp_path, email_section, list_files,
                                                                          line, words):
    policy = write_policy(tmp_path, "name: hygiene\n" + email_section, list_files)
    result = subprocess.run(
        [str(SERVER), "--port", "0", "--database", str(tmp_path / "accounts.sqlite"), "--policy", str(policy),
         "--public-directory", str(ROOT / "Public"), "--templates-directory", str(ROOT / "Templates")],
        capture_output=True, text=True, timeout=20)
    assert result.returncode != 0
    assert "listening" not in result.stdout, result.stdout
    assert f"{policy}:{line}:" in result.stderr and words in result.stderr, result.stderr


@pytest.mark.parametrize("flags,reason", [
    (["--dns-server", "127.0.0.1:53"], "--dns-server is for --email-dns-check"),
    (["--email-dns-check", "--dns-server", "localhost:53"], "'localhost' is not an IPv4 address"),
    (["--email-dns-check", "--email-dns-timeout-ms", "50"], "--email-dns-timeout-ms must be 100 to 30000"),
], ids=["resolver-without-check", "resolver-by-name", "timeout-too-short"])
def test_unusable_dns_settings_stop_the_server_with_the_reason(tmp_path, flags, reason):
    result = subprocess.run(
        [str(SERVER), "--port", "0", "--database", str(tmp_path / "accounts.sqlite"),
         "--public-directory", str(ROOT / "Public"), "--templates-directory", str(ROOT / "Templates")] + flags,
        capture_output=True, text=True, timeout=20)
    assert result.returncode != 0 and "listening" not in result.stdout
    assert reason in result.stderr, result.stderr


# ---------- "Did you mean …?" ----------

def test_a_likely_typo_in_the_domain_is_suggested_once_the_field_was_left(server_with, crowds):
    server = server_with([])
    crowd = crowds(server, 18)
    ada = crowd.person()
    assert ada.events[0][1]["suggestions"] == {}
    assert requirement_in_page(ada.page, "email.deliverable") is None, "no DNS check unless asked for"

    rev = ada.edit("email", "ada@gmial.com")
    assert ada.fresh_snapshot(rev)["suggestions"] == {}, "not while the person is still typing"
    rev = ada.edit("email", "ada@gmial.com", touched=True)
    ada.until(lambda: ("suggestion", {"field": "email", "value": "ada@gmail.com", "rev": rev}) in ada.events,
              "the suggestion once the field was left")
    assert ada.fresh_snapshot(rev)["suggestions"] == {"email": "ada@gmail.com"}
    assert ada.requirements["email.format"] == "met" and ada.messages["email"] == "", "a suggestion, no problem"

    rev = ada.edit("email", "ada@gmail.com", touched=True)
    ada.until(lambda: ("suggestion", {"field": "email", "value": "", "rev": rev}) in ada.events,
              "the suggestion withdrawn")
    assert ada.fresh_snapshot(rev)["suggestions"] == {}
    assert [data["value"] for name, data in ada.events if name == "suggestion"] == ["ada@gmail.com", ""], \
        "one event each way, never a repeat"

    cases = {
        "bob@hotmial.com": "bob@hotmail.com", "cy@yahooo.com": "cy@yahoo.com", "ada@gmail.con": "ada@gmail.com",
        "Dee.Lovelace@GMIAL.com": "Dee.Lovelace@gmail.com",
        "ada@example.org": None, "ada@gmx.at": None, "ada@gmx.de": None, "ada@university.ac.uk": None,
    }
    for address, suggestion in cases.items():
        rev = ada.edit("email", address, touched=True)
        snapshot = ada.fresh_snapshot(rev)
        assert snapshot["suggestions"] == ({"email": suggestion} if suggestion else {}), address
        assert snapshot["requirements"]["email.format"] == "met", address


def test_a_typo_suggestion_never_blocks_the_sign_up(server_with, crowds):
    server = server_with([])
    crowd = crowds(server, 19)
    ada = crowd.person()
    ada.edit("username", "ada_typo", touched=True)
    ada.edit("email", "ada@gmial.com", touched=True)
    ada.edit("password", STRONG_PASSWORD, touched=True)
    ada.edit("confirm", STRONG_PASSWORD, touched=True)
    ada.until(lambda: ada.suggestions == {"email": "ada@gmail.com"}, "the suggestion")
    ada.until(lambda: any(name == "submit" and data["enabled"] for name, data in ada.events), "ready to sign up")
    status, headers, _ = ada.sign_up("ada_typo", "ada@gmial.com")
    assert (status, headers.get("location")) == (303, "/welcome")


def test_a_failed_submit_shows_the_suggestion_on_the_page_and_in_the_live_stream(server_with, crowds):
    server = server_with([])
    crowd = crowds(server, 20)
    ada = crowd.person()
    rev = ada.edit("email", "ada@gmial.com")
    assert ada.fresh_snapshot(rev)["suggestions"] == {}

    # Without JavaScript: the plain post with a password missing.
    status, _, page = ada.sign_up("ada_nojs", "ada@gmial.com", password="")
    assert status == 422
    slot = re.search(r'<p class="suggestion"[^>]*data-suggestion="email"[^>]*>(.*?)</p>', page, re.S)
    assert slot, "the suggestion's slot"
    assert slot.group(1) == "Did you mean <strong>ada@gmail.com</strong>?", slot.group(1)
    assert element_text(page, "data-message", "email") == "", "a suggestion is not an error"
    assert '<a href="#email"' not in page
    # The live page resumes with every problem shown, the suggestion among them.
    ada.until(lambda: ada.suggestions == {"email": "ada@gmail.com"}, "the suggestion after the failed submit")

    # Control: an address without a typo gets an empty slot; German words for a German page.
    status, _, page = crowd.person(stream=False).sign_up("cy_nojs", "cy@example.org", password="")
    assert status == 422 and element_text(page, "data-suggestion", "email") == ""
    german = crowd.person(stream=False, lang="de")
    status, _, page = german.sign_up("dee_nojs", "dee@hotmial.com", password="", lang="de")
    assert status == 422
    assert re.search(r'data-suggestion="email"[^>]*>Meinten Sie <strong>dee@hotmail.com</strong>\?</p>', page), \
        element_text(page, "data-suggestion", "email")


def test_the_policy_file_chooses_which_domains_typos_are_corrected_to(server_with, crowds, tmp_path):
    own = write_policy(tmp_path / "own", "name: own\nemail:\n  common_domains: [gmail.com, mail.example.org]\n")
    off = write_policy(tmp_path / "off", "name: off\nemail:\n  common_domains: []\n")
    for policy, block, cases in (
            (own, 21, {"ada@mail.exampel.org": "ada@mail.example.org", "ada@gmial.com": "ada@gmail.com",
                       "ada@hotmial.com": None}),
            (off, 22, {"ada@gmial.com": None, "ada@gmail.con": None})):
        crowd = crowds(server_with(["--policy", str(policy)]), block)
        for address, suggestion in cases.items():
            someone = crowd.person()
            rev = someone.edit("email", address, touched=True)
            assert someone.fresh_snapshot(rev)["suggestions"] == ({"email": suggestion} if suggestion else {}), \
                f"{policy.parent.name}: {address}"


# ---------- In a browser ----------

def suggestion_slot(page):
    return page.driver.find_element(By.CSS_SELECTOR, 'p.suggestion[data-suggestion="email"]')


def accept_button(page):
    found = page.driver.find_elements(By.CSS_SELECTOR, 'button[data-accept-suggestion="email"]')
    return found[0] if found else None


def test_the_suggestion_is_reached_by_keyboard_and_accepting_it_fixes_the_address(server_with, dns, browser):
    dns.set_behaviour("gmial.com", "nxdomain")
    server = server_with(dns_flags(dns))
    driver = browser.driver
    browser.open(server.url)
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.type("email", "ada@gmial.com")
    assert dns.wait_for_queries("gmial.com", 1, timeout=WAIT), "the typed domain is asked about"
    browser.until(lambda: browser.state("email.deliverable") == "unmet", "DNS's word on gmial.com")
    assert suggestion_slot(browser).text == "", "no suggestion while typing"

    browser.field("email").send_keys(Keys.TAB)  # leaving the field shows its problems
    browser.until(lambda: accept_button(browser) is not None, "the suggestion button")
    assert accept_button(browser).text == "ada@gmail.com"
    assert suggestion_slot(browser).text == "Did you mean ada@gmail.com?"
    browser.until(lambda: browser.message("email") == cannot_receive("gmial.com"), "the domain's problem")
    audit(browser, "email-suggestion-en")

    # Back to the address, then one Tab: the suggestion comes right after it.
    browser.field("email").click()
    assert driver.switch_to.active_element == browser.field("email")
    ActionChains(driver).send_keys(Keys.TAB).perform()
    assert driver.switch_to.active_element == accept_button(browser), \
        f"focused: {driver.switch_to.active_element.get_attribute('outerHTML')}"
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    browser.until(lambda: browser.field("email").get_attribute("value") == "ada@gmail.com", "the address fixed")
    assert driver.switch_to.active_element == browser.field("email"), "focus back in the field"
    assert suggestion_slot(browser).text == "" and accept_button(browser) is None
    browser.until_state("email.deliverable", "met")
    browser.until(lambda: browser.message("email") == "", "the problem gone")
    assert browser.state("email.format") == "met"
    assert dns.count("gmail.com", "MX") == 1, "the server asked about the accepted address"
    assert browser.field("email").get_attribute("aria-invalid") is None
    browser.screenshot("email-suggestion-accepted")

    # In German.
    browser.open(server.url + "/?lang=de")
    browser.until(lambda: not browser.button_enabled(), "live")
    browser.type("email", "ada@gmial.com", leave=True)
    browser.until(lambda: suggestion_slot(browser).text == "Meinten Sie ada@gmail.com?", "the German suggestion")
    audit(browser, "email-suggestion-de")
