import Foundation
import Identity
import Logging
import MicroHTTPD
import OperatorSettings
import OutsideDNS
import OutsideMail
import SignupDomain
import SignupPostgres
import SignupServer
import WebKernel

/// Every setting of `serve`, declared once (issue 55): each option of `ServerOptions`,
/// `AccountOptions`, `OperationOptions`, `MailOptions`, `ProofOptions` and `LimitOptions`
/// under its long flag (so its variable stays `LIVESIGNUP_<FLAG>`), and the secrets `serve`
/// reads from the environment only, under the flag that spells their variable.
///
/// Defaults are the options' own expressions where those are constants; a default the
/// machine decides (open files, CPU cores) is nil and said in the help, so the reference
/// reads the same everywhere. Bounds are those of the options' `validate()`; what one
/// setting asks of another (idle hours within the lifetime, `--smtp-url` with `--mail-from`)
/// stays in `validate()`.
enum ServeSettings {
    static let all: [SettingDeclaration] =
        [server, store, policy, lookups, mail, webhooks, proofOfWork, limits, signIn, providers, logging, metrics].flatMap { $0 }

    /// The declared secrets, by what they are: code asks for one by its case, never by its
    /// variable's name (`ConfigurationSources.secret(.smtpPassword)`).
    enum Secret: String, CaseIterable {
        case formTokenKey = "server.form_token_key"
        case smtpPassword = "mail.smtp_password"
        case mailSealingKey = "mail.sealing_key"
        case verificationKey = "mail.verification_key"
        case webhookSecret = "webhooks.secret"
        case proofOfWorkKey = "proof_of_work.key"
        case secondFactorKey = "sign_in.second_factor_key"
        case providerCookieKey = "sign_in.provider_cookie_key"

        var declaration: SettingDeclaration {
            guard let declared = ServeSettings.all.first(where: { $0.path == rawValue && $0.secret }) else {
                preconditionFailure("\(rawValue) is no secret ServeSettings declares")
            }
            return declared
        }
    }

    /// By flag, for the options' help.
    static let byFlag = Dictionary(uniqueKeysWithValues: all.filter { !$0.fileOnly }.map { ($0.flag, $0) })

    private static var defaults: SignupApplication.Configuration { .defaults }
    private static let proof = ProofOfWorkSettings()

