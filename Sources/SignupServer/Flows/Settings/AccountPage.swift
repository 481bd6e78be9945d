import Foundation
import Identity
import MicroHTTPD
import SignupDomain
import WebKernel
import Locking

/// What `/account` shows: whose account, and where it is signed in.
struct AccountPage {
    struct Device {
        /// The session's handle, posted to end it.
        var handle: String
        /// "Firefox · Linux", "" when the browser did not say.
        var device: String
        var network: String
        var began: Date
        var lastUsed: Date
        var isThisBrowser: Bool
    }
    struct PasskeyEntry {
        /// Its credential id, base64url: posted to rename or remove it.
        var handle: String
        var name: String
        var created: Date
        var lastUsed: Date?
        /// Backed up by its provider (synced to the person's other devices), else bound to one device.
        var isSynced: Bool
        /// The account's only way in: it cannot be removed.
        var isLastWayIn: Bool
    }
    var username: String
    /// Until when sensitive changes are open (a recent sign-in); nil asks to confirm first.
    var openUntil: Date?
    /// Whether it confirms with its password (a passkey-only account signs in again).
    var confirmsWithPassword: Bool
    var hasPassword: Bool
    /// The account's address, and whether it can be changed here (mail is configured).
    var email: String
    var offersEmailChange: Bool
    /// Whether `/account/second-factor` has something to show (the policy offers one, or
    /// the account has one).
    var offersSecondFactor: Bool
    /// The change that sent the person here to confirm first (the confirmation continues to it).
    var continuation: RecentSignIn.Continuation?
    var devices: [Device]
    var passkeys: [PasskeyEntry]
    /// Identities from OpenID providers linked to the account (issue 45).
    struct ProviderEntry {
        var id: String
        var name: String
        var email: String
        var issuer: String
        var subject: String
        var linked: Date
        /// The account's only way in: it cannot be unlinked.
        var isLastWayIn: Bool
    }
    var linkedProviders: [ProviderEntry] = []
    /// Configured providers not linked yet: each a "Link <provider>" button.
    var linkableProviders: [(id: String, name: String)] = []
    /// The applications the account lets sign it in (issue 56), and whether any is configured.
    struct ApplicationEntry {
        var clientID: String
        var name: String
        var scopes: [String]
    }
    var applications: [ApplicationEntry] = []
    var offersApplications = false
    /// "Signed out on that device." after an ending.
    var notice: String?
    /// A refused request about the page as a whole.
    var error: String?
}

extension AccountPage {
    /// A device's line on the account page, and in its stream's `devices` events: one sentence
    /// of the language's (`account.device_details…`), the network and dates filled in. As HTML
    /// for the page (the dates in `<time>`, the network in `<bdi>`), as text for the stream.
    static func deviceDetails(network: String, began: Date, lastUsed: Date, language: Languages.Language, html: Bool) -> String {
        let text = language.catalog[network.isEmpty ? "account.device_details" : "account.device_details_network"] ?? ""
        let values: [String: MessageValue] = ["network": .name(network), "began": .date(began), "last_used": .date(lastUsed)]
        return html ? HTMLSentence.fill(text, values, language: language.tag) : language.filled(text, values)
    }

    /// The sign-out button's name for a screen reader: which device (`device` as recorded, ""
    /// when its browser said nothing recognisable), and when it was last used.
    static func endLabel(device: String, lastUsed: Date, language: Languages.Language) -> String {
        // "Sign out the browser last used …", not "Sign out A browser …": the unknown device's
        // name is a heading's words, not a name to put inside a sentence.
        let key = device.isEmpty ? "account.end_label_unknown_device" : "account.end_label"
        return language.filled(language.catalog[key] ?? "", ["device": .name(device), "last_used": .date(lastUsed)])
    }
}

extension AccountPage: PageView {
    static let template = "account"

