import Foundation
import Logging
import MicroHTTPD
import SignupDomain
import SignupWire
import WebAuthn
import WebKernel

/// Passkeys (WebAuthn): made on the sign-up form (`POST /passkeys/options`, `/passkeys/register`),
/// signed in with (`/passkeys/signin/options`, `/passkeys/signin`) and added to a signed-in
/// account (`/account/passkeys/options`, `/account/passkeys`). The page's script calls them
/// with `fetch`; every answer is JSON, every refusal names its reason (the log, the metric,
/// the body's `reason`) and says in the person's language what to do.
struct PasskeyRoutes: Sendable, ServicesReader {
    /// What it reads by name (`ServicesReader`): `refusals`, `sessions`, `store`, `signedIn`, `limiters`,
    /// `metrics`, `logger`, `sameOrigin`, `now`.
    let services: Services
    let challenges: PasskeyChallenges
    let announcer: AccountAnnouncer
    /// A passkey that did not verify the person is one factor: the code is asked for too.
    let funnel: SignInFunnel

    init(_ services: Services) {
        self.services = services
        funnel = SignInFunnel(services)
        announcer = AccountAnnouncer(services)
        challenges = services.passkeyChallenges
    }

    /// The ceremonies a metric counts separately.
    enum Ceremony: String, CaseIterable, Sendable {
        case register, signin, add
    }

