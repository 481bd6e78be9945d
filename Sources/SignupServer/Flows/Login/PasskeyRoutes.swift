import Foundation
import Identity
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
        challenges = services.signIn.passkeyChallenges
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

    var timeoutMilliseconds: Int { Int(challenges.lifetime * 1000) }

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

    func signIn(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
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

    // MARK: Checks

    /// A registration response as the browser's JSON carries it, with its credential id.
    func decodedRegistration(_ text: String) throws(PasskeyRefusal) -> (id: [UInt8], response: RegistrationResponse) {
        do throws(WebAuthnError) {
            return try RegistrationResponse.decode(json: text)
        } catch {
            throw verificationRefusal(error, signingIn: false)
        }
    }

    /// A registration response checked against `challenge` and this site.
    func verifiedRegistration(_ registration: (id: [UInt8], response: RegistrationResponse), challenge: [UInt8],
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
    func verifiedAssertion(_ text: String, request: HTTPRequest) throws(PasskeyRefusal)
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

    func verificationRefusal(_ error: WebAuthnError, signingIn: Bool) -> PasskeyRefusal {
        if error.code == "malformed" {
            return PasskeyRefusal(reason: "malformed", status: .badRequest, text: "passkey.error.refused", detail: error.detail)
        }
        return signingIn ? .verification(error, text: "signin.passkey_failed", status: .unauthorized)
            : .verification(error, text: "passkey.error.refused", status: .unprocessableContent)
    }

    func isStored(_ credentialID: [UInt8]) throws(PasskeyRefusal) -> Bool {
        do {
            return try store.passkey(credentialID: credentialID) != nil
        } catch {
            throw unavailable("the store could not be asked about the credential: \(error)")
        }
    }

    /// The signed-in person's account (the router read the session), or the refusal that
    /// says why there is none.
    func signedInAccount(_ request: RequestContext) throws(PasskeyRefusal) -> Account {
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

    func unavailable(_ detail: String) -> PasskeyRefusal {
        PasskeyRefusal(reason: "unavailable", status: .serviceUnavailable, text: "signin.unavailable", detail: detail)
    }

    /// The JSON refusal: `{"error":"passkey_refused","reason":…,"message":…}` (a store that
    /// cannot answer is `unavailable`, 503 with `Retry-After`), its line in the log, its count.
    func refused(_ refusal: PasskeyRefusal, ceremony: Ceremony, request: RequestContext) -> HTTPResponse {
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

    static func json(_ body: String, status: HTTPStatus) -> HTTPResponse {
        var response = HTTPResponse.json(body, status: status)
        response.headers.add("Cache-Control", "no-store")
        return response
    }
}
