import ReactiveValidation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif

/// The questions the rules may ask outside the process: is this password in a known breach,
/// can this address's domain receive mail. Services given to the evaluation (the view model,
/// the submit check), never part of `FormPolicy`, which is data: the policy only knows
/// whether `password.breached` and `email.deliverable` are requirements (`Lookups.Kinds`).
public struct Lookups: Sendable {
    public var breachedPasswords: BreachedPasswordChecker?
    public var mailDomains: (any MailDomainChecking)?
    /// A new-password form's "is this the account's password now?" (`password.not_current`),
    /// given to that form's session only; the account's policy says whether it has the rule.
    public var currentPassword: (any CurrentPasswordChecking)?

    public init(breachedPasswords: BreachedPasswordChecker? = nil, mailDomains: (any MailDomainChecking)? = nil,
                currentPassword: (any CurrentPasswordChecking)? = nil) {
        self.breachedPasswords = breachedPasswords
        self.mailDomains = mailDomains
        self.currentPassword = currentPassword
    }

    /// No questions outside: neither requirement exists.
    public static let none = Lookups()

    /// Which of the outside requirements a policy has.
    public struct Kinds: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `password.breached`.
        public static let breachedPasswords = Kinds(rawValue: 1)
        /// `email.deliverable`.
        public static let mailDomains = Kinds(rawValue: 2)
    }

    /// The requirements these services can answer.
    public var kinds: Kinds {
        var kinds: Kinds = []
        if breachedPasswords != nil { kinds.insert(.breachedPasswords) }
        if mailDomains != nil { kinds.insert(.mailDomains) }
        return kinds
    }

    /// `password.breached`'s state for a submitted password, looked up now (nil when the
    /// policy has no such requirement; `unmet` for passwords too short to be looked up, which
    /// their length rule refuses anyway).
    public func breachStateNow(for password: String, in policy: FormPolicy) -> RequirementState? {
        switch breachQuestion(for: password, in: policy) {
        case .known(let state): return state
        case .ask(let checker): return checker.verdictNow(for: password).state
        }
    }

    /// The same, on the breach checker's threads, handed to `completion` there; at once (on
    /// the caller's thread) when no look-up is needed. A look-up can take the source's whole
    /// timeout, so request threads never wait for one.
    public func breachState(for password: String, in policy: FormPolicy,
                            then completion: @escaping @Sendable (RequirementState?) -> Void) {
        switch breachQuestion(for: password, in: policy) {
        case .known(let state): completion(state)
        case .ask(let checker): checker.submittedVerdict(for: password) { completion($0.state) }
        }
    }

    /// `email.deliverable`'s state for a submitted address: nil when the policy has no such
    /// requirement, `unmet` for an address the email's own rules refuse (never asked about),
    /// else the checker's answer (a remembered one at once, on the caller's thread; otherwise
    /// on the checker's thread, which `completion` must leave quickly).
    public func deliverableState(for email: String, in policy: FormPolicy,
                                 then completion: @escaping @Sendable (RequirementState?) -> Void) {
        guard let rule = policy.emailDeliverabilityRule, let checker = mailDomains else { return completion(nil) }
        guard rule.isEligible(email) else { return completion(.unmet) }
        checker.deliverability(of: email) { completion($0) }
    }

    private enum BreachQuestion {
        /// Known without asking: nil without the requirement, `unmet` when too short to ask about.
        case known(RequirementState?)
        case ask(BreachedPasswordChecker)
    }

    private func breachQuestion(for password: String, in policy: FormPolicy) -> BreachQuestion {
        guard let checker = breachedPasswords, let rule = policy.passwordBreachRule(checkingWith: checker) else {
            return .known(nil)
        }
        return rule.isEligible(password) ? .ask(checker) : .known(.unmet)
    }
}

/// Answers "can this address's domain receive mail?" (`email.deliverable`), for the view
/// model's debounced pipeline and the submit check. `SignupLookups.MailDomainChecker` asks
/// DNS; tests give their own.
public protocol MailDomainChecking: Sendable {
    /// `email.deliverable`'s state for `address`: `completion` runs once, at once for an
    /// answer known already, else on the checker's thread (where it must not block).
    func deliverability(of address: String, then completion: @escaping @Sendable (RequirementState) -> Void)
}

extension MailDomainChecking {
    /// `email.deliverable`'s state for `address`, asked when subscribed.
    public func state(of address: String) -> AnyPublisher<RequirementState, Never> {
        Deferred {
            Future<RequirementState, Never> { promise in
                // A Future's promise may be called from any thread (it locks internally).
                nonisolated(unsafe) let promise = promise
                deliverability(of: address) { promise(.success($0)) }
            }
        }
        .eraseToAnyPublisher()
    }
}

/// Answers "is this the account's password now?" for a new-password form (account
/// recovery): `password.not_current`. The server's checks the argon2id hash on its hashing
/// queue; tests give their own.
public protocol CurrentPasswordChecking: Sendable {
    /// `password.not_current`'s state for `password`: `met` when it is not the current one.
    /// Asked when subscribed; answers once.
    func state(of password: String) -> AnyPublisher<RequirementState, Never>
}
