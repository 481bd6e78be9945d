import Clocks
import Foundation
import Identity
import SignupDomain
import WebKernel

/// The live form sessions by token. A token is minted with the page and costs nothing; its
/// session is built on first use (the page's stream or first edit), counted against the
/// address that used it. Sessions nobody has used for `idleLifetime` and that have no open
/// stream are dropped; their token builds a fresh one if used again, and the page re-sends
/// its values. When the table is full the longest-idle sessions without a stream give way.
final class LiveFormSessionRegistry: @unchecked Sendable {
    struct Settings {
        /// Each language's rules: a session speaks the language its page was in.
        var languages: Languages
        var availabilityChecker: StoreAvailabilityChecker
        /// The breach source and the mail-domain checker every view model asks.
        var lookups: Lookups
        var availabilityDebounce: DispatchQueue.SchedulerTimeType.Stride
        var idleLifetime: TimeInterval
        var maximumSessions: Int
        /// How long after it was issued a token may still start a live session.
        var tokenLifetime: TimeInterval
        var tokens: FormTokenAuthority
        var limiters: ClientLimiters
        var metrics: ServerMetrics
        /// Where sign-up forms' funnel is counted (issue 59).
        var funnel: FormFunnel?
        /// Tokens age, sessions idle and throttled look-ups wait by it.
        var clock: any WallClock
    }

    enum LookupError: Error, Equatable {
        /// Not a token this server issued, or too old for live use.
        case unknown
        /// The address is over one of its limits.
        case limited(LimitExceeded)
        /// Every slot is taken by a session with an open stream.
        case full
    }

    private struct Entry {
        let session: LiveFormSession
        let addressKey: String
    }

    private let settings: Settings
    /// By language tag.
    private let sessionConfigurations: [String: LiveFormSession.Configuration]
    private let lock = NSLock()
    // Guarded by `lock`, which is their exclusivity: no runtime check per access (see
    // DEVELOPMENT.md, "exclusivity").
    @exclusivity(unchecked) private var sessions: [String: Entry] = [:]
    @exclusivity(unchecked) private var liveByAddress: [String: Int] = [:]

    init(settings: Settings) {
        self.settings = settings
        self.sessionConfigurations = Dictionary(uniqueKeysWithValues: settings.languages.all.map { language in
            (language.tag, LiveFormSession.Configuration(
                policy: language.policy, lookups: settings.lookups, language: language.tag,
                availabilityDebounce: settings.availabilityDebounce, metrics: settings.metrics, funnel: settings.funnel))
        })
    }

    var count: Int { lock.withLock { sessions.count } }

    /// A token for a new page view. No session exists until the token is used.
    func mintToken() -> String {
        settings.tokens.mint(issuedAt: settings.clock.now)
    }

    /// When a genuine token's page was served (nil for anything else).
    func issueDate(of token: String) -> Date? {
        settings.tokens.issue(of: token)?.date
    }

    /// Seconds since a genuine token's page was served, by the app's clock (nil for anything
    /// else): the funnel's time to complete.
    func age(of token: String) -> TimeInterval? {
        issueDate(of: token).map { settings.clock.now.timeIntervalSince($0) }
    }

    /// Whether `token` was signed with this server's key (of any age, by any instance).
    func isGenuine(_ token: String) -> Bool {
        settings.tokens.issue(of: token) != nil
    }

    /// Whether `token` may start a live session here: genuine, minted by this instance, and
    /// within its lifetime.
    func acceptsForLiveUse(_ token: String) -> Bool {
        guard let issue = settings.tokens.issue(of: token) else { return false }
        return issue.instance == settings.tokens.instance
            && settings.clock.now.timeIntervalSince(issue.date) <= settings.tokenLifetime
    }

    /// The session already alive for `token`, if any; never builds one.
    func existingSession(for token: String) -> LiveFormSession? {
        lock.withLock { sessions[token]?.session }
    }

    /// The session for `token`, built now if it has none, charged to `address`.
    /// - Parameter language: the page's language (`lang=`), for a session built now; an
    ///   unknown or missing one means English.
    func session(for token: String, address: String, language: String? = nil) throws(LookupError) -> LiveFormSession {
        // (The session marks itself used when it applies the edit or attaches the stream.)
        if let existing = existingSession(for: token) { return existing }
        // Only tokens this instance minted: another instance's token means its instance is
        // gone (the proxy sends live requests to the token's own instance while it runs), so
        // the page is told the session is unknown, takes a fresh token here and re-sends.
        guard acceptsForLiveUse(token) else { throw .unknown }
        let addressKey = ClientKey.of(address)
        try admitNewSession(from: addressKey)
        let session = LiveFormSession(
            token: token,
            configuration: sessionConfigurations[settings.languages.language(language)?.tag ?? Languages.fallback]!,
            availabilityChecker: availabilityChecker(for: token, addressKey: addressKey),
            clock: settings.clock)
        return insert(session, addressKey: addressKey)
    }

