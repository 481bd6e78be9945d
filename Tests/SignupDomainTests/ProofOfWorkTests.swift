import Crypto
import Foundation
import LiveSignupClient
import SignupDomain
import XCTest

/// Proofs of work in the ALTCHA format: a challenge is bound to one form, carries its expiry
/// and cost under the signature, and only an honest solution of it passes.
final class ProofOfWorkTests: XCTestCase {
    private let authority = ProofOfWorkAuthority(key: Array("a key of at least sixteen bytes".utf8))
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func solved(for token: String = "form-a", maxNumber: Int = 300, expiresIn: TimeInterval = 600)
        -> (ProofOfWorkChallenge, ProofOfWorkSolution) {
        let challenge = authority.challenge(for: token, maxNumber: maxNumber, expiresAt: now.addingTimeInterval(expiresIn))
        guard let solution = ProofOfWorkSolver.solve(challenge) else {
            XCTFail("a challenge of ours has a solution")
            return (challenge, ProofOfWorkSolution(algorithm: "", challenge: "", number: 0, salt: "", signature: ""))
        }
        return (challenge, solution)
    }

    func testAChallengeIsALTCHAsFormatWithItsExpiryFormAndCostInTheSalt() throws {
        let (challenge, solution) = solved(maxNumber: 300)
        XCTAssertEqual(challenge.algorithm, "SHA-256")
        XCTAssertEqual(challenge.maxnumber, 300)
        XCTAssertTrue(challenge.salt.hasSuffix("&"), "ALTCHA's delimiter against parameter splicing")
        XCTAssertTrue(challenge.salt.contains("?expires=1800000600&form="), challenge.salt)
        XCTAssertTrue(challenge.salt.contains("&cost=300&"), challenge.salt)
        XCTAssertLessThanOrEqual(solution.number, 300)
        let digest = SHA256.hash(data: Array((challenge.salt + String(solution.number)).utf8))
        XCTAssertEqual(Hex.encode(Array(digest)), challenge.challenge)
        let json = try JSONSerialization.jsonObject(with: Data(challenge.json.utf8)) as? [String: Any]
        XCTAssertEqual(Set(json?.keys ?? [:].keys), ["algorithm", "challenge", "maxnumber", "salt", "signature"])
    }

    func testAnHonestSolutionPassesWithItsCostAndExpiry() {
        let (_, solution) = solved(maxNumber: 200)
        XCTAssertEqual(authority.verify(solution.payload, formToken: "form-a", now: now).map(\.cost), .success(200))
        XCTAssertEqual(try authority.verify(solution.payload, formToken: "form-a", now: now).get().expiresAt,
                       now.addingTimeInterval(600))
    }

    func testEveryTamperingIsRefusedWithItsReason() {
        let (_, solution) = solved()
        func payload(_ change: (inout [String: Any]) -> Void) -> String {
            var object = (try? JSONSerialization.jsonObject(with: Data(base64Encoded: solution.payload)!) as? [String: Any]) ?? [:]
            change(&object)
            return (try? JSONSerialization.data(withJSONObject: object))?.base64EncodedString() ?? ""
        }
        func refusal(_ field: String, token: String = "form-a", at date: Date? = nil) -> ProofOfWorkRefusal? {
            if case .failure(let refusal) = authority.verify(field, formToken: token, now: date ?? now) { return refusal }
            return nil
        }
        XCTAssertEqual(refusal(payload { $0["number"] = solution.number + 1 }), .forged, "a number that does not hash to the challenge")
        XCTAssertEqual(refusal(payload { $0["signature"] = String(repeating: "0", count: 64) }), .forged)
        XCTAssertEqual(refusal(payload { $0["salt"] = (solution.salt).replacingOccurrences(of: "cost=300", with: "cost=9") }),
                       .forged, "the cost is signed")
        XCTAssertEqual(ProofOfWorkAuthority(key: Array("another key, sixteen bytes+".utf8))
            .verify(solution.payload, formToken: "form-a", now: now).failure, .forged, "another server's key")
        XCTAssertEqual(refusal(solution.payload, token: "form-b"), .foreignForm)
        XCTAssertEqual(refusal(solution.payload, at: now.addingTimeInterval(600)), .expired)
        XCTAssertEqual(refusal("not base64 at all!"), .malformed)
        XCTAssertEqual(refusal(Data("{}".utf8).base64EncodedString()), .malformed)
        XCTAssertEqual(refusal(payload { $0["algorithm"] = "SHA-1" }), .malformed)
        XCTAssertEqual(refusal(payload { $0["number"] = -1 }), .malformed)
        XCTAssertEqual(refusal(String(repeating: "A", count: 4096)), .malformed, "too long to be real")
        XCTAssertEqual(refusal(""), .malformed)
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
