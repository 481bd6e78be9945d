/// How the person will sign in to the account the form makes: with a password (the two
/// password fields and their checklist) or with a passkey (one step, `passkey.created`).
/// Sent as the form's `credential` (an edit of `POST /fields`, and the plain post), and in
/// the stream as the snapshot's `credential` key and the `credential` event.
///
/// `provider` (issue 45): the person signed in with an OpenID provider, whose identity the
/// account is linked to (one step, `provider.signed_in`). Only the server sets it, after the
/// provider's answer; a browser may repeat it only while it holds that sign-in's cookie.
public enum CredentialMethod: String, Codable, Sendable, CaseIterable {
    case password
    case passkey
    case provider

    /// The ones a person picks on the form (`provider` comes from the provider's answer).
    public static let chosenOnTheForm: [CredentialMethod] = [.password, .passkey]

    /// Its name as a form field (`POST /fields`' `field`, the plain post's hidden input).
    public static let fieldName = "credential"
}