    /// A live session for a form that sets `policy`'s account a new password (account
    /// recovery), built now and counted like any other against `address`. Its token is this
    /// instance's id, a dot, `np` and 32 random hex digits: a proxy in front of several
    /// instances routes its stream and edits here by the id, as for a form token
    /// (deploy/nginx/livesignup-instances.conf), but it is not a signed form token: when the
    /// session is gone, nothing can build it again from the token (which would make a sign-up
    /// form of it); the page asks its own route for a fresh one.
    /// - Parameter currentPassword: answers `password.not_current` for this account.
    func startNewPasswordSession(_ policy: FormPolicy, currentPassword: (any CurrentPasswordChecking)?, language: String,
                                 address: String) throws(LookupError) -> String {
        precondition(policy.account != nil, "a new-password session is for an account")
        let addressKey = ClientKey.of(address)
        try admitNewSession(from: addressKey)
        let token = settings.tokens.instance + ".np" + Self.makeRandomID()
        let session = LiveFormSession(
            token: token,
            configuration: LiveFormSession.Configuration(
                policy: policy,
                lookups: Lookups(breachedPasswords: settings.lookups.breachedPasswords, currentPassword: currentPassword),
                language: language,
                availabilityDebounce: settings.availabilityDebounce, metrics: settings.metrics),
            availabilityChecker: availabilityChecker(for: token, addressKey: addressKey),
            clock: settings.clock)
        _ = insert(session, addressKey: addressKey)
        return token
    }

    private func availabilityChecker(for token: String, addressKey: String) -> ThrottledAvailabilityChecker {
        ThrottledAvailabilityChecker(
            base: settings.availabilityChecker, limiters: settings.limiters,
            sessionKey: token, addressKey: addressKey, checks: settings.metrics.availabilityChecks,
            clock: settings.clock)
    }

    private func insert(_ session: LiveFormSession, addressKey: String) -> LiveFormSession {
        lock.withLock {
            // Two first uses at once (the stream and an edit): the first one in wins.
            if let raced = sessions[session.token] { return raced.session }
            sessions[session.token] = Entry(session: session, addressKey: addressKey)
            liveByAddress[addressKey, default: 0] += 1
            return session
        }
    }

    /// Whether `addressKey` may start one more session, and room for it; spends its allowance.
    private func admitNewSession(from addressKey: String) throws(LookupError) {
        let atCapacity = lock.withLock { liveByAddress[addressKey, default: 0] >= settings.limiters.limits.liveSessionsPerAddress }
        if atCapacity {
            // Its own idle sessions give way first; the address is refused only if it holds
            // that many sessions that are actually in use.
            evictIdle(count: 1, ownedBy: addressKey)
            if lock.withLock({ liveByAddress[addressKey, default: 0] >= settings.limiters.limits.liveSessionsPerAddress }) {
                throw .limited(LimitExceeded(limit: .sessions, retryAfter: 60))
            }
        }
        do throws(LimitExceeded) {
            try settings.limiters.newSessions.admit(addressKey)
        } catch {
            throw .limited(error)
        }
        if count >= settings.maximumSessions {
            // Make room in batches so a full table is not scanned for every new session.
            evictIdle(count: max(1, settings.maximumSessions / 100), ownedBy: nil)
            if count >= settings.maximumSessions { throw .full }
        }
    }

    private var expiryCutoff: Date {
        settings.clock.now.addingTimeInterval(-settings.idleLifetime)
    }

    /// Drops sessions idle for longer than their lifetime; returns how many.
    @discardableResult
    func removeExpired() -> Int {
        let cutoff = expiryCutoff
        let candidates = lock.withLock { Array(sessions.values) }
        let expired = candidates.filter { !$0.session.hasOpenStreams && $0.session.lastActivity < cutoff }
        remove(expired.map(\.session))
        // Forms posted without JavaScript have no session; their funnel ends on the same terms.
        settings.funnel?.endIdleNoScriptForms(at: settings.clock.now)
        return expired.count
    }

    /// Removes the `count` longest-idle sessions without an open stream (of one address, or
    /// of anyone); returns how many went.
    @discardableResult
    private func evictIdle(count: Int, ownedBy addressKey: String?) -> Int {
        let candidates = lock.withLock { Array(sessions.values) }
            .filter { (addressKey == nil || $0.addressKey == addressKey) && !$0.session.hasOpenStreams }
            .map { (session: $0.session, lastActivity: $0.session.lastActivity) }
        let oldest = candidates.sorted { $0.lastActivity < $1.lastActivity }.prefix(count).map(\.session)
        remove(oldest)
        return oldest.count
    }

    private func remove(_ removed: [LiveFormSession]) {
        guard !removed.isEmpty else { return }
        let gone = lock.withLock {
            removed.filter { session in
                // Only if it is still idle: a stream may have attached since it was chosen.
                guard !session.hasOpenStreams, let entry = sessions.removeValue(forKey: session.token) else { return false }
                let remaining = liveByAddress[entry.addressKey, default: 1] - 1
                liveByAddress[entry.addressKey] = remaining > 0 ? remaining : nil
                return true
            }
        }
        // Outside the table's lock: each takes its session's.
        for session in gone { session.endFunnel() }
    }

    /// 128 bits from the system's cryptographic RNG, as 32 lowercase hex digits.
    static func makeRandomID() -> String {
        var generator = SystemRandomNumberGenerator()
        let words = (generator.next() as UInt64, generator.next() as UInt64)
        return hex(words.0) + hex(words.1)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
