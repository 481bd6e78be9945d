import Crypto
import Foundation

/// Why a posted solution was refused; `rawValue` is the metric label and the JSON error code.
public enum ProofOfWorkRefusal: String, Error, Sendable, CaseIterable {
    /// Not base64 of the expected JSON, or a field missing or out of range.
    case malformed
    /// The signature or the challenge does not match: not ours, or tampered with.
    case forged
    /// Its `expires` has passed.
    case expired
    /// Minted for another form.
    case foreignForm = "foreign_form"
    /// Already used once (on any instance).
    case replayed
    /// Cheaper than this client must pay now.
    case tooCheap = "too_cheap"
}

/// A solution that passed every check but single use, which the store decides.
public struct VerifiedProof: Equatable, Sendable {
    /// What makes it single use: the challenge, unique per salt.
    public let challenge: String
    public let expiresAt: Date
    /// The `maxnumber` it was minted with.
    public let cost: Int
}

/// Mints and checks challenges under the server's key (every instance holding the key
/// checks any instance's challenges).
public struct ProofOfWorkAuthority: Sendable {
    public static let algorithm = "SHA-256"
    /// Longest `altcha` field accepted: a real payload is under 400 bytes.
    public static let maximumPayloadLength = 2048
    /// Kept as bytes: swift-crypto's SymmetricKey is not Sendable.
    private let keyBytes: [UInt8]
    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    public init(key: [UInt8]) {
        self.keyBytes = key
    }

    /// A fresh random key.
    public static func makeKey() -> [UInt8] {
        SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
    }

    /// What binds a challenge to one form: 16 hex digits of a keyed hash of its token.
    func binding(of formToken: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Array(("form\u{0}" + formToken).utf8), using: key)
        return Hex.encode(Array(code.prefix(8)))
    }

    public func challenge(for formToken: String, maxNumber: Int, expiresAt: Date) -> ProofOfWorkChallenge {
        var random = SystemRandomNumberGenerator()
        let nonce = Hex.encode((0..<12).map { _ in UInt8.random(in: .min ... .max, using: &random) })
        let expires = Int64(expiresAt.timeIntervalSince1970.rounded(.up))
        let salt = "\(nonce)?expires=\(expires)&form=\(binding(of: formToken))&cost=\(maxNumber)&"
        let number = Int.random(in: 0...maxNumber, using: &random)
        let challenge = Hex.encode(Array(SHA256.hash(data: Array((salt + String(number)).utf8))))
        return ProofOfWorkChallenge(algorithm: Self.algorithm, challenge: challenge, maxnumber: maxNumber,
                                    salt: salt, signature: sign(challenge))
    }

    private func sign(_ challenge: String) -> String {
        Hex.encode(Array(HMAC<SHA256>.authenticationCode(for: Array(challenge.utf8), using: key)))
    }

    /// Checks an `altcha` field for `formToken` at `now`: shape, signature, work, expiry and
    /// form. Single use is the store's to check (`spendProof`).
    public func verify(_ field: String, formToken: String, now: Date) -> Result<VerifiedProof, ProofOfWorkRefusal> {
        guard field.utf8.count <= Self.maximumPayloadLength,
              let data = Data(base64Encoded: field.trimmingCharacters(in: .whitespacesAndNewlines)),
              let solution = try? JSONDecoder().decode(ProofOfWorkSolution.self, from: data),
              solution.algorithm == Self.algorithm, solution.number >= 0,
              solution.salt.utf8.count <= 512, solution.challenge.utf8.count == 64
        else { return .failure(.malformed) }
        // The keyed signature first: anything not minted here stops before any other detail
        // is looked at, in constant time.
        guard HMAC<SHA256>.isValidAuthenticationCode(
                Hex.decode(Substring(solution.signature)) ?? [], authenticating: Array(solution.challenge.utf8), using: key),
              Hex.encode(Array(SHA256.hash(data: Array((solution.salt + String(solution.number)).utf8)))) == solution.challenge
        else { return .failure(.forged) }
        let parameters = Self.parameters(of: solution.salt)
        guard let expires = parameters["expires"].flatMap(Int64.init), let cost = parameters["cost"].flatMap(Int.init),
              let form = parameters["form"]
        else { return .failure(.malformed) }
        let expiresAt = Date(timeIntervalSince1970: TimeInterval(expires))
        guard expiresAt > now else { return .failure(.expired) }
        guard form == binding(of: formToken) else { return .failure(.foreignForm) }
        return .success(VerifiedProof(challenge: solution.challenge, expiresAt: expiresAt, cost: cost))
    }

    /// A salt's `?name=value&…` parameters (the first of each name; ours never repeat one).
    static func parameters(of salt: String) -> [String: String] {
        guard let question = salt.firstIndex(of: "?") else { return [:] }
        var parameters: [String: String] = [:]
        for pair in salt[salt.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parameters[String(parts[0])] == nil else { continue }
            parameters[String(parts[0])] = String(parts[1])
        }
        return parameters
    }
}
