import Clocks
import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import WebKernel
import Locking

/// The open `/account` pages' streams (`GET /account/events`), by account. Once a second each
/// watched account's sessions are read from the store, once however many tabs watch it, so a
/// sign-in or a sign-out on any instance sharing the store reaches every open tab within about
/// a second; a tab whose list (or whose own "changes open until") changed gets a `devices`
/// event, and a tab whose own session ended gets `signed_out` and is closed. Bounded: at most
/// `perAccount` tabs an account, `perClient` a client address and `total` in all.
///
/// Cheap when nothing changes (issue 52: one account signed in 301 times and watched by ten
/// tabs cost half a core, every line rebuilt with new date formatters every second): a tab's
/// payload is built only when its account's rows, or its own "changes open" state, changed
/// since it was last sent; then each language's lines are built once for all its tabs.
final class AccountStreams: @unchecked Sendable {
    /// One open tab: its stream, whose browser it is (its session's id hash), its client, its
    /// language, and what it was last sent (nothing is sent again unchanged).
    private final class Watcher {
        let stream: EventStream
        let idHash: String
        let client: String
        let language: Languages.Language
        var last: String = ""
        /// The rows and the open state its last payload was built from.
        var lastRows: [SignInSessionSummary]?
        var lastOpen = false

        init(stream: EventStream, idHash: String, client: String, language: Languages.Language) {
            self.stream = stream
            self.idHash = idHash
            self.client = client
            self.language = language
        }
    }

    private let lock = NSLock()
    /// Guarded by `lock`.
    private var watched: [Int64: [ObjectIdentifier: Watcher]] = [:]
    private var count = 0
    /// Open tabs by client address key. Guarded by `lock`.
    private var byClient: [String: Int] = [:]
    /// Guarded by `lock`: how many payloads were built.
    private var builtCount = 0
    /// How many payloads were built (tests prove an idle account costs none).
    var payloadsBuilt: Int { lock.withLock { builtCount } }
    private let store: any AccountStore
    private let signedIn: SignedInUsers
    private let recentSignIn: TimeInterval
    private let now: @Sendable () -> Date
    private let logger: Logger
    let perAccount: Int
    let perClient: Int
    let total: Int

    init(store: any AccountStore, signedIn: SignedInUsers, recentSignIn: TimeInterval, now: @escaping @Sendable () -> Date,
         logger: Logger, perAccount: Int = 10, perClient: Int = 20, total: Int = 10_000) {
        self.perClient = perClient
        self.store = store
        self.signedIn = signedIn
        self.recentSignIn = recentSignIn
        self.now = now
        self.logger = logger
        self.perAccount = perAccount
        self.total = total
    }

    /// Reads every watched account once a second on `clock`, until `isStopping`.
    func start(on clock: any WallClock, isStopping: @escaping @Sendable () -> Bool) {
        clock.every(1) { [weak self] in
            guard let self, !isStopping() else { return false }
            poll()
            return true
        }
    }