    static let server: [SettingDeclaration] = [
        SettingDeclaration(.server, "host", flag: "host", .text, default: "127.0.0.1", help: "Address to listen on."),
        SettingDeclaration(.server, "port", flag: "port", .integer(0...65535), default: "8080",
                           help: "Port to listen on; 0 picks a free one and prints it."),
        SettingDeclaration(.server, "worker_threads", flag: "worker-threads", .integer(nil), default: "2",
                           help: "libmicrohttpd's epoll worker threads.", check: atLeast(1)),
        SettingDeclaration(.server, "instance_id", flag: "instance-id", .text, help: """
            This instance's name behind a proxy (a-z, 0-9, '-'; up to 32); it starts every form token, \
            so nginx can route a live form to its instance. Default: the host name.
            """, check: instanceID),
        SettingDeclaration(.server, "public_directory", flag: "public-directory", .text,
                           help: """
            Folder of static files served under /static/ (default: found next to the binary, see docs/DEPLOYMENT.md).
            """),
        SettingDeclaration(.server, "templates_directory", flag: "templates-directory", .text,
                           help: "Folder of Mustache templates (default: found next to the binary)."),
        SettingDeclaration(.server, "public_origins", flag: "public-origin", .list, help: """
            The origin the site is served under (e.g. https://signup.example.com); repeatable. When set, this site is \
            these origins only: the cross-site check, return_to, mail links and the passkey rp id never follow a \
            request's Host or X-Forwarded-Host. Unset, they follow the request (logged at start).
            """, check: origin),
        SettingDeclaration(.server, "trusted_proxies", flag: "trusted-proxy", .list,
                           help: """
            A reverse proxy (address or CIDR) whose X-Forwarded-For/-Proto/-Host are believed; repeatable.
            """, check: addressRange),
        SettingDeclaration(.server, "return_to_origins", flag: "return-to-allow", .list, help: """
            An origin besides this site's (e.g. https://app.example.com) that ?return_to= may send a person to after \
            signing in or up; repeatable.
            """, check: origin),
        // No default: `LimitOptions` takes the open-file limit less 100 (at least 64), or
        // `Configuration.defaults.connectionLimit` when there is none; its help says so.
        SettingDeclaration(.server, "max_connections", flag: "max-connections", .integer(nil), help: """
            Open connections at most, event streams included; by default the process's open-file limit less 100 \
            (for the database and logs).
            """, check: atLeast(1)),
        SettingDeclaration(.server, "connections_per_address", flag: "connections-per-address", .integer(nil),
                           default: String(defaults.connectionsPerAddress),
                           help: "Connections one client address may hold (0 = no limit; behind a proxy set 0).",
                           check: atLeast(0)),
        SettingDeclaration(.server, "idle_timeout_seconds", flag: "idle-timeout", .integer(nil),
                           default: String(defaults.idleTimeoutSeconds),
                           help: "Seconds a connection may sit idle, also between the bytes of a slow request.",
                           check: atLeast(0)),
        SettingDeclaration(.server, "heartbeat_seconds", flag: "heartbeat-seconds", .integer(1...3600),
                           default: String(Int(defaults.heartbeatIntervalSeconds)), help: """
            Seconds between the `: ping` comments every open event stream gets, so proxies keep it open and a vanished \
            client is found (1-3600; keep it below your proxy's read timeout).
            """),
        SettingDeclaration(.server, "connection_memory_kib", flag: "connection-memory-kib", .integer(4...1024),
                           default: String(defaults.connectionMemoryBytes / 1024),
                           help: """
            KiB of memory each connection has for request and response headers; bigger headers are answered 431.
            """),
        SettingDeclaration(.server, "max_sessions", flag: "max-sessions", .integer(nil),
                           default: String(defaults.maximumSessions),
                           help: "Form sessions held at once; when full the longest-idle ones without a stream go.",
                           check: atLeast(1)),
        SettingDeclaration(.server, "session_idle_minutes", flag: "session-idle-minutes", .integer(nil),
                           default: String(Int(defaults.sessionIdleLifetime / 60)),
                           help: "Minutes an unused form session without a stream is kept.", check: atLeast(0)),
        SettingDeclaration(.server, "shutdown_grace_seconds", flag: "shutdown-grace", .integer(nil),
                           default: String(Int(defaults.shutdownGrace)),
                           help: "Seconds SIGTERM waits for sign-ups already hashing before answering them 503.",
                           check: atLeast(0)),
        // Here rather than in `sign_in`: form tokens belong to the live form every instance
        // serves (like `instance_id`), not to signed-in sessions.
        SettingDeclaration(.server, "form_token_key", flag: "form-token-key", .text, help: """
            The key that signs form tokens, as 64 hex digits (32 bytes; openssl rand -hex 32), so every instance and \
            restart accepts the tokens of pages already open; by default one created once and kept in the account store.
            """, secret: true, check: hexKey),
    ]

    static let store: [SettingDeclaration] = [
        SettingDeclaration(.store, "database", flag: "database", .text, default: "data/livesignup.sqlite", help: """
            A SQLite database file, or a PostgreSQL URL (postgres://user:password@host:port/db?sslmode=…) for several \
            instances; created or migrated on start.
            """, check: database),
        SettingDeclaration(.store, "connections", flag: "database-connections", .integer(1...1000), default: "8",
                           help: "PostgreSQL only: connections this instance keeps to the database at most."),
        SettingDeclaration(.store, "wait_seconds", flag: "database-wait", .integer(0...3600), default: "30", help: """
            PostgreSQL only: seconds to keep trying at start while the database cannot be reached yet (0: give up at once).
            """),
        SettingDeclaration(.store, "seed_demo", flag: "seed-demo", .boolean, default: "false",
                           help: "Mark a few demo usernames (alice, bob, carol, admin, …) as taken."),
    ]