    /// This site as WebAuthn names it for `request`: its origins (the configured public ones,
    /// then the one the request names) and, as the id, the host of the first.
    func relyingParty(for request: HTTPRequest) -> RelyingParty {
        let origins = sameOrigin.siteOrigins(for: request)
        let host = origins.lazy.compactMap { URLComponents(string: $0)?.host }.first ?? "localhost"
        // URLComponents keeps an IPv6 literal's brackets; an rp id has none (and browsers
        // refuse IP addresses as rp ids anyway, so such a site gets a readable refusal).
        return RelyingParty(id: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), origins: origins)
    }

    private var timeoutMilliseconds: Int { Int(challenges.lifetime * 1000) }

    // MARK: Sign-up form

    /// `POST /passkeys/options`: creation options for the form's passkey, bound to its session.
    func registrationOptions(_ request: RequestContext) -> HTTPResponse {
        registrationOptions(request.form, request)
    }

    private func registrationOptions(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
        guard let token = form["token"] ?? request.http.queryValue("token"), !token.isEmpty else {
            return APIError.missingParameter("token").response
        }
        // A form nobody typed in has no session yet, and so no username either.
        let session = sessions.existingSession(for: token)
        guard session != nil || sessions.acceptsForLiveUse(token) else { return APIError.unknownSession.response }
        guard let session, case let username = session.typedUsername, !username.isEmpty else {
            return refused(PasskeyRefusal(reason: "username_first", status: .conflict, text: "passkey.error.username_first",
                                                 detail: "no username typed yet"), ceremony: .register, request: request)
        }
        let offer = LiveFormSession.PasskeyOffer(
            challenge: (0..<32).map { _ in UInt8.random(in: .min ... .max) },
            userHandle: (0..<32).map { _ in UInt8.random(in: .min ... .max) },
            expiresAt: now().addingTimeInterval(challenges.lifetime),
            browserNonce: Base64URL.encode((0..<16).map { _ in UInt8.random(in: .min ... .max) }))
        session.offerPasskey(offer)
        let options = CreationOptions(
            relyingParty: relyingParty(for: request.http), name: request.policy.settings.serviceName, userHandle: offer.userHandle,
            userName: username, challenge: offer.challenge, timeoutMilliseconds: timeoutMilliseconds)
        var response = Self.json(options.json, status: .ok)
        response.headers.add("Set-Cookie", SetCookie(Self.browserCookie, offer.browserNonce, path: "/passkeys",
                                                     maxAge: Int(challenges.lifetime), sameSite: .strict,
                                                     secure: signedIn.secureCookies).header)
        return response
    }

    /// The cookie that binds a form's passkey options to the browser that asked for them.
    static let browserCookie = "livesignup_passkey_browser"

    /// `POST /passkeys/register`: the browser's new credential for the form. Verified, it is
    /// kept with the session (stored with the account it creates) and `passkey.created` is met.
    func register(_ request: RequestContext) -> HTTPResponse {
        register(request.form, request)
    }

    private func register(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
        guard let token = form["token"] ?? request.http.queryValue("token"), !token.isEmpty else {
            return APIError.missingParameter("token").response
        }
        guard let text = form["response"] else { return APIError.missingParameter("response").response }
        guard let session = sessions.existingSession(for: token) else { return APIError.unknownSession.response }
        do throws(PasskeyRefusal) {
            // Taken first: whatever this response is, the challenge it answers is spent, but
            // only by the browser that asked for it (the token alone travels in URLs).
            let offer: LiveFormSession.PasskeyOffer
            switch session.takePasskeyOffer(presenting: request.http.cookieValues(named: Self.browserCookie)) {
            case .taken(let taken): offer = taken
            case .none: throw .expired("no options were sent to this form, or they were used")
            case .otherBrowser:
                throw PasskeyRefusal(reason: "other_browser", status: .forbidden, text: "passkey.error.other_browser",
                                     detail: "the browser did not present the cookie its options came with")
            }
            guard offer.expiresAt > now() else { throw .expired("the options expired at \(offer.expiresAt)") }
            let made = try verifiedRegistration(decodedRegistration(text), challenge: offer.challenge, request: request.http)
            if try isStored(made.credentialID) { throw .exists }
            session.acceptPasskey(NewPasskey(
                credentialID: made.credentialID, publicKey: made.publicKey, algorithm: made.algorithm.rawValue,
                signCount: made.signCount, transports: made.transports, isBackupEligible: made.isBackupEligible,
                isBackedUp: made.isBackedUp, userHandle: offer.userHandle, createdAt: now()))
            metrics.passkey(.register, "accepted")
            logger.info("Passkey made on a sign-up form", metadata: ["client": "\(request.client)",
                                                                   "algorithm": "\(made.algorithm)", "format": "\(made.attestationFormat)"])
            return Self.json("{\"created\":true}", status: .created)
        } catch {
            return refused(error, ceremony: .register, request: request)
        }
    }

    // MARK: Signing in

    /// `POST /passkeys/signin/options`: a signed, single-use challenge for a discoverable
    /// sign-in (the button, or the browser's autofill on the username field).
    func signInOptions(_ request: RequestContext) -> HTTPResponse {
        let options = RequestOptions(relyingParty: relyingParty(for: request.http),
                                     challenge: challenges.make(for: "signin"), timeoutMilliseconds: timeoutMilliseconds)
        return Self.json(options.json, status: .ok)
    }

    /// `POST /passkeys/signin`: the assertion checked (signature over the authenticator data
    /// and the client data's hash, the counter, the user handle); the same signed-in session
    /// as a password's, answered as `{"location": …}` for the script to follow.
    func signIn(_ request: RequestContext) -> HTTPResponse {
        signIn(request.form, request)
    }

    private func signIn(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
        guard let text = form["response"] else { return APIError.missingParameter("response").response }
        // Paid for before the assertion is decoded and checked, given back when it signs in
        // (as a password's guess is): parallel tries cannot all pass a look taken first.
        do throws(LimitExceeded) {
            try limiters.signinFailuresPerAddress.admit(request.clientKey)
        } catch {
            metrics.signin(.rateLimited)
            return refusals.limited(error)
        }
        do throws(PasskeyRefusal) {
            let (account, passkey, isUserVerified) = try verifiedAssertion(text, request: request.http)
            // A disabled account's refusal is given back below (a 403 is not a failed proof).
            if account.disabledAt != nil {
                metrics.signin(.disabled)
                logger.notice("Passkey sign-in refused: the account is disabled",
                              metadata: ["event": "signin_disabled", "account": "\(account.id)", "client": "\(request.client)"])
                throw PasskeyRefusal(reason: "disabled", status: .forbidden, text: "signin.disabled", detail: "the account is disabled")
            }
            limiters.signinFailuresPerAddress.refund(request.clientKey)
            // A passkey that verified the person (UV) is both factors; one that did not is the
            // first only, and an account with a second factor (or a policy requiring one) asks
            // for its code too. Only a passkey that verified the person opens sensitive changes
            // at once.
            let outcome: SignInFunnel.Outcome
            do { outcome = try funnel.finish(account, proved: .passkey(userVerified: isUserVerified), request) } catch {
                throw unavailable("the second factor or the signed-in session could not be stored: \(error)")
            }
            let cookies: [String]
            switch outcome {
            case .secondStep(let step):
                var json = JSONWriter()
                json.beginObject(); json.key("location"); json.string(step.headers["Location"] ?? "/signin/second-factor")
                json.endObject()
                var response = Self.json(json.text, status: .ok)
                for cookie in step.headers.values(of: "Set-Cookie") { response.headers.add("Set-Cookie", cookie) }
                return response
            case .signedIn(let made):
                cookies = made
            }
            metrics.signin(.success)
            metrics.passkey(.signin, "accepted")
            logger.notice("Signed in with a passkey", metadata: ["event": "signin", "method": "passkey", "account": "\(account.id)",
                                                                 "client": "\(request.client)",
                                                               "transports": "\(passkey.transports.joined(separator: ","))"])
            let location = request.returnTarget ?? "/welcome" + PageRenderer.languageQuery(request.language)
            var json = JSONWriter()
            json.beginObject(); json.key("location"); json.string(location); json.endObject()
            var response = Self.json(json.text, status: .ok)
            for cookie in cookies { response.headers.add("Set-Cookie", cookie) }
            return response
        } catch {
            if error.status == .unauthorized || error.status == .unprocessableContent || error.status == .badRequest {
                metrics.signin(.failure)
            } else {
                // Not a response judged wrong (options expired or replayed, a store that could
                // not answer): nothing to charge.
                limiters.signinFailuresPerAddress.refund(request.clientKey)
            }
            return refused(error, ceremony: .signin, request: request)
        }
    }

    // MARK: A signed-in account

    /// The purposes of an added passkey's challenge: asked for with the button, or by the
    /// browser's own offer (`mediation=conditional`), whose authenticator may not set UP.
    private static func addPurpose(_ account: Account, conditional: Bool) -> String {
        (conditional ? "add-conditional:" : "add:") + String(account.id)
    }

    /// `POST /account/passkeys/options` (`mediation=conditional` for the browser's own offer):
    /// creation options for one more passkey of the signed-in account (its user handle; its
    /// passkeys excluded, so one authenticator is not registered twice).
    func addOptions(_ request: RequestContext) -> HTTPResponse {
        addOptions(request.form, request)
    }

    private func addOptions(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
        do throws(PasskeyRefusal) {
            let account = try signedInAccount(request)
            let handle: [UInt8], existing: [Passkey]
            do {
                handle = try store.userHandle(ofAccount: account.id)
                existing = try store.passkeys(ofAccount: account.id)
            } catch {
                throw unavailable("the account's passkeys could not be read: \(error)")
            }
            let options = CreationOptions(
                relyingParty: relyingParty(for: request.http), name: request.policy.settings.serviceName, userHandle: handle,
                userName: account.username,
                challenge: challenges.make(for: Self.addPurpose(account, conditional: form["mediation"] == "conditional")),
                timeoutMilliseconds: timeoutMilliseconds, excluding: existing.map { ($0.credentialID, $0.transports) })
            return Self.json(options.json, status: .ok)
        } catch {
            return refused(error, ceremony: .add, request: request)
        }
    }

    /// `POST /account/passkeys`: the new credential, verified and stored with the account.
    func add(_ request: RequestContext) -> HTTPResponse {
        add(request.form, request)
    }

    private func add(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
        guard let text = form["response"] else { return APIError.missingParameter("response").response }
        do throws(PasskeyRefusal) {
            let account = try signedInAccount(request)
            let registration = try decodedRegistration(text)
            let challenge: [UInt8]
            do throws(WebAuthnError) {
                challenge = try WebAuthnCeremony.challenge(inClientData: registration.response.clientDataJSON)
            } catch {
                throw verificationRefusal(error, signingIn: false)
            }
            let purpose = try challenges.spend(challenge, forOneOf: [true, false].map { Self.addPurpose(account, conditional: $0) })
            let made = try verifiedRegistration(registration, challenge: challenge, request: request.http,
                                                requireUserPresence: purpose != Self.addPurpose(account, conditional: true))
            let count: Int, time = now()
            // Named after the browser it was made in until its owner names it.
            let name = PasskeyName.cleaned(DeviceLabel.of(userAgent: request.http.headers["User-Agent"])) ?? ""
            do {
                // The owner is told in the same transaction: a passkey added by someone else
                // with a stolen session and a recent sign-in does not go unnoticed.
                let events = try announcer.events(.passkeyAdded, webhook: "account.passkey_added", for: account,
                                                  detail: name.isEmpty ? request.text("account.unknown_device") : name,
                                                  language: request.language, at: time)
                try store.addPasskey(Passkey(
                    credentialID: made.credentialID, accountID: account.id, publicKey: made.publicKey,
                    algorithm: made.algorithm.rawValue, signCount: made.signCount, transports: made.transports,
                    isBackupEligible: made.isBackupEligible, isBackedUp: made.isBackedUp, createdAt: time, name: name),
                    events: events)
                count = try store.passkeys(ofAccount: account.id).count
            } catch PasskeyError.credentialExists {
                throw PasskeyRefusal.exists
            } catch {
                throw unavailable("the passkey could not be stored: \(error)")
            }
            metrics.passkey(.add, "accepted")
            announcer.nudge()
            logger.notice("Passkey added to an account", metadata: ["event": "passkey_added", "account": "\(account.id)", "client": "\(request.client)"])
            return Self.json("{\"added\":true,\"passkeys\":\(count)}", status: .created)
        } catch {
            return refused(error, ceremony: .add, request: request)
        }
    }

    // MARK: Checks

    /// A registration response as the browser's JSON carries it, with its credential id.
    private func decodedRegistration(_ text: String) throws(PasskeyRefusal) -> (id: [UInt8], response: RegistrationResponse) {
        do throws(WebAuthnError) {
            return try RegistrationResponse.decode(json: text)
        } catch {
            throw verificationRefusal(error, signingIn: false)
        }
    }

    /// A registration response checked against `challenge` and this site.
    private func verifiedRegistration(_ registration: (id: [UInt8], response: RegistrationResponse), challenge: [UInt8],
                                      request: HTTPRequest, requireUserPresence: Bool = true) throws(PasskeyRefusal) -> VerifiedRegistration {
        do throws(WebAuthnError) {
            let made = try WebAuthnCeremony.verifyRegistration(registration.response, expectedChallenge: challenge,
                                                               relyingParty: relyingParty(for: request),
                                                               requireUserPresence: requireUserPresence)
            guard made.credentialID == registration.id else {
                throw WebAuthnError("bad_authenticator_data", "the credential id differs from the authenticator data's")
            }
            return made
        } catch {
            throw verificationRefusal(error, signingIn: false)
        }
    }

    /// An assertion checked: its challenge is ours and unspent, its credential stored, its
    /// signature, counter and user handle right. Returns the account it signs in.
    private func verifiedAssertion(_ text: String, request: HTTPRequest) throws(PasskeyRefusal)
        -> (account: Account, passkey: Passkey, isUserVerified: Bool) {
        let response: AssertionResponse, challenge: [UInt8]
        do throws(WebAuthnError) {
            response = try AssertionResponse(json: text)
            challenge = try WebAuthnCeremony.challenge(inClientData: response.clientDataJSON)
        } catch {
            throw verificationRefusal(error, signingIn: true)
        }
        try challenges.spend(challenge, for: "signin")
        let found: (passkey: Passkey, handle: [UInt8], account: Account?)?
        do {
            found = try store.passkey(credentialID: response.credentialID).map { passkey in
                let handle = try store.userHandle(ofAccount: passkey.accountID)
                return (passkey, handle, try store.account(withUserHandle: handle))
            }
        } catch {
            throw unavailable("the passkey could not be read: \(error)")
        }
        guard let (passkey, handle, account) = found else {
            throw PasskeyRefusal(reason: "unknown_credential", status: .unauthorized, text: "passkey.error.unknown",
                                 detail: "no stored passkey has this credential id")
        }
        guard let account else { throw unavailable("a passkey without its account") }
        let verified: VerifiedAssertion
        do throws(WebAuthnError) {
            verified = try WebAuthnCeremony.verifyAssertion(
                response, expectedChallenge: challenge, relyingParty: relyingParty(for: request),
                credential: StoredCredential(id: passkey.credentialID, publicKey: passkey.publicKey,
                                             signCount: passkey.signCount, userHandle: handle))
        } catch {
            throw verificationRefusal(error, signingIn: true)
        }
        let recorded: Bool
        do {
            recorded = try store.recordPasskeyUse(credentialID: passkey.credentialID, signCount: verified.signCount,
                                                  isBackedUp: verified.isBackedUp, at: now())
        } catch {
            throw unavailable("the passkey's use could not be recorded: \(error)")
        }
        // Another sign-in got there first with a counter as high: one of them is a clone.
        guard recorded else {
            throw verificationRefusal(WebAuthnError("sign_count", "another sign-in recorded this counter first"), signingIn: true)
        }
        return (account, passkey, verified.isUserVerified)
    }

    private func verificationRefusal(_ error: WebAuthnError, signingIn: Bool) -> PasskeyRefusal {
        if error.code == "malformed" {
            return PasskeyRefusal(reason: "malformed", status: .badRequest, text: "passkey.error.refused", detail: error.detail)
        }
        return signingIn ? .verification(error, text: "signin.passkey_failed", status: .unauthorized)
            : .verification(error, text: "passkey.error.refused", status: .unprocessableContent)
    }

    private func isStored(_ credentialID: [UInt8]) throws(PasskeyRefusal) -> Bool {
        do {
            return try store.passkey(credentialID: credentialID) != nil
        } catch {
            throw unavailable("the store could not be asked about the credential: \(error)")
        }
    }

    /// The signed-in person's account (the router read the session), or the refusal that
    /// says why there is none.
    private func signedInAccount(_ request: RequestContext) throws(PasskeyRefusal) -> Account {
        switch request.signedIn {
        case .account(let account):
            return account
        case .unavailable(let error):
            throw unavailable("the signed-in session could not be read: \(error)")
        case .signedOut, .notAsked:
            throw PasskeyRefusal(reason: "signed_out", status: .unauthorized, text: "passkey.error.signed_out",
                                 detail: "no signed-in session")
        }
    }

    private func unavailable(_ detail: String) -> PasskeyRefusal {
        PasskeyRefusal(reason: "unavailable", status: .serviceUnavailable, text: "signin.unavailable", detail: detail)
    }

    /// The JSON refusal: `{"error":"passkey_refused","reason":…,"message":…}` (a store that
    /// cannot answer is `unavailable`, 503 with `Retry-After`), its line in the log, its count.
    private func refused(_ refusal: PasskeyRefusal, ceremony: Ceremony, request: RequestContext) -> HTTPResponse {
        let text: (String) -> String = request.text, client = request.client
        metrics.passkey(ceremony, refusal.reason)
        if refusal.reason == "unavailable" {
            logger.error("Passkey \(ceremony.rawValue) failed: the account store is unavailable",
                         metadata: ["detail": "\(refusal.detail)"])
            return request.storeUnavailable(message: refusal.text)
        }
        logger.notice("Passkey \(ceremony.rawValue) refused",
                      metadata: ["reason": "\(refusal.reason)", "detail": "\(refusal.detail)", "client": "\(client)"])
        var error = APIError(status: refusal.status, code: "passkey_refused", message: text(refusal.text))
        error.reason = refusal.reason
        var response = error.response
        response.headers.add("Cache-Control", "no-store")
        return response
    }

    private static func json(_ body: String, status: HTTPStatus) -> HTTPResponse {
        var response = HTTPResponse.json(body, status: status)
        response.headers.add("Cache-Control", "no-store")
        return response
    }
}
