import Foundation

/// A proof-of-work challenge in the ALTCHA format (altcha.org, "v1"), so independent tools can
/// solve and check it; the server mints and checks it, browsers and `LiveSignupClient` solve
/// it: `challenge = SHA-256(salt + number)` in hex for a secret random
/// `number` ≤ `maxnumber`, `signature = HMAC-SHA-256(key, challenge)` in hex. The salt is
/// `RANDOM?expires=UNIX&form=BINDING&cost=MAXNUMBER&`: it carries its expiry, binds it to one
/// form, and says what it cost, all under the signature (they are inside the hashed salt).
public struct ProofOfWorkChallenge: Codable, Equatable, Sendable {
    public let algorithm: String
    public let challenge: String
    public let maxnumber: Int
    public let salt: String
    public let signature: String

    public init(algorithm: String, challenge: String, maxnumber: Int, salt: String, signature: String) {
        self.algorithm = algorithm
        self.challenge = challenge
        self.maxnumber = maxnumber
        self.salt = salt
        self.signature = signature
    }

    /// The JSON the page's `data-challenge` and `GET /challenge` carry: `WireJSON.encode`'s
    /// bytes (keys sorted), written directly. Every page carries one, and a `JSONEncoder` per
    /// page cost about 0.5 % of the server's CPU in the typing benchmark (issue 24).
    public var json: String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("algorithm"); writer.string(algorithm)
        writer.key("challenge"); writer.string(challenge)
        writer.key("maxnumber"); writer.int(maxnumber)
        writer.key("salt"); writer.string(salt)
        writer.key("signature"); writer.string(signature)
        writer.endObject()
        return writer.text
    }
}

/// A solved challenge as the ALTCHA widget posts it: base64 of this JSON in the form field
/// `altcha`.
public struct ProofOfWorkSolution: Codable, Equatable, Sendable {
    public let algorithm: String
    public let challenge: String
    public let number: Int
    public let salt: String
    public let signature: String

    public init(algorithm: String, challenge: String, number: Int, salt: String, signature: String) {
        self.algorithm = algorithm
        self.challenge = challenge
        self.number = number
        self.salt = salt
        self.signature = signature
    }

    /// `challenge` solved by `number`.
    public init(solving challenge: ProofOfWorkChallenge, number: Int) {
        self.init(algorithm: challenge.algorithm, challenge: challenge.challenge, number: number, salt: challenge.salt,
                  signature: challenge.signature)
    }

    /// The `altcha` form field's value.
    public var payload: String { Data(WireJSON.encode(self).utf8).base64EncodedString() }
}