    static let policy: [SettingDeclaration] = [
        // `source`: the flag takes a preset's name or a file's path, so neither `preset` nor
        // `file` would say it (and `policy.policy` would repeat the section). Not checked
        // here: `AccountOptions.validate()` reads the file and says its line.
        SettingDeclaration(.policy, "source", flag: "policy", .text, default: Policy.presetNames[0], help: """
            Sign-up policy: a preset (\(Policy.presetNames.joined(separator: " or "))) or a policy file (YAML or JSON; \
            see docs/POLICY.md).
            """),
        // The file only: a YAML mapping has no flag or variable to spell it.
        SettingDeclaration(.policy, "rules", flag: "policy-rules", .document, help: """
            The sign-up policy written here instead of in a file of its own: what a policy file holds (docs/POLICY.md), \
            as a mapping; not with source in the same file (a source from a flag or the environment wins over it).
            """),
        SettingDeclaration(.policy, "argon2_preset", flag: "argon2-preset",
                           .choice(AccountOptions.Argon2Preset.allCases.map(\.rawValue)),
                           default: AccountOptions.Argon2Preset.interactive.rawValue, help: """
            Password hashing cost: interactive (t=2, 64 MiB), moderate (t=3, 256 MiB) or owasp-minimum (t=2, 19 MiB).
            """),
        // No default: one per CPU core (`AccountOptions`), said in the help.
        SettingDeclaration(.policy, "max_concurrent_hashes", flag: "max-concurrent-hashes", .integer(nil), help: """
            Password hashes computed at once (each holds the preset's memory); by default one per CPU core.
            """, check: atLeast(1)),
        SettingDeclaration(.policy, "availability_debounce_ms", flag: "availability-debounce-ms", .integer(nil), help: """
            Milliseconds a username must stay unchanged before it is looked up (default: the policy's, else 300).
            """, check: atLeast(0)),
        // Here rather than in `sign_in`: it decides which usernames a sign-up may take.
        SettingDeclaration(.policy, "deleted_username_days", flag: "deleted-username-days", .integer(0...3650),
                           default: String(Int(defaults.deletedUsernameReservation / 86_400)), help: """
            Days a deleted account's username stays reserved, so nobody takes over its identity at once (0: free at once).
            """),
        SettingDeclaration(.policy, "pseudo_locale", flag: "pseudo-locale", .boolean, default: "false", help: """
            Also speak the pseudo-locale en-xa (?lang=en-xa): English accented and 40 % longer, to find texts left \
            hard-coded and layouts that break on long words. For tests.
            """),
    ]

    /// The timeouts' bounds hold even when their look-up is off (`AccountOptions` checks
    /// them only when it is on).
    static let lookups: [SettingDeclaration] = [
        SettingDeclaration(.lookups, "breached_passwords_file", flag: "breached-passwords", .text, help: """
            A Pwned Passwords file (SHA1:COUNT lines sorted by hash), searched on disk: adds password.breached.
            """),
        SettingDeclaration(.lookups, "breached_passwords_api", flag: "breached-passwords-api", .text, help: """
            A Pwned Passwords range API base URL (GET URL/range/PREFIX; only 5 hex digits of a SHA-1 leave the server): \
            adds password.breached. If it fails, the built-in list answers.
            """, check: httpURL("https://api.pwnedpasswords.com")),
        SettingDeclaration(.lookups, "breached_passwords_timeout_ms", flag: "breached-passwords-timeout-ms",
                           .integer(100...30_000), default: "2000",
                           help: "How long a range API look-up may take before the built-in list answers instead."),
        SettingDeclaration(.lookups, "email_dns_check", flag: "email-dns-check", .boolean, default: "false", help: """
            Ask DNS whether an address's domain can receive mail (an MX record, or an A/AAAA record without one; no null \
            MX) while it is typed and on submit: adds email.deliverable. A resolver that fails or is silent lets the \
            address through.
            """),
        SettingDeclaration(.lookups, "dns_servers", flag: "dns-server", .list, help: """
            A resolver for --email-dns-check, as IP:port ([IPv6]:port); repeat for more. Default: the system's \
            (/etc/resolv.conf).
            """, check: resolver),
        SettingDeclaration(.lookups, "email_dns_timeout_ms", flag: "email-dns-timeout-ms", .integer(100...30_000),
                           default: "1500",
                           help: "How long one DNS try may take (two tries per question) before the address is let through."),
    ]

