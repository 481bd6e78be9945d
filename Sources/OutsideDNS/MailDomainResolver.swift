import CAres
import Foundation

/// What DNS says about a domain as a destination for mail (RFC 5321 §5.1, RFC 7505).
public enum MailDomainVerdict: Equatable, Sendable {
    /// It has mail exchangers, or no MX but an address record (the "implicit MX").
    case acceptsMail
    /// Its only MX is the null MX ("0 ."): it says it takes no mail.
    case refusesMail
    /// The domain exists but has neither MX nor A/AAAA records.
    case noMailHost
    /// The domain does not exist (NXDOMAIN).
    case noSuchDomain

    public var canReceiveMail: Bool { self == .acceptsMail }

    /// For logs and metric labels.
    public var name: String {
        switch self {
        case .acceptsMail: "accepts_mail"
        case .refusesMail: "null_mx"
        case .noMailHost: "no_mail_host"
        case .noSuchDomain: "no_such_domain"
        }
    }
}

/// Why DNS gave no verdict: the resolver was silent, failed or refused, or too many look-ups
/// were already waiting.
public struct MailDomainLookupFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// A short label for metrics: timeout, servfail, refused, connection, busy, other.
    public let reason: String
    public let detail: String

    public init(reason: String, detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { detail }
}

/// Answers "can this domain receive mail?" asynchronously.
public protocol MailDomainResolving: Sendable {
    /// Calls `completion` once, on a thread of the resolver's (it must not block there).
    func verdict(for domain: String, completion: @escaping @Sendable (Result<MailDomainVerdict, MailDomainLookupFailure>) -> Void)
}

/// Where the resolver asks and how long it waits.
public struct DNSResolverSettings: Sendable, Equatable {
    /// "host:port" resolvers (IP addresses; IPv6 in brackets), or empty for the system's
    /// (/etc/resolv.conf).
    public var servers: [String]
    /// How long one try waits for an answer.
    public var timeoutMilliseconds: Int
    /// Tries per question, each against the next server.
    public var tries: Int
    /// Look-ups waiting at once; more are refused at once ("busy") instead of queueing.
    public var maximumInFlight: Int

    public init(servers: [String] = [], timeoutMilliseconds: Int = 1500, tries: Int = 2, maximumInFlight: Int = 256) {
        self.servers = servers
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tries = tries
        self.maximumInFlight = maximumInFlight
    }

    /// Why `server` is not a resolver address c-ares takes ("127.0.0.1:53", "[::1]:5353"),
    /// or nil when it is.
    public static func problem(with server: String) -> String? {
        let host: Substring, port: Substring
        if server.hasPrefix("[") {
            guard let close = server.firstIndex(of: "]") else { return "an IPv6 address must be closed with ']', like [::1]:53" }
            host = server[server.index(after: server.startIndex)..<close]
            let rest = server[server.index(after: close)...]
            guard rest.hasPrefix(":") else { return "give the port after the address, like [::1]:53" }
            port = rest.dropFirst()
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(host), &address) == 1 else { return "'\(host)' is not an IPv6 address" }
        } else {
            guard let colon = server.lastIndex(of: ":") else { return "give host:port, like 127.0.0.1:53" }
            host = server[..<colon]
            port = server[server.index(after: colon)...]
            var address = in_addr()
            guard inet_pton(AF_INET, String(host), &address) == 1 else {
                return "'\(host)' is not an IPv4 address (a resolver is named by its address; IPv6 goes in brackets)"
            }
        }
        guard let number = Int(port), (1...65535).contains(number) else { return "'\(port)' is not a port from 1 to 65535" }
        return nil
    }
}

/// Asks DNS through c-ares (Debian's libc-ares): an MX question first, then A and AAAA when
/// there is no MX. One thread of its own runs c-ares's event loop; every c-ares call happens
/// on it (a channel is not safe to share between threads in this version), so callers only
/// hand questions over a lock and a pipe.
public final class CAresMailDomainResolver: MailDomainResolving, @unchecked Sendable {
    public typealias Completion = @Sendable (Result<MailDomainVerdict, MailDomainLookupFailure>) -> Void

    private let settings: DNSResolverSettings
    private let lock = NSLock()
    // Under `lock`.
    private var submitted: [Question] = []
    private var inFlight = 0
    private var stopping = false
    // The loop thread's own.
    private var channel: OpaquePointer?
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    /// One domain's look-up as it goes from MX to A to AAAA.
    final class Question {
        enum Stage { case mx, a, aaaa }
        let domain: String
        var stage = Stage.mx
        let completion: Completion
        unowned let resolver: CAresMailDomainResolver

        init(domain: String, completion: @escaping Completion, resolver: CAresMailDomainResolver) {
            self.domain = domain
            self.completion = completion
            self.resolver = resolver
        }
    }

