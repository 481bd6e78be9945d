import Foundation
import LiveSignupClient
import SignupDomain
import SignupServer
import XCTest

/// A sign-up pays its proof of work through the HTTP API as a program would
/// (`FormSession.proofOfWork()`); a proof is good for one form, once; a post without one is
/// served from the budget for people without JavaScript.
final class ProofOfWorkServerTests: XCTestCase {
    var server: TestServer!

    override func setUpWithError() throws {
        server = try TestServer { configuration in
            configuration.askCheapProofs()
        }
    }

    override func tearDown() {
        server.stop()
    }

    private func body(_ form: FormSession, username: String, altcha: String?) -> String {
        var fields = [("token", form.token), ("username", username), ("email", "\(username)@example.org"),
                      ("password", "Correct-Horse-9"), ("confirm", "Correct-Horse-9")]
        if let altcha { fields.append(("altcha", altcha)) }
        return FormURLEncoder.encode(fields)
    }

    func testAProgramPaysTheProofAndSignsUpAndTheProofIsGoodOnce() async throws {
        let form = try await server.client.openForm()
        let challenge = try await form.challenge()
        XCTAssertEqual(challenge.maxnumber, 500, "the base price")
        let altcha = try await form.proofOfWork()
        let accepted = try await server.request("POST", "/signup", body: body(form, username: "paying_program", altcha: altcha))
        XCTAssertEqual(accepted.status, 303, accepted.body)
        XCTAssertNotNil(try server.store.account(named: "paying_program"))

        let replay = try await server.request("POST", "/signup", body: body(form, username: "replaying_bot", altcha: altcha))
        XCTAssertEqual(replay.status, 403)
        XCTAssertTrue(replay.body.contains("browser check did not pass"), "a readable page")
        XCTAssertTrue(replay.body.contains(#"value="replaying_bot""#), "what was typed is kept")
        XCTAssertTrue(replay.body.contains("data-challenge=\""), "with a fresh challenge")
        XCTAssertNil(try server.store.account(named: "replaying_bot"), "nothing stored")
    }

    func testAProofForAnotherFormOrGarbageIsRefusedAndNothingIsStored() async throws {
        let mine = try await server.client.openForm()
        let other = try await server.client.openForm()
        let othersProof = try await other.proofOfWork()
        let foreign = try await server.request("POST", "/signup", body: body(mine, username: "borrower", altcha: othersProof))
        XCTAssertEqual(foreign.status, 403)
        let garbage = try await server.request("POST", "/signup", body: body(mine, username: "garbler", altcha: "!!!"))
        XCTAssertEqual(garbage.status, 400)
        XCTAssertNil(try server.store.account(named: "borrower"))
        XCTAssertNil(try server.store.account(named: "garbler"))
        let mineProof = try await mine.proofOfWork()
        let honest = try await server.request("POST", "/signup", body: body(mine, username: "honest_one", altcha: mineProof))
        XCTAssertEqual(honest.status, 303, "the form itself is still good")
    }

    func testPostsWithoutAProofShareTheBudgetForPeopleWithoutJavaScript() async throws {
        let first = try await server.client.openForm()
        let served = try await server.request("POST", "/signup", body: body(first, username: "no_script_one", altcha: nil))
        XCTAssertEqual(served.status, 303, "within the budget")
        let second = try await server.client.openForm()
        let refused = try await server.request("POST", "/signup", body: body(second, username: "no_script_two", altcha: nil))
        XCTAssertEqual(refused.status, 429)
        XCTAssertNotNil(refused.headers["retry-after"])
        XCTAssertTrue(refused.body.contains("needs JavaScript just now"))
        XCTAssertNil(try server.store.account(named: "no_script_two"))
        let proof = try await second.proofOfWork()
        let paid = try await server.request("POST", "/signup", body: body(second, username: "no_script_two", altcha: proof))
        XCTAssertEqual(paid.status, 303, "a proof is never over that budget")
    }

    func testThePageCarriesItsChallengeAndTheChallengeRouteChecksTheToken() async throws {
        let page = try await server.request("GET", "/")
        XCTAssertTrue(page.body.contains(#"data-challenge="{&quot;algorithm&quot;:&quot;SHA-256&quot;"#), page.body)
        XCTAssertTrue(page.body.contains(#"<input type="hidden" name="altcha" value="">"#))
        XCTAssertTrue(page.body.contains("data-proof-worker=\"/static/proof-worker.js?v="))
        let unknown = try await server.request("GET", "/challenge?token=not-a-token")
        XCTAssertEqual(unknown.status, 400)
        XCTAssertTrue(unknown.body.contains("invalid_token"))
        let fresh = try await server.request("POST", "/sessions")
        XCTAssertTrue(fresh.body.contains(#""challenge":{"algorithm":"SHA-256""#), fresh.body)
    }

    func testAfterAFailedSignInTheNextSignInFromThatAddressPaysAProof() async throws {
        let form = try await server.client.openForm()
        let created = try await server.request(
            "POST", "/signup", body: body(form, username: "careful_ada", altcha: try await form.proofOfWork()))
        XCTAssertEqual(created.status, 303)
        let fresh = try await server.request("GET", "/signin")
        XCTAssertFalse(fresh.body.contains("data-challenge"), "no proof before any failure")

        func signIn(_ password: String, token: String?, altcha: String?) async throws -> (status: Int, headers: [String: String], body: String) {
            var fields = [("username", "careful_ada"), ("password", password)]
            if let token { fields.append(("token", token)) }
            if let altcha { fields.append(("altcha", altcha)) }
            return try await server.request("POST", "/signin", body: FormURLEncoder.encode(fields))
        }
        let failed = try await signIn("Wrong-Horse-1", token: nil, altcha: nil)
        XCTAssertEqual(failed.status, 401)
        XCTAssertTrue(failed.body.contains("data-challenge=\""), "the page that says so carries a challenge")
        XCTAssertTrue(failed.body.contains("/static/proof.js"), "and the script that pays it")
        let token = try XCTUnwrap(failed.body.firstMatch(of: #/name="token" value="([^"]+)"/#)?.1).description
        let challengeJSON = try XCTUnwrap(failed.body.firstMatch(of: #/data-challenge="([^"]+)"/#)?.1).description
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
        let challenge = try JSONDecoder().decode(ProofOfWorkChallenge.self, from: Data(challengeJSON.utf8))

        let forged = try await signIn("Correct-Horse-9", token: token, altcha: "!!!")
        XCTAssertEqual(forged.status, 400, "a broken proof is refused before the password is looked at")
        XCTAssertTrue(forged.body.contains("check did not pass"))
        let withoutScript = try await signIn("Correct-Horse-9", token: token, altcha: nil)
        XCTAssertEqual(withoutScript.status, 303, "a person without JavaScript, within the budget")
        let overBudget = try await signIn("Correct-Horse-9", token: token, altcha: nil)
        XCTAssertEqual(overBudget.status, 429, "the budget is spent")
        let solution = try XCTUnwrap(ProofOfWorkSolver.solve(challenge))
        let paid = try await signIn("Correct-Horse-9", token: token, altcha: solution.payload)
        XCTAssertEqual(paid.status, 303, "a paid sign-in")
        XCTAssertNotNil(paid.headers["set-cookie"])
        let replayed = try await signIn("Correct-Horse-9", token: token, altcha: solution.payload)
        XCTAssertEqual(replayed.status, 403, "once")
    }

    func testAProgramThatAsksForJSONIsToldWhyInJSON() async throws {
        let json = ["Accept": "application/json"]
        let form = try await server.client.openForm()
        let altcha = try await form.proofOfWork()
        let created = try await server.request("POST", "/signup", body: body(form, username: "json_program", altcha: altcha),
                                               headers: json)
        XCTAssertEqual(created.status, 303)
        func error(_ response: (status: Int, headers: [String: String], body: String)) throws -> ErrorBody {
            XCTAssertEqual(response.headers["content-type"]?.hasPrefix("application/json"), true, response.body)
            return try JSONDecoder().decode(ErrorBody.self, from: Data(response.body.utf8))
        }
        let replayed = try await server.request("POST", "/signup", body: body(form, username: "json_replayer", altcha: altcha),
                                                headers: json)
        XCTAssertEqual(replayed.status, 403)
        XCTAssertEqual(try error(replayed).error, "proof_refused")
        XCTAssertEqual(try error(replayed).reason, "replayed")
        let other = try await server.client.openForm()
        let garbage = try await server.request("POST", "/signup", body: body(other, username: "json_garbler", altcha: "!!!"),
                                               headers: json)
        XCTAssertEqual(garbage.status, 400)
        XCTAssertEqual(try error(garbage).reason, "malformed")
        _ = try await server.request("POST", "/signup", body: body(other, username: "json_plain_one", altcha: nil), headers: json)
        let third = try await server.client.openForm()
        let over = try await server.request("POST", "/signup", body: body(third, username: "json_plain_two", altcha: nil),
                                            headers: json)
        XCTAssertEqual(over.status, 429)
        XCTAssertEqual(try error(over).limit, "no_javascript")
        XCTAssertNotNil(try error(over).retryAfter)
        XCTAssertTrue(try error(over).message.contains("needs JavaScript"))
        let page = try await server.request("POST", "/signup", body: body(third, username: "json_plain_two", altcha: "!!!"))
        XCTAssertTrue(page.headers["content-type"]?.hasPrefix("text/html") == true, "a browser still gets the page")
    }

    func testWithProofsOffThereIsNoChallenge() async throws {
        let plain = try TestServer()
        defer { plain.stop() }
        let page = try await plain.request("GET", "/")
        XCTAssertFalse(page.body.contains("data-challenge"))
        XCTAssertFalse(page.body.contains(#"name="altcha""#))
        let form = try await plain.client.openForm()
        let route = try await plain.request("GET", "/challenge?token=\(form.token)")
        XCTAssertEqual(route.status, 404)
        XCTAssertTrue(route.body.contains("proofs_off"))
    }
}