    static let mail: [SettingDeclaration] = [
        SettingDeclaration(.mail, "verification", flag: "email-verification", .choice(["required", "off"]), help: """
            required: a sign-up becomes an account only once its address is proved with a mailed code or link; off: at \
            once. Default: required when --smtp-url or --mail-dir is set, else off.
            """),
        SettingDeclaration(.mail, "smtp_url", flag: "smtp-url", .text, help: """
            The mail server: smtp://[user@]host[:port] (STARTTLS when offered) or smtps://…; the password in \
            LIVESIGNUP_SMTP_PASSWORD.
            """, check: smtpURL),
        SettingDeclaration(.mail, "smtp_require_tls", flag: "smtp-require-tls", .boolean, default: "false", help: """
            Refuse to send unless STARTTLS succeeds, even to a mail server on this machine (smtps:// always encrypts). \
            Without it TLS is required anyway for any server not on loopback.
            """),
        SettingDeclaration(.mail, "smtp_allow_plaintext", flag: "smtp-allow-plaintext", .boolean, default: "false", help: """
            Send without TLS when a mail server that is not on loopback offers no STARTTLS (the password, codes and \
            links then cross the network readable; logged as a warning at start).
            """),
        SettingDeclaration(.mail, "smtp_ca_file", flag: "smtp-ca-file", .text,
                           help: "PEM certificates to trust for the mail server instead of the system's."),
        SettingDeclaration(.mail, "smtp_password", flag: "smtp-password", .text,
                           help: "The mail server's AUTH password, for the user in --smtp-url.", secret: true),
        SettingDeclaration(.mail, "directory", flag: "mail-dir", .text, help: """
            Write each mail as an .eml file into this folder instead of sending it (development; make run uses it).
            """),
        SettingDeclaration(.mail, "from", flag: "mail-from", .text, help: """
            The sender of the mails, e.g. 'Example <noreply@example.org>' (required with --smtp-url).
            """, check: sender),
        SettingDeclaration(.mail, "verification_minutes", flag: "verification-minutes", .integer(5...1440), default: "30",
                           help: "How long a mailed code and link work, and the username stays held for the sign-up."),
        SettingDeclaration(.mail, "verification_resend_seconds", flag: "verification-resend-seconds", .integer(0...3600),
                           default: "60",
                           help: "How soon after a mail the person may ask for a new code (0: only the mail limits apply)."),
        SettingDeclaration(.mail, "recovery_minutes", flag: "recovery-minutes", .integer(5...1440), default: "15",
                           help: "How long a mailed recovery code and link work (forgotten passwords), once."),
        SettingDeclaration(.mail, "first_retry_seconds", flag: "mail-first-retry-seconds", .integer(1...3600), default: "5",
                           help: """
            The first retry's delay when the mail server did not take a mail; each next one doubles, up to an hour.
            """),
        SettingDeclaration(.mail, "retry_hours", flag: "mail-retry-hours", .integer(1...168), default: "24", help: """
            How long a mail the server did not take is tried again (exponential backoff) before it counts as failed.
            """),
        SettingDeclaration(.mail, "sealing_key", flag: "mail-key", .text, help: """
            The key that seals the mails waiting in the outbox, as 64 hex digits (openssl rand -hex 32); given, it is \
            never written to the database; by default the store's own. Switch it only when no mail is waiting.
            """, secret: true, check: hexKey),
        SettingDeclaration(.mail, "verification_key", flag: "verification-key", .text, help: """
            The key the mailed codes and links are hashed with, as 64 hex digits (openssl rand -hex 32); given, it is \
            never written to the database; by default the store's own. Switch it only when no mail is waiting.
            """, secret: true, check: hexKey),
    ]