    func fill(_ context: inout PageContext) {
        let page = self, language = context.language, assets = context.assets
        let text = context.text
        let title = text("account.title")
        context["pageTitle"] = context.title(title, failed: page.error != nil)
        context["heading"] = title
        context["leadHTML"] = text.html("account.lead", ["name": .name(page.username)])
        context["notice"] = page.notice
        context["hasError"] = page.error != nil
        context["errorMessage"] = page.error ?? ""
        context["sessionField"] = AccountRoutes.sessionField
        if let openUntil = page.openUntil {
            // The countdown's words for each minute left, in the language's plural forms (the
            // page's script picks one; it has no plural rules of its own).
            let byMinute = (0...60).map { text("account.unlocked_remaining").filled(["minutes": .number($0)], in: language) }
            let json = (try? JSONSerialization.data(withJSONObject: byMinute)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
            context["openUntil"] = ["iso": openUntil.ISO8601Format(), "text": text("account.unlocked", ["time": .date(openUntil)]),
                                    "remaining": text("account.unlocked_remaining"), "remainingByMinute": json]
        }
        context["asksToConfirm"] = page.openUntil == nil
        context["username"] = page.username
        context["confirmsWithPassword"] = page.confirmsWithPassword
        context["devices"] = page.devices.map { device -> [String: Any] in
            let name = device.device.isEmpty ? text("account.unknown_device") : device.device
            return [
                "handle": device.handle,
                "device": name,
                "detailsHTML": Self.deviceDetails(network: device.network, began: device.began, lastUsed: device.lastUsed,
                                                  language: language, html: true),
                "endLabel": Self.endLabel(device: device.device, lastUsed: device.lastUsed, language: language),
                "isThisBrowser": device.isThisBrowser,
            ]
        }
        context["hasOthers"] = page.devices.contains { !$0.isThisBrowser }
        context["hasPassword"] = page.hasPassword
        context["offersEmailChange"] = page.offersEmailChange
        context["offersSecondFactor"] = page.offersSecondFactor
        context["emailNowHTML"] = text.html("account.email_now", ["email": .name(page.email)])
        context["continuation"] = page.continuation?.rawValue ?? ""
        context["continueField"] = RecentSignIn.Continuation.field
        context["passkeyField"] = AccountRoutes.passkeyField
        context["passkeyNameField"] = AccountRoutes.passkeyNameField
        context["passkeyNameMax"] = PasskeyName.maximumLength
        context["offersProviders"] = !page.linkedProviders.isEmpty || !page.linkableProviders.isEmpty
        context["hasLinkedProviders"] = !page.linkedProviders.isEmpty
        context["offersApplications"] = page.offersApplications || !page.applications.isEmpty
        context["hasApplications"] = !page.applications.isEmpty
        context["applications"] = page.applications.map { entry -> [String: Any] in
            ["clientID": entry.clientID, "name": entry.name,
             "scopes": entry.scopes.map { ["scope": $0, "text": text("consent.scope.\($0)")] }]
        }
        context["linkedProviders"] = page.linkedProviders.map { entry -> [String: Any] in
            ["id": entry.id, "name": entry.name, "email": entry.email, "issuer": entry.issuer, "subject": entry.subject,
             "detailsHTML": text.html("account.provider_details", ["email": .name(entry.email), "date": .date(entry.linked)]),
             "isLastWayIn": entry.isLastWayIn]
        }
        context["linkableProviders"] = page.linkableProviders.map { provider -> [String: String] in
            ["id": provider.id, "labelHTML": text.html("account.provider_link", ["provider": .name(provider.name)])]
        }
        // An account without a password confirms who it is with a provider it has linked.
        context["confirmProviders"] = page.linkedProviders.map { entry -> [String: String] in
            ["id": entry.id, "labelHTML": text.html("provider.continue", ["provider": .name(entry.name)])]
        }
        context["hasPasskeys"] = !page.passkeys.isEmpty
        context["passkeyCount"] = page.passkeys.count
        context["passkeyScriptURL"] = assets.url(for: "passkey.js")
        context["accountScriptURL"] = assets.url(for: "account.js")
        context["passkeys"] = page.passkeys.map { passkey -> [String: Any] in
            [
                "handle": passkey.handle,
                "name": passkey.name,
                "detailsHTML": passkey.lastUsed.map { text.html("account.passkey_details", ["created": .date(passkey.created), "last_used": .date($0)]) }
                    ?? text.html("account.passkey_details_unused", ["created": .date(passkey.created)]),
                "removeLabel": text("account.passkey_remove_label", ["name": .name(passkey.name)]),
                "kind": text(passkey.isSynced ? "account.passkey_synced" : "account.passkey_device_bound"),
                "isLastWayIn": passkey.isLastWayIn,
            ]
        }
    }
}
