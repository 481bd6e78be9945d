import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Solves the sign-up form's proof of work as a browser's worker does: tries each number
/// until SHA-256(salt + number) is the challenge. Costs CPU by design (that is the price).
public enum ProofOfWorkSolver {
    /// The solution, or nil when no number up to `maxnumber` fits (not a challenge of ours)
    /// or the algorithm is not SHA-256.
    public static func solve(_ challenge: ProofOfWorkChallenge) -> ProofOfWorkSolution? {
        guard challenge.algorithm == "SHA-256", challenge.maxnumber >= 0,
              let target = Hex.decode(Substring(challenge.challenge)), target.count == 32 else { return nil }
        var input = Array(challenge.salt.utf8)
        let saltLength = input.count
        for number in 0...challenge.maxnumber {
            input.removeSubrange(saltLength...)
            input.append(contentsOf: String(number).utf8)
            if SHA256.hash(data: input).elementsEqual(target) {
                return ProofOfWorkSolution(solving: challenge, number: number)
            }
        }
        return nil
    }
}

extension FormSession {
    /// `GET /challenge`: this form's proof-of-work challenge, at the price the server asks of
    /// this client now.
    /// - Throws: `SignupClientError.http` (404 `proofs_off` when the server asks for none).
    public func challenge() async throws -> ProofOfWorkChallenge {
        var request = URLRequest(url: client.url(path: "challenge", query: [("token", token)]))
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let (data, response) = try await client.send(request)
        guard (200..<300).contains(response.statusCode) else {
            throw SignupClientError.http(status: response.statusCode, body: data)
        }
        do {
            return try JSONDecoder().decode(ProofOfWorkChallenge.self, from: data)
        } catch {
            throw SignupClientError.invalidResponse("GET /challenge did not answer a challenge: \(error)")
        }
    }

    /// The `altcha` field for `POST /signup`: this form's challenge, fetched and solved (off
    /// the caller's task, on a thread of its own for as long as the price takes).
    /// - Throws: what `challenge()` throws, or `SignupClientError.invalidResponse` when the
    ///   challenge has no solution.
    public func proofOfWork() async throws -> String {
        let challenge = try await challenge()
        let solution = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: ProofOfWorkSolver.solve(challenge)) }
        }
        guard let solution else { throw SignupClientError.invalidResponse("the server's challenge has no solution") }
        return solution.payload
    }
}
