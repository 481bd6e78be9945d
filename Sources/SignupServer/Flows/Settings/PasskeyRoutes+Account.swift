import Foundation
import Identity
import Logging
import MicroHTTPD
import SignupDomain
import SignupWire
import WebAuthn
import WebKernel

extension PasskeyRoutes {
    // MARK: A signed-in account

    /// The purposes of an added passkey's challenge: asked for with the button, or by the
    /// browser's own offer (`mediation=conditional`), whose authenticator may not set UP.
    static func addPurpose(_ account: Account, conditional: Bool) -> String {
        (conditional ? "add-conditional:" : "add:") + String(account.id)
    }

    /// `POST /account/passkeys/options` (`mediation=conditional` for the browser's own offer):
    /// creation options for one more passkey of the signed-in account (its user handle; its
    /// passkeys excluded, so one authenticator is not registered twice).
    func addOptions(_ request: RequestContext) -> HTTPResponse {
        addOptions(request.form, request)
    }

    func addOptions(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
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

    func add(_ form: URLEncodedForm, _ request: RequestContext) -> HTTPResponse {
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
                                                  detail: name.isEmpty ? .text(request.text("account.unknown_device")) : .name(name),
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
}
