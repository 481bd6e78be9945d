import Foundation

extension EmailAddress {
    /// The part after the last "@", in lower case without a trailing dot; nil when there is
    /// no "@" or nothing after it.
    public static func domain(of address: String) -> String? {
        guard let at = address.lastIndex(of: "@") else { return nil }
        var domain = address[address.index(after: at)...].trimmingCharacters(in: .whitespaces).lowercased()
        if domain.hasSuffix(".") { domain.removeLast() }
        return domain.isEmpty ? nil : domain
    }
}

/// "Did you mean ada@gmail.com?": a likely typo in an address's domain, found by edit
/// distance against domains many people use (the GOV.UK email pattern). Only ever a
/// suggestion: a domain nobody listed may be exactly right.
public struct EmailDomainSuggester: Sendable, Equatable {
    /// The domains typos are corrected towards, most used first (a tie goes to the earlier).
    public let commonDomains: [String]
    private let common: Set<String>

    public init(commonDomains: [String]) {
        let domains = commonDomains.map { $0.lowercased() }
        self.commonDomains = domains
        self.common = Set(domains)
    }

    /// Mail providers most sign-ups use, worldwide and in the catalogs' languages' countries.
    public static let builtInCommonDomains = [
        "gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "icloud.com", "aol.com", "live.com", "msn.com",
        "googlemail.com", "me.com", "mac.com", "protonmail.com", "proton.me", "mail.com", "email.com", "ymail.com",
        "gmx.com", "gmx.de", "gmx.net", "web.de", "t-online.de", "freenet.de", "posteo.de", "mailbox.org",
        "yahoo.co.uk", "hotmail.co.uk", "btinternet.com", "comcast.net", "verizon.net", "att.net",
        "sbcglobal.net", "orange.fr", "free.fr", "laposte.net", "fastmail.com", "zoho.com", "hey.com",
        "yandex.ru", "mail.ru", "qq.com", "163.com", "126.com",
    ]

    public static let builtIn = EmailDomainSuggester(commonDomains: builtInCommonDomains)

    /// Top-level domains that do not exist but are one slip from one that does.
    static let misspeltTopLevelDomains: [String: String] = [
        "con": "com", "cmo": "com", "ocm": "com", "vom": "com", "xom": "com", "cim": "com", "cpm": "com",
        "clm": "com", "comm": "com", "coom": "com", "ccom": "com", "copm": "com", "comn": "com",
        "nte": "net", "ney": "net", "nett": "net", "ner": "net", "ogr": "org", "orgg": "org", "prg": "org",
        "otg": "org", "ed": "de", "dee": "de",
    ]

    /// The address with its domain corrected, or nil when the domain looks intended.
    public func suggestion(for address: String) -> String? {
        guard !commonDomains.isEmpty, EmailAddress.isValid(address), let at = address.lastIndex(of: "@"),
              let domain = EmailAddress.domain(of: address), !common.contains(domain) else { return nil }
        let local = address[..<at]
        // A top-level domain that does not exist is corrected whatever the name before it.
        var typed = domain
        if let dot = domain.lastIndex(of: "."),
           let fixed = Self.misspeltTopLevelDomains[String(domain[domain.index(after: dot)...])] {
            typed = String(domain[...dot]) + fixed
        }
        if let nearest = nearestCommon(to: typed) { return local + "@" + nearest }
        return typed == domain ? nil : local + "@" + typed
    }

    /// The common domain one or two slips away (one for short ones), if there is one.
    private func nearestCommon(to domain: String) -> String? {
        if common.contains(domain) { return domain }
        let typed = Array(domain.utf8)
        var best: (domain: String, distance: Int)?
        for candidate in commonDomains {
            let allowed = candidate.utf8.count < 8 ? 1 : 2
            guard abs(candidate.utf8.count - typed.count) <= allowed,
                  let distance = Self.editDistance(typed, Array(candidate.utf8), limit: allowed),
                  distance < (best?.distance ?? .max),
                  !Self.isOtherCountry(domain, of: candidate)
            else { continue }
            best = (candidate, distance)
        }
        return best?.domain
    }

    /// "gmx.at" is not a slip of "gmx.de": the same name under another real top-level domain
    /// is another provider (or another country's), unless the typed one was cut short
    /// ("gmail.co").
    private static func isOtherCountry(_ typed: String, of candidate: String) -> Bool {
        guard let typedDot = typed.lastIndex(of: "."), let candidateDot = candidate.lastIndex(of: ".") else { return false }
        let typedTop = typed[typed.index(after: typedDot)...], candidateTop = candidate[candidate.index(after: candidateDot)...]
        return typed[..<typedDot] == candidate[..<candidateDot] && typedTop != candidateTop
            && !candidateTop.hasPrefix(typedTop)
    }

    /// The distance between two texts' UTF-8 bytes, or nil past `limit`.
    public static func editDistance(_ a: String, _ b: String, limit: Int) -> Int? {
        editDistance(Array(a.utf8), Array(b.utf8), limit: limit)
    }

    /// Optimal string alignment distance (insertions, deletions, substitutions and swaps of
    /// neighbours each cost one), or nil once it exceeds `limit`.
    static func editDistance(_ a: [UInt8], _ b: [UInt8], limit: Int) -> Int? {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) <= limit ? max(a.count, b.count) : nil }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowBest = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    value = min(value, previous2[j - 2] + 1)
                }
                current[j] = value
                rowBest = min(rowBest, value)
            }
            if rowBest > limit { return nil }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count] <= limit ? previous[b.count] : nil
    }
}

/// Domains that hand out throwaway addresses (`email.disposable`): one domain a line, as the
/// `disposable-email-domains` project publishes them. A listed domain's subdomains are
/// throwaway too ("x.mailinator.com" as "mailinator.com").
public struct DisposableEmailDomains: Sendable, Equatable {
    public let domains: Set<String>

    public init<S: Sequence>(_ domains: S) where S.Element == String {
        self.domains = Set(domains.compactMap { line in
            var domain = line.trimmingCharacters(in: .whitespaces).lowercased()
            if domain.hasSuffix(".") { domain.removeLast() }
            return domain.isEmpty ? nil : domain
        })
    }

    public var count: Int { domains.count }

    /// Whether `address`'s domain, or a domain it is under, is listed.
    public func contains(address: String) -> Bool {
        guard let domain = EmailAddress.domain(of: address) else { return false }
        return contains(domain: domain)
    }

    public func contains(domain: String) -> Bool {
        var rest = Substring(domain)
        while true {
            if domains.contains(String(rest)) { return true }
            guard let dot = rest.firstIndex(of: ".") else { return false }
            rest = rest[rest.index(after: dot)...]
        }
    }
}
