import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import SignupWire
import WebAuthn
import WebKernel

extension PasskeyRoutes {
    // MARK: Sign-up form

    /// `POST /passkeys/options`: creation options for the form's passkey, bound to its session.
    func registrationOptions(_ request: RequestContext) -> HTTPResponse {
        registrationOptions(request.form, request)
    }

    func registrationOptions(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
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

    func register(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
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
}
