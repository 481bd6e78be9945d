import Crypto
import Foundation
import LiveSignupClient
import SignupDomain

/// The key and form the seeds in Tests/Fuzz/corpus/altcha were minted for (make_seeds.py).
let proofOfWorkKey = [UInt8](repeating: 7, count: 32)
private let authority = ProofOfWorkAuthority(key: proofOfWorkKey)
private let formToken = "web1.fuzz"
private let now = FuzzResources.now

extension FuzzTarget {
    /// The `altcha` field a browser posts with a sign-up, sign-in or code: ALTCHA's payload.
    static let altcha = FuzzTarget(
        name: "altcha",
        summary: "ALTCHA proof-of-work payloads: ProofOfWorkAuthority.verify",
        seeds: {
            // Solved as a browser solves them (the client library's solver), for this form
            // and another, one expired.
            [("solved", formToken, now.addingTimeInterval(600)), ("other-form", "web1.other", now.addingTimeInterval(600)),
             ("expired", formToken, now.addingTimeInterval(-1))].compactMap { name, token, expires in
                ProofOfWorkSolver.solve(authority.challenge(for: token, maxNumber: 2000, expiresAt: expires))
                    .map { (name, Array($0.payload.utf8)) }
            }
        }
    ) { input in
        guard case .success(let proof) = authority.verify(input.text, formToken: formToken, now: now) else { return }
        // Accepted only what ALTCHA's own rules accept, read here with other readers:
        // JSONSerialization for the payload, swift-crypto for the signature and the work.
        let payload = Data(base64Encoded: input.text.trimmingCharacters(in: .whitespacesAndNewlines))
        let object = payload.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
        let challenge = object?["challenge"] as? String ?? "", salt = object?["salt"] as? String ?? ""
        let number = object?["number"] as? Int ?? -1, signature = (object?["signature"] as? String ?? "").lowercased()
        let signed = HMAC<SHA256>.authenticationCode(for: Array(challenge.utf8), using: SymmetricKey(data: proofOfWorkKey))
        fuzzCheck(signature == signed.map { String(format: "%02x", $0) }.joined(), "accepted a payload not signed with the key")
        let work = SHA256.hash(data: Array((salt + String(number)).utf8)).map { String(format: "%02x", $0) }.joined()
        fuzzCheck(work == challenge && proof.challenge == challenge, "accepted a payload whose number does not solve its challenge")
        let parameters = URLComponents(string: "x:" + salt.drop { $0 != "?" })?.queryItems ?? []
        let expires = parameters.first { $0.name == "expires" }?.value.flatMap(TimeInterval.init)
        fuzzCheck(expires.map { Date(timeIntervalSince1970: $0) > now } == true, "accepted an expired payload")
    }
}