    /// The retry bounds hold even without a URL (`OperationOptions` checks them only with one).
    static let webhooks: [SettingDeclaration] = [
        SettingDeclaration(.webhooks, "url", flag: "webhook-url", .text, help: """
            Where account.created goes as a signed Standard Webhook (its secret: LIVESIGNUP_WEBHOOK_SECRET, whsec_ + base64).
            """, check: httpURL("https://app.example.com/hooks/livesignup")),
        SettingDeclaration(.webhooks, "retry_hours", flag: "webhook-retry-hours", .integer(1...720), default: "24",
                           help: "How long an undelivered webhook is tried again (exponential backoff) before it is parked."),
        SettingDeclaration(.webhooks, "first_retry_seconds", flag: "webhook-first-retry-seconds", .integer(1...3600),
                           default: "5",
                           help: "The first retry's delay; each next one doubles, up to an hour."),
        SettingDeclaration(.webhooks, "secret", flag: "webhook-secret", .text, help: """
            The secret webhooks are signed with: whsec_ + base64 of 24 to 64 random bytes, e.g. \
            whsec_$(openssl rand -base64 32). Needed with a URL.
            """, secret: true, check: webhookSecret),
    ]

    static let proofOfWork: [SettingDeclaration] = [
        SettingDeclaration(.proofOfWork, "enabled", flag: "proof-of-work", .choice(["on", "off"]), default: "on", help: """
            on: every sign-up form carries a challenge its browser solves while the person types, and POST /signup checks \
            the solution (posts without one share --no-javascript-signups); off: none.
            """),
        SettingDeclaration(.proofOfWork, "base_cost", flag: "proof-base-cost", .integer(1...100_000_000),
                           default: String(proof.baseCost),
                           help: "The challenge's maxnumber at the base price (a browser tries half of it on average)."),
        SettingDeclaration(.proofOfWork, "level_factor", flag: "proof-level-factor", .integer(1...64),
                           default: String(proof.levelFactor),
                           help: "Each price level multiplies the cost by this."),
        SettingDeclaration(.proofOfWork, "max_level", flag: "proof-max-level", .integer(0...8),
                           default: String(proof.maximumLevel),
                           help: "The highest price level (base × factor^level)."),
        SettingDeclaration(.proofOfWork, "lifetime_minutes", flag: "proof-lifetime-minutes", .integer(1...1440),
                           default: String(Int(proof.lifetime / 60)), help: "How long a challenge may be solved and used."),
        SettingDeclaration(.proofOfWork, "plausible_seconds", flag: "proof-plausible-seconds", .integer(0...600),
                           default: String(Int(proof.plausibleSeconds)),
                           help: "A form submitted sooner than this after its page was served raises its address's price."),
        SettingDeclaration(.proofOfWork, "half_life_minutes", flag: "proof-half-life-minutes", .integer(1...1440),
                           default: String(Int(proof.pressureHalfLife / 60)), help: """
            Pressure on an address or network (sign-ups, failed sign-ins, hasty forms) halves in this time.
            """),
        SettingDeclaration(.proofOfWork, "normal_signups_per_minute", flag: "normal-signups-per-minute", .decimal(nil),
                           default: number(proof.normalSignupsPerMinute), help: """
            Sign-ups a minute that are normal for this site; above it every price rises a level (two at four times it).
            """, check: aboveZero),
        SettingDeclaration(.proofOfWork, "key", flag: "proof-key", .text, help: """
            The key proof-of-work challenges are signed with, as text of at least 16 bytes (its UTF-8 bytes, as ALTCHA \
            libraries take a key), for instances or tools that must share it; by default one kept in the account store.
            """, secret: true, check: proofKey),
    ]