    /// Adds a tab of `account` from `client` (its address key); false when it is over the
    /// bounds (the caller answers 503).
    func attach(_ stream: EventStream, account: Account, idHash: String, client: String, language: Languages.Language,
                retryMilliseconds: Int) -> Bool {
        let watcher = Watcher(stream: stream, idHash: idHash, client: client, language: language)
        let added = lock.withLock { () -> Bool in
            guard count < total, (watched[account.id]?.count ?? 0) < perAccount, byClient[client, default: 0] < perClient else {
                return false
            }
            watched[account.id, default: [:]][ObjectIdentifier(stream)] = watcher
            count += 1
            byClient[client, default: 0] += 1
            return true
        }
        guard added else { return false }
        stream.onTermination { [weak self] stream in
            guard let self else { return }
            lock.withLock {
                if watched[account.id]?.removeValue(forKey: ObjectIdentifier(stream)) != nil {
                    count -= 1
                    byClient[client, default: 1] -= 1
                    if byClient[client] == 0 { byClient[client] = nil }
                }
                if watched[account.id]?.isEmpty == true { watched[account.id] = nil }
            }
        }
        stream.send(retry: retryMilliseconds)
        // Its first state at once, as the page rendered it (or newer).
        if let sessions = try? store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules) {
            update([watcher], with: sessions, at: now())
        }
        return true
    }

    /// Tabs open now (for tests and the metric).
    var openCount: Int { lock.withLock { count } }

    /// One read per watched account; each tab gets what changed for it.
    func poll() {
        let accounts = lock.withLock { watched.mapValues { Array($0.values) } }
        let time = now()
        for (account, watchers) in accounts {
            let sessions: [SignInSessionSummary]
            do {
                sessions = try store.signInSessions(ofAccount: account, at: time, rules: signedIn.rules)
            } catch {
                // The next second tries again; the page keeps what it shows.
                logger.debug("Account store unavailable to refresh an account page's stream", metadata: ["error": "\(error)"])
                continue
            }
            update(watchers, with: sessions, at: time)
        }
    }

    /// Sends each of an account's tabs its state if it changed; a tab whose own session is gone
    /// is told it is signed out, and closed. Lines are built once per language, and only for
    /// tabs whose rows or open state changed.
    private func update(_ watchers: [Watcher], with sessions: [SignInSessionSummary], at time: Date) {
        var lines: [String: [DeviceLine]] = [:]
        for watcher in watchers {
            guard let own = sessions.first(where: { $0.idHash == watcher.idHash }) else {
                watcher.stream.send(event: "signed_out", data: "{}")
                watcher.stream.close()
                continue
            }
            let open = own.authenticatedAt.addingTimeInterval(recentSignIn) > time
            let unchanged = lock.withLock { watcher.lastRows == sessions && watcher.lastOpen == open }
            if unchanged { continue }
            let tag = watcher.language.tag
            let built = lines[tag] ?? Self.lines(sessions, language: watcher.language)
            lines[tag] = built
            let payload = Self.payload(built, own: own, recentSignIn: recentSignIn, now: time)
            let changed = lock.withLock { () -> Bool in
                builtCount += 1
                watcher.lastRows = sessions
                watcher.lastOpen = open
                guard payload != watcher.last else { return false }
                watcher.last = payload
                return true
            }
            if changed { watcher.stream.send(event: "devices", data: payload) }
        }
    }

    /// A device's line as every tab in one language shows it; whose browser it is, per tab.
    struct DeviceLine {
        let idHash: String
        let handle: String
        let device: String
        let details: String
        let endLabel: String
    }

    static func lines(_ sessions: [SignInSessionSummary], language: Languages.Language) -> [DeviceLine] {
        sessions.map { session in
            let device = session.device.isEmpty ? language.catalog["account.unknown_device"] ?? "" : session.device
            return DeviceLine(idHash: session.idHash, handle: session.publicID, device: device,
                              details: AccountPage.deviceDetails(network: session.network, began: session.createdAt,
                                                                 lastUsed: session.lastSeenAt, language: language, html: false),
                              endLabel: AccountPage.endLabel(device: session.device, lastUsed: session.lastSeenAt, language: language))
        }
    }

    /// `{"devices": [{"details","device","end_label","handle","this_browser"}], "open_until": ISO or null}`:
    /// the words as the page shows them, in the tab's language.
    static func payload(_ lines: [DeviceLine], own: SignInSessionSummary, recentSignIn: TimeInterval, now: Date) -> String {
        struct Device: Encodable {
            let handle: String
            let device: String
            let details: String
            /// The sign-out button's accessible name: which device, last used when (issue 58).
            let end_label: String
            let this_browser: Bool
        }
        struct Payload: Encodable {
            let devices: [Device]
            let openUntil: String?
            enum CodingKeys: String, CodingKey { case devices, open_until }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(devices, forKey: .devices)
                try container.encode(openUntil, forKey: .open_until)
            }
        }
        let openUntil = own.authenticatedAt.addingTimeInterval(recentSignIn)
        let payload = Payload(
            devices: lines.map { line in
                Device(handle: line.handle, device: line.device, details: line.details, end_label: line.endLabel, this_browser: line.idHash == own.idHash)
            },
            openUntil: openUntil > now ? isoFormatter.withLock { $0.string(from: openUntil) } : nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(payload)) ?? Data("{}".utf8), as: UTF8.self)
    }

    private static let isoFormatter = Locked(ISO8601DateFormatter())
}