    /// - Throws: `MailDomainLookupFailure` when c-ares cannot start or refuses the servers.
    public init(settings: DNSResolverSettings) throws {
        self.settings = settings
        if let bad = settings.servers.lazy.compactMap(DNSResolverSettings.problem(with:)).first {
            throw MailDomainLookupFailure(reason: "settings", detail: bad)
        }
        let started = ares_library_init(ARES_LIB_INIT_ALL)
        guard started == ARES_SUCCESS else {
            throw MailDomainLookupFailure(reason: "settings", detail: "c-ares did not start: \(String(cString: ares_strerror(started)))")
        }
        var options = ares_options()
        options.timeout = Int32(settings.timeoutMilliseconds)
        options.tries = Int32(settings.tries)
        var channel: OpaquePointer?
        let created = ares_init_options(&channel, &options, ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES)
        guard created == ARES_SUCCESS, let channel else {
            throw MailDomainLookupFailure(reason: "settings", detail: "c-ares could not make a channel: \(String(cString: ares_strerror(created)))")
        }
        if !settings.servers.isEmpty {
            let set = ares_set_servers_ports_csv(channel, settings.servers.joined(separator: ","))
            guard set == ARES_SUCCESS else {
                ares_destroy(channel)
                throw MailDomainLookupFailure(reason: "settings", detail: "c-ares refused the servers \(settings.servers): \(String(cString: ares_strerror(set)))")
            }
        }
        self.channel = channel
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            ares_destroy(channel)
            throw MailDomainLookupFailure(reason: "settings", detail: "no pipe to wake the resolver: \(String(cString: strerror(errno)))")
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
        // Neither end may block: a full pipe already means "wake up", and the loop drains it.
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        // The thread holds the resolver until `shutdown()` ends its loop.
        let thread = Thread { self.run() }
        thread.name = "dns-resolver"
        self.thread = thread
        thread.start()
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    public func verdict(for domain: String, completion: @escaping Completion) {
        let refusal: MailDomainLookupFailure? = lock.withLock {
            if stopping { return MailDomainLookupFailure(reason: "busy", detail: "the resolver is shutting down") }
            guard inFlight < settings.maximumInFlight else {
                return MailDomainLookupFailure(reason: "busy", detail: "\(inFlight) look-ups are already waiting for DNS")
            }
            inFlight += 1
            submitted.append(Question(domain: domain, completion: completion, resolver: self))
            return nil
        }
        if let refusal { return completion(.failure(refusal)) }
        wake()
    }

    /// Ends the loop; questions still waiting fail ("busy"). Waits for the thread.
    public func shutdown() {
        let first = lock.withLock { () -> Bool in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return }
        wake()
        finished.wait()
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: The loop thread

    private func run() {
        guard let channel else { return }
        var descriptors: [pollfd] = []
        var sockets = [ares_socket_t](repeating: ARES_SOCKET_BAD, count: Int(ARES_GETSOCK_MAXNUM))
        while true {
            let (questions, stop) = lock.withLock { () -> ([Question], Bool) in
                defer { submitted.removeAll(keepingCapacity: true) }
                return (submitted, stopping)
            }
            if stop {
                for question in questions { finish(question, .failure(MailDomainLookupFailure(reason: "busy", detail: "the resolver is shutting down"))) }
                break
            }
            for question in questions { ask(question, channel: channel) }

            let bits = ares_getsock(channel, &sockets, ARES_GETSOCK_MAXNUM)
            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            for index in 0..<Int(ARES_GETSOCK_MAXNUM) {
                let readable = bits & (1 << index) != 0
                let writable = bits & (1 << (index + Int(ARES_GETSOCK_MAXNUM))) != 0
                guard readable || writable else { continue }
                descriptors.append(pollfd(fd: sockets[index], events: Int16((readable ? POLLIN : 0) | (writable ? POLLOUT : 0)), revents: 0))
            }
            // c-ares says how long until its next timeout; with nothing asked, wait for a wake.
            var wait = timeval()
            let waitMilliseconds: Int32 = ares_timeout(channel, nil, &wait).map {
                Int32(min(Int($0.pointee.tv_sec) * 1000 + Int($0.pointee.tv_usec) / 1000 + 1, 60_000))
            } ?? -1
            _ = poll(&descriptors, nfds_t(descriptors.count), waitMilliseconds)
            if descriptors[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &drain, drain.count) > 0 {}
            }
            for descriptor in descriptors.dropFirst() where descriptor.revents != 0 {
                let readable = descriptor.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0
                let writable = descriptor.revents & Int16(POLLOUT) != 0
                ares_process_fd(channel, readable ? descriptor.fd : ARES_SOCKET_BAD, writable ? descriptor.fd : ARES_SOCKET_BAD)
            }
            // Times out whatever is due (and does nothing else).
            ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD)
        }
        // Every question still asked is called back with ARES_EDESTRUCTION, which fails it.
        ares_destroy(channel)
        self.channel = nil
        finished.signal()
    }

    private static let classInternet: Int32 = 1
    private static let typeA: Int32 = 1
    private static let typeMX: Int32 = 15
    private static let typeAAAA: Int32 = 28

