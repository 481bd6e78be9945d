import Clocks
import Foundation
import Logging
import MicroHTTPD
import SignupDomain

/// The open `/account` pages' streams (`GET /account/events`), by account. Once a second each
/// watched account's sessions are read from the store, once however many tabs watch it, so a
/// sign-in or a sign-out on any instance sharing the store reaches every open tab within about
/// a second; a tab whose list (or whose own "changes open until") changed gets a `devices`
/// event, and a tab whose own session ended gets `signed_out` and is closed. Bounded: at most
/// `perAccount` tabs an account and `total` in all.
final class AccountStreams: @unchecked Sendable {
    /// One open tab: its stream, whose browser it is (its session's id hash), its language,
    /// and the last payload it was sent (nothing is sent again unchanged).
    private final class Watcher {
        let stream: EventStream
        let idHash: String
        let language: Languages.Language
        var last: String = ""

        init(stream: EventStream, idHash: String, language: Languages.Language) {
            self.stream = stream
            self.idHash = idHash
            self.language = language
        }
    }

    private let lock = NSLock()
    /// Guarded by `lock`.
    private var watched: [Int64: [ObjectIdentifier: Watcher]] = [:]
    private var count = 0
    private let store: any AccountStore
    private let signedIn: SignedInUsers
    private let recentSignIn: TimeInterval
    private let now: @Sendable () -> Date
    private let logger: Logger
    let perAccount: Int
    let total: Int

    init(store: any AccountStore, signedIn: SignedInUsers, recentSignIn: TimeInterval, now: @escaping @Sendable () -> Date,
         logger: Logger, perAccount: Int = 10, total: Int = 10_000) {
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

    /// Adds a tab of `account`; false when it is over the bounds (the caller answers 503).
    func attach(_ stream: EventStream, account: Account, idHash: String, language: Languages.Language, retryMilliseconds: Int) -> Bool {
        let watcher = Watcher(stream: stream, idHash: idHash, language: language)
        let added = lock.withLock { () -> Bool in
            guard count < total, (watched[account.id]?.count ?? 0) < perAccount else { return false }
            watched[account.id, default: [:]][ObjectIdentifier(stream)] = watcher
            count += 1
            return true
        }
        guard added else { return false }
        stream.onTermination { [weak self] stream in
            guard let self else { return }
            lock.withLock {
                if watched[account.id]?.removeValue(forKey: ObjectIdentifier(stream)) != nil { count -= 1 }
                if watched[account.id]?.isEmpty == true { watched[account.id] = nil }
            }
        }
        stream.send(retry: retryMilliseconds)
        // Its first state at once, as the page rendered it (or newer).
        if let sessions = try? store.signInSessions(ofAccount: account.id, at: now(), rules: signedIn.rules) {
            update(watcher, with: sessions)
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
            for watcher in watchers { update(watcher, with: sessions) }
        }
    }

    /// Sends `watcher` its tab's state if it changed; a tab whose own session is gone is told
    /// it is signed out, and closed.
    private func update(_ watcher: Watcher, with sessions: [SignInSessionSummary]) {
        guard let own = sessions.first(where: { $0.idHash == watcher.idHash }) else {
            watcher.stream.send(event: "signed_out", data: "{}")
            watcher.stream.close()
            return
        }
        let payload = Self.payload(sessions, own: own, recentSignIn: recentSignIn, now: now(), language: watcher.language)
        let changed = lock.withLock { () -> Bool in
            guard payload != watcher.last else { return false }
            watcher.last = payload
            return true
        }
        if changed { watcher.stream.send(event: "devices", data: payload) }
    }

    /// `{"devices": [{"details","device","handle","this_browser"}], "open_until": ISO or null}`:
    /// the words as the page shows them, in the tab's language.
    static func payload(_ sessions: [SignInSessionSummary], own: SignInSessionSummary, recentSignIn: TimeInterval, now: Date,
                        language: Languages.Language) -> String {
        struct Device: Encodable {
            let handle: String
            let device: String
            let details: String
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
            devices: sessions.map { session in
                Device(handle: session.publicID,
                       device: session.device.isEmpty ? language.catalog["account.unknown_device"] ?? "" : session.device,
                       details: PageRenderer.deviceDetails(network: session.network, began: session.createdAt,
                                                           lastUsed: session.lastSeenAt, language: language),
                       this_browser: session.idHash == own.idHash)
            },
            openUntil: openUntil > now ? ISO8601DateFormatter().string(from: openUntil) : nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(payload)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
