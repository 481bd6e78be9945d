"""A scripted DNS server on loopback for the sign-up server's "can this email domain receive
mail?" check.

The server resolves through c-ares, so tests start `TestDNSServer` and pass
`--dns-server <server.address>` to it. Each domain gets one behaviour (an MX record, only an
address, a null MX, NXDOMAIN, SERVFAIL, no answer at all...), and every query is recorded so a
test can wait for the lookup to happen and check which record types were asked for.

All DNS encoding and decoding is done by dnslib; this module only decides what to answer.
"""
import socket
import threading

from dnslib import AAAA, MX, QTYPE, RCODE, RR, SOA, A, DNSError, DNSLabel, DNSRecord
from dnslib.server import DNSLogger, DNSServer

BEHAVIOURS = {"mx", "a-only", "aaaa-only", "null-mx", "nxdomain", "silent", "servfail"}
TTL = 300


def _normalise(name):
    return str(name).lower().rstrip(".")


class _Drop(DNSError):
    """Raised by the resolver for "silent" domains; dnslib's handler catches DNSError and sends
    nothing, which is exactly a server that never answers."""


class _Resolver:
    def __init__(self, owner):
        self.owner = owner

    def resolve(self, request, handler):
        return self.owner._answer(request)


class TestDNSServer:
    """DNS server on 127.0.0.1:<ephemeral port>, UDP and TCP (c-ares retries truncated answers
    over TCP). Use as a context manager or call `stop()`."""

    __test__ = False  # its name starts with "Test": stop pytest from collecting it

    def __init__(self, behaviours=None):
        # One Condition (on an RLock) guards the behaviours and the query log; waiters are
        # woken on every query.
        self._changed = threading.Condition()
        self._behaviours, self._queries = {}, []
        for domain, behaviour in (behaviours or {}).items():
            self.set_behaviour(domain, behaviour)
        self._servers = self._bind()
        self.port = self._servers[0].server.server_address[1]
        self.address = f"127.0.0.1:{self.port}"
        for server in self._servers:
            server.start_thread()

    def _bind(self):
        # UDP picks the ephemeral port and TCP takes the same number; in the rare case that the
        # number is taken for TCP, try another.
        resolver, quiet = _Resolver(self), DNSLogger(logf=lambda *_: None)
        for _ in range(20):
            udp = DNSServer(resolver, "127.0.0.1", 0, logger=quiet)
            port = udp.server.server_address[1]
            try:
                tcp = DNSServer(resolver, "127.0.0.1", port, tcp=True, logger=quiet)
            except OSError:
                udp.server.server_close()
                continue
            return [udp, tcp]
        raise OSError("no port free for both UDP and TCP")

    def stop(self):
        for server in self._servers:
            server.server.shutdown()  # returns once serve_forever has exited
            server.server.server_close()
            server.thread.join()
        self._servers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # Configuration and the query log

    def set_behaviour(self, domain, behaviour):
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"unknown behaviour {behaviour!r}; expected one of {sorted(BEHAVIOURS)}")
        with self._changed:
            self._behaviours[_normalise(domain)] = behaviour

    def queries_for(self, name):
        name = _normalise(name)
        with self._changed:
            return [qtype for qname, qtype in self._queries if qname == name]

    def count(self, name, qtype=None):
        return sum(1 for t in self.queries_for(name) if qtype is None or t == qtype)

    def wait_for_queries(self, name, count, timeout=10, qtype=None):
        with self._changed:
            return self._changed.wait_for(lambda: self.count(name, qtype) >= count, timeout)

    def reset_queries(self):
        with self._changed:
            self._queries.clear()

    # Answering

    def _answer(self, request):
        qname, qtype = _normalise(request.q.qname), QTYPE[request.q.qtype]
        with self._changed:
            self._queries.append((qname, qtype))
            self._changed.notify_all()
            behaviour = self._behaviours.get(qname)
            parent = qname.split(".", 1)[1] if qname.startswith("mail.") else None
            parent_is_mx = behaviour is None and self._behaviours.get(parent) == "mx"

        reply = request.reply()  # copies the id and question, sets qr/aa
        if behaviour == "silent":
            raise _Drop(qname)
        if behaviour == "servfail":
            reply.header.rcode = RCODE.SERVFAIL
            return reply
        if parent_is_mx:  # mail.<domain> is the exchange named by an "mx" domain
            zone, records = parent, {"A": A("192.0.2.25")}
        elif behaviour in (None, "nxdomain"):
            reply.header.rcode = RCODE.NXDOMAIN
            return reply
        else:
            zone, records = qname, {
                "mx": {"MX": MX(f"mail.{qname}", 10)},
                "a-only": {"A": A("192.0.2.1")},
                "aaaa-only": {"AAAA": AAAA("2001:db8::1")},
                # RFC 7505: preference 0, exchange "." (dnslib packs the root label as one 0 byte)
                "null-mx": {"MX": MX(DNSLabel("."), 0), "A": A("192.0.2.2")},
            }[behaviour]

        if qtype in records:
            reply.add_answer(RR(request.q.qname, QTYPE.reverse[qtype], rdata=records[qtype], ttl=TTL))
        else:
            # NODATA: the name exists but has no such record; the SOA lets resolvers cache that.
            soa = SOA(f"ns.{zone}", f"hostmaster.{zone}", (1, 3600, 600, 86400, TTL))
            reply.add_auth(RR(zone, QTYPE.SOA, rdata=soa, ttl=TTL))
        return reply