    private func ask(_ question: Question, channel: OpaquePointer) {
        let type: Int32 = switch question.stage {
        case .mx: Self.typeMX
        case .a: Self.typeA
        case .aaaa: Self.typeAAAA
        }
        // Absolute (trailing dot): a domain is never tried under the machine's search list.
        let name = question.domain.hasSuffix(".") ? question.domain : question.domain + "."
        let context = Unmanaged.passRetained(question).toOpaque()
        ares_query(channel, name, Self.classInternet, type, { context, status, _, answer, length in
            guard let context else { return }
            let question = Unmanaged<Question>.fromOpaque(context).takeRetainedValue()
            question.resolver.answered(question, status: status, answer: answer, length: length)
        }, context)
    }

    private func answered(_ question: Question, status: Int32, answer: UnsafeMutablePointer<UInt8>?, length: Int32) {
        switch (question.stage, status) {
        case (_, ARES_ENOTFOUND):
            finish(question, .success(.noSuchDomain))
        case (.mx, ARES_SUCCESS):
            switch Self.readMX(answer, length) {
            case .verdict(let verdict): finish(question, .success(verdict))
            case .askForAddress: next(question, .a)
            case .failure(let status): finish(question, .failure(Self.failure(status, question)))
            }
        case (.mx, ARES_ENODATA):
            next(question, .a)
        case (.a, ARES_SUCCESS), (.aaaa, ARES_SUCCESS):
            finish(question, .success(Self.hasAddress(answer, length, v6: question.stage == .aaaa) ? .acceptsMail : .noMailHost))
        case (.a, ARES_ENODATA):
            next(question, .aaaa)
        case (.aaaa, ARES_ENODATA):
            finish(question, .success(.noMailHost))
        default:
            finish(question, .failure(Self.failure(status, question)))
        }
    }

    private func next(_ question: Question, _ stage: Question.Stage) {
        guard let channel else {
            return finish(question, .failure(MailDomainLookupFailure(reason: "busy", detail: "the resolver is shutting down")))
        }
        question.stage = stage
        ask(question, channel: channel)
    }

    /// What an MX answer, as c-ares hands it over, says.
    package enum MXReading: Equatable {
        case verdict(MailDomainVerdict)
        /// No MX in it (e.g. only a CNAME): RFC 5321 §5.1 falls back to the domain's address.
        case askForAddress
        /// c-ares could not read it (its status).
        case failure(Int32)
    }

    /// The MX answer's bytes read by c-ares (which bounds and checks them), then judged:
    /// a null MX (RFC 7505: the root as the exchange) says the domain takes no mail.
    /// Separate from the channel's state so a fuzz target can feed it any bytes.
    package static func readMX(_ answer: UnsafePointer<UInt8>?, _ length: Int32) -> MXReading {
        var replies: UnsafeMutablePointer<ares_mx_reply>?
        let parsed = ares_parse_mx_reply(answer, length, &replies)
        defer { if let replies { ares_free_data(replies) } }
        guard parsed == ARES_SUCCESS else {
            return parsed == ARES_ENODATA ? .askForAddress : .failure(parsed)
        }
        var hosts: [String] = []
        var reply = replies
        while let current = reply {
            hosts.append(current.pointee.host.map { String(cString: $0) } ?? "")
            reply = current.pointee.next
        }
        let isNull = hosts.allSatisfy { $0.isEmpty || $0 == "." }
        return .verdict(isNull ? .refusesMail : .acceptsMail)
    }

    /// Whether an A or AAAA answer holds an address (not only a CNAME chain).
    package static func hasAddress(_ answer: UnsafePointer<UInt8>?, _ length: Int32, v6: Bool) -> Bool {
        var count: Int32 = 4
        if v6 {
            var addresses = [ares_addr6ttl](repeating: ares_addr6ttl(), count: 4)
            return ares_parse_aaaa_reply(answer, length, nil, &addresses, &count) == ARES_SUCCESS && count > 0
        }
        var addresses = [ares_addrttl](repeating: ares_addrttl(), count: 4)
        return ares_parse_a_reply(answer, length, nil, &addresses, &count) == ARES_SUCCESS && count > 0
    }

    private static func failure(_ status: Int32, _ question: Question) -> MailDomainLookupFailure {
        let reason = switch status {
        case ARES_ETIMEOUT: "timeout"
        case ARES_ESERVFAIL: "servfail"
        case ARES_EREFUSED: "refused"
        case ARES_ECONNREFUSED: "connection"
        case ARES_EDESTRUCTION, ARES_ECANCELLED: "busy"
        default: "other"
        }
        let stage = switch question.stage {
        case .mx: "MX"
        case .a: "A"
        case .aaaa: "AAAA"
        }
        return MailDomainLookupFailure(
            reason: reason, detail: "\(stage) question for \(question.domain): \(String(cString: ares_strerror(status)))")
    }

    private func finish(_ question: Question, _ result: Result<MailDomainVerdict, MailDomainLookupFailure>) {
        lock.withLock { inFlight -= 1 }
        question.completion(result)
    }
}