    /// Each `LimitSetting`, from its declaration: flag, help and default are its own, and its
    /// text is checked by the same `set` the option's is.
    static let limits: [SettingDeclaration] = LimitSetting.allCases.map { limit in
        let kind: SettingKind
        switch limit.value {
        case .rate: kind = .text
        case .count: kind = .integer(nil)
        }
        return SettingDeclaration(.limits, limit.flag.replacingOccurrences(of: "-", with: "_"), flag: limit.flag, kind,
                                  default: limit.defaultText, help: limit.summary, check: { text in
            var scratch = SignupLimits()
            do {
                try limit.set(text, in: &scratch)
                return nil
            } catch {
                return "\(error)"
            }
        })
    }

    static let signIn: [SettingDeclaration] = [
        SettingDeclaration(.signIn, "secure_cookies", flag: "secure-cookies", .boolean, default: "false",
                           help: "Mark the sign-in cookie Secure (when a TLS proxy serves the site)."),
        SettingDeclaration(.signIn, "cookie_domain", flag: "cookie-domain", .text, help: """
            The sign-in cookie's Domain (e.g. example.com), so an application on a sibling host behind nginx auth_request \
            receives it; by default this host only.
            """, check: cookieDomain),
        SettingDeclaration(.signIn, "lifetime_hours", flag: "signin-lifetime-hours", .integer(1...8760),
                           default: String(Int(defaults.signInLifetime / 3600)),
                           help: "Hours a signed-in session lasts, however much it is used."),
        // At most `lifetime_hours` too: `OperationOptions.validate()` holds the pair.
        SettingDeclaration(.signIn, "idle_hours", flag: "signin-idle-hours", .integer(1...8760),
                           default: String(Int(defaults.signInIdleTimeout / 3600)),
                           help: "Hours a signed-in session may go unused before it ends."),
        SettingDeclaration(.signIn, "recent_minutes", flag: "recent-signin-minutes", .integer(1...60),
                           default: String(Int(defaults.recentSignInLifetime / 60)), help: """
            Minutes after a sign-in (or confirming it on /account) during which the account page allows sensitive \
            changes; then it asks for the password again.
            """),
        SettingDeclaration(.signIn, "second_factor", flag: "second-factor", .choice(SecondFactorRule.allCases.map(\.rawValue)),
                           help: """
            Second factors: off (not offered), optional (each owner's choice) or required (every account signs in with \
            one; a passkey that verifies the person counts as both). Default: the policy's second_factor, else optional.
            """),
        SettingDeclaration(.signIn, "second_factor_key", flag: "second-factor-key", .text, help: """
            The key that seals second factors' secrets and keys their recovery codes: 32 bytes, as 64 hex digits or \
            base64 (openssl rand -hex 32); by default one kept in the store. Do not switch it while accounts have a \
            second factor on.
            """, secret: true, check: sealingKey),
        SettingDeclaration(.signIn, "provider_cookie_key", flag: "provider-cookie-key", .text, help: """
            The key that seals the cookies carrying a provider sign-in's flow and its answer: 32 bytes, as 64 hex \
            digits or base64 (openssl rand -hex 32); by default one kept in the store.
            """, secret: true, check: sealingKey),
    ]

    static let logging: [SettingDeclaration] = [
        SettingDeclaration(.logging, "level", flag: "log-level", .choice(Logger.Level.allCases.map(\.rawValue)), default: "info",
                           help: "Log level: trace, debug, info, notice, warning, error, critical."),
        SettingDeclaration(.logging, "format", flag: "log-format", .choice(["text", "json"]), default: "text",
                           help: "Log lines as text (for people) or json (one object per line, for log shippers)."),
        SettingDeclaration(.logging, "access_log", flag: "access-log", .choice(["on", "off"]), default: "on",
                           help: "One log line per request (method, route, status, duration, client): on or off."),
    ]

