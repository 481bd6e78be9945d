import Foundation
import OutsideDNS
import ReactiveValidation
import SignupDomain

/// What one "can this domain receive mail?" check found.
public enum MailDomainCheck: Equatable, Sendable {
    case verdict(MailDomainVerdict)
    /// DNS gave no verdict (timeout, SERVFAIL, refused, too busy).
    case failed(MailDomainLookupFailure)

    /// `email.deliverable`'s state. Fails open: an address is refused only on DNS's clear
    /// word (NXDOMAIN, a null MX, no mail host), never because a resolver was slow or down.
    public var state: RequirementState {
        switch self {
        case .verdict(let verdict): verdict.canReceiveMail ? .met : .unmet
        case .failed: .met
        }
    }

    /// The metric label: the verdict's name, or "failed".
    public var label: String {
        switch self {
        case .verdict(let verdict): verdict.name
        case .failed: "failed"
        }
    }
}

/// Answers `email.deliverable` for the view model's debounced `switchToLatest` pipeline and
/// for the submit check, through a resolver (c-ares in production).
///
/// Verdicts are remembered per domain for `verdictLifetime` (a few thousand domains, the
/// newest), so a person's submit after the live check, and everyone on gmail.com, cost no
/// question. Failures are not remembered: the next check asks again. Questions for a domain
/// already being asked wait for that answer instead of asking twice.
public final class MailDomainChecker: MailDomainChecking, @unchecked Sendable {
    public let resolver: any MailDomainResolving
    private let now: @Sendable () -> Date
    private let verdictLifetime: TimeInterval
    private let capacity: Int
    private let lock = NSLock()
    private var remembered: [String: (verdict: MailDomainVerdict, until: Date)] = [:]
    private var rememberedOrder: [String] = []
    private var waiting: [String: [@Sendable (MailDomainCheck) -> Void]] = [:]
    private var observer: (@Sendable (MailDomainCheck, _ domain: String) -> Void)?

    public init(resolver: any MailDomainResolving, verdictLifetime: TimeInterval = 15 * 60, capacity: Int = 4096,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.resolver = resolver
        self.verdictLifetime = verdictLifetime
        self.capacity = capacity
        self.now = now
    }

    /// Called after every question DNS answered or failed (not for remembered verdicts):
    /// metrics and warnings.
    public func observeLookups(_ observer: @escaping @Sendable (MailDomainCheck, _ domain: String) -> Void) {
        lock.withLock { self.observer = observer }
    }

    /// The remembered verdict for `domain`, if it is still fresh.
    public func rememberedVerdict(for domain: String) -> MailDomainVerdict? {
        let now = now()
        return lock.withLock { remembered[domain].flatMap { $0.until > now ? $0.verdict : nil } }
    }

    /// Checks `address`'s domain; `completion` runs once, at once for a remembered verdict,
    /// else on the resolver's thread (it must not block there).
    public func check(address: String, then completion: @escaping @Sendable (MailDomainCheck) -> Void) {
        guard let domain = EmailAddress.domain(of: address) else {
            return completion(.verdict(.noSuchDomain))
        }
        check(domain: domain, then: completion)
    }

    public func check(domain: String, then completion: @escaping @Sendable (MailDomainCheck) -> Void) {
        if let verdict = rememberedVerdict(for: domain) { return completion(.verdict(verdict)) }
        let isFirst = lock.withLock { () -> Bool in
            let isFirst = waiting[domain] == nil
            waiting[domain, default: []].append(completion)
            return isFirst
        }
        guard isFirst else { return }
        resolver.verdict(for: domain) { [self] result in
            let check: MailDomainCheck
            switch result {
            case .success(let verdict): check = .verdict(verdict)
            case .failure(let failure): check = .failed(failure)
            }
            let (waiters, observer) = lock.withLock { () -> ([@Sendable (MailDomainCheck) -> Void], (@Sendable (MailDomainCheck, String) -> Void)?) in
                if case .verdict(let verdict) = check {
                    if remembered.updateValue((verdict, now().addingTimeInterval(verdictLifetime)), forKey: domain) == nil {
                        rememberedOrder.append(domain)
                    }
                    if rememberedOrder.count > capacity { remembered[rememberedOrder.removeFirst()] = nil }
                }
                return (waiting.removeValue(forKey: domain) ?? [], self.observer)
            }
            observer?(check, domain)
            for waiter in waiters { waiter(check) }
        }
    }

    /// `email.deliverable`'s state for `address` (`MailDomainChecking`).
    public func deliverability(of address: String, then completion: @escaping @Sendable (RequirementState) -> Void) {
        check(address: address) { completion($0.state) }
    }
}
