/// The password strength meter: a score from 0 to 4 and its label (e.g. "Weak"). A struct
/// rather than a tuple so it can be Decodable and Equatable; extra keys the server may add
/// later (warnings, suggestions) are ignored when decoding.
public struct PasswordStrength: Decodable, Equatable, Hashable, Sendable {
    public var score: Int
    public var label: String

    public init(score: Int, label: String) {
        self.score = score
        self.label = label
    }
}