    /// The providers themselves are the policy's (`providers:` in docs/POLICY.md); here only
    /// where their secrets are, by the provider's id, since the policy never holds a secret.
    static let providers: [SettingDeclaration] = [
        SettingDeclaration(.providers, "client_secret_files", flag: "provider-client-secret-files", .document, help: """
            Each OpenID provider's client secret as a file of its own, by the provider's id in the policy \
            (work: /run/credentials/livesignup.service/work-client-secret); the variable the policy names \
            (client_secret_env), or that variable with _FILE, wins over it.
            """),
    ]

    static let metrics: [SettingDeclaration] = [
        SettingDeclaration(.metrics, "allow", flag: "metrics-allow", .list,
                           help: "An address or CIDR range besides loopback that may read /metrics; repeatable.",
                           check: addressRange),
    ]

    // MARK: Checks beyond the kinds', with the options' own words

    /// A whole number below `minimum` refused (the kind has already read it as one).
    private static func atLeast(_ minimum: Int) -> @Sendable (String) -> String? {
        { text in
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value < minimum else { return nil }
            return "must be at least \(minimum)"
        }
    }

    private static func httpURL(_ example: String) -> @Sendable (String) -> String? {
        { text in
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                  let host = url.host, !host.isEmpty else {
                return "must be an http(s) URL such as \(example), not '\(text)'"
            }
            return nil
        }
    }

    private static let instanceID: @Sendable (String) -> String? = { text in InstanceID.problem(with: text) }

    private static let resolver: @Sendable (String) -> String? = { text in DNSResolverSettings.problem(with: text) }

    private static let sender: @Sendable (String) -> String? = { text in
        text.contains("@") ? nil : "must hold an email address, not '\(text)'"
    }

    private static let aboveZero: @Sendable (String) -> String? = { text in
        guard let value = Double(text.trimmingCharacters(in: .whitespaces)), value <= 0 else { return nil }
        return "must be above 0"
    }

    private static let proofKey: @Sendable (String) -> String? = { text in
        text.utf8.count >= 16 ? nil : "must be at least 16 bytes long"
    }

    private static let webhookSecret: @Sendable (String) -> String? = { text in
        if case .failure(let reason) = WebhookSecret.parse(text) { return reason.description }
        return nil
    }

    private static let cookieDomain: @Sendable (String) -> String? = { text in
        guard text.wholeMatch(of: #/[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+/#) == nil else { return nil }
        return "must be a domain name in lower case such as example.com, not '\(text)'"
    }

    private static let addressRange: @Sendable (String) -> String? = { text in
        IPAddressRange(text) == nil ? "'\(text)' is not an IP address or CIDR range" : nil
    }

    private static let origin: @Sendable (String) -> String? = { text in
        if case .failure(let problem) = SiteOrigin.normalized(text) { return problem.description }
        return nil
    }

    private static let database: @Sendable (String) -> String? = { text in
        guard PostgresLocation.isURL(text) else { return nil }
        do {
            _ = try PostgresLocation(url: text)
            return nil
        } catch {
            return "\(error)"
        }
    }

    private static let smtpURL: @Sendable (String) -> String? = { text in
        guard let url = URL(string: text) else { return "'\(text)' is not a URL" }
        return SMTPTransport.check(url)
    }

    /// `LimitOptions.key(fromHex:)`'s form, without the variable's name (a file key says it).
    private static let hexKey: @Sendable (String) -> String? = { text in
        text.utf8.count == 64 && text.allSatisfy { $0.isASCII && $0.isHexDigit }
            ? nil : "must be 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`"
    }

    private static let sealingKey: @Sendable (String) -> String? = { text in
        SecondFactorSeal.key(from: text) == nil ? "must be 32 bytes, as 64 hex digits or base64" : nil
    }

    /// `30.0` as `30`, as an operator writes it.
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