if __name__ == "__main__":
    def ask(port, name, qtype, tcp=False):
        return DNSRecord.parse(DNSRecord.question(name, qtype).send("127.0.0.1", port, tcp=tcp, timeout=2))

    domains = {"mx.test": "mx", "aonly.test": "a-only", "v6only.test": "aaaa-only",
               "nullmx.test": "null-mx", "gone.test": "nxdomain", "silent.test": "silent",
               "broken.test": "servfail"}
    with TestDNSServer(domains) as dns:
        p = dns.port
        r = ask(p, "MX.test.", "MX")
        assert r.header.rcode == RCODE.NOERROR and str(r.rr[0].rdata.label) == "mail.mx.test."
        assert r.rr[0].rdata.preference == 10 and r.rr[0].ttl == TTL
        assert str(ask(p, "mail.mx.test", "A").rr[0].rdata) == "192.0.2.25"
        r = ask(p, "mx.test", "A")
        assert not r.rr and r.auth[0].rtype == QTYPE.SOA and r.header.rcode == RCODE.NOERROR
        r = ask(p, "nullmx.test", "MX")
        assert str(r.rr[0].rdata.label) == "." and r.rr[0].rdata.preference == 0
        assert str(ask(p, "nullmx.test", "A").rr[0].rdata) == "192.0.2.2"
        assert not ask(p, "aonly.test", "MX").rr and str(ask(p, "aonly.test", "A").rr[0].rdata) == "192.0.2.1"
        assert not ask(p, "aonly.test", "AAAA").rr
        assert not ask(p, "v6only.test", "A").rr and str(ask(p, "v6only.test", "AAAA").rr[0].rdata) == "2001:db8::1"
        assert ask(p, "gone.test", "MX").header.rcode == RCODE.NXDOMAIN
        assert ask(p, "unknown.test", "A").header.rcode == RCODE.NXDOMAIN
        assert ask(p, "broken.test", "MX").header.rcode == RCODE.SERVFAIL
        assert ask(p, "mx.test", "MX", tcp=True).rr[0].rdata.preference == 10
        try:
            ask(p, "silent.test", "MX")
            raise AssertionError("silent.test answered")
        except socket.timeout:
            pass
        assert dns.queries_for("silent.test") == ["MX"] and dns.count("mx.test", "MX") == 2
        assert dns.wait_for_queries("aonly.test", 3) and not dns.wait_for_queries("aonly.test", 4, timeout=0.1)
        dns.set_behaviour("silent.test", "mx")
        assert ask(p, "silent.test", "MX").rr
        dns.reset_queries()
        assert dns.count("mx.test") == 0
    print("ok")
