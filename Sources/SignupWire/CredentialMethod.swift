/// How the person will sign in to the account the form makes: with a password (the two
/// password fields and their checklist) or with a passkey (one step, `passkey.created`).
/// Sent as the form's `credential` (an edit of `POST /fields`, and the plain post), and in
/// the stream as the snapshot's `credential` key and the `credential` event.
public enum CredentialMethod: String, Codable, Sendable, CaseIterable {
    case password
    case passkey

    /// Its name as a form field (`POST /fields`' `field`, the plain post's hidden input).
    public static let fieldName = "credential"
}
