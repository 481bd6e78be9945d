import SignupDomain
import XCTest

/// Issue 56: an application's authorization request, held to its client's registration
/// before anything else. What cannot be trusted with an answer (the client, its redirect URI,
/// the size) is never sent back; the rest is told to the application.
final class AuthorizationRequestTests: XCTestCase {
    private let challenge = String(repeating: "a", count: 43)

    private var clients: [String: ClientDeclaration] {
        var wiki = ClientDeclaration(id: "wiki", name: "Wiki", redirectURIs: ["https://wiki.example/cb"])
        wiki.secretVariable = "WIKI_SECRET"
        wiki.scopes = ["openid", "email"]
        let phone = ClientDeclaration(id: "phone", name: "Phone", redirectURIs: ["http://127.0.0.1:9/cb?x=1"])
        return ["wiki": wiki, "phone": phone]
    }

    private func read(_ pairs: [(String, String)], bytes: Int = 100) throws(AuthorizationRequest.Refusal) -> AuthorizationRequest {
        try AuthorizationRequest.read(pairs.map { (name: $0.0, value: $0.1) }, queryBytes: bytes, clients: clients)
    }

    private let wiki = [("response_type", "code"), ("client_id", "wiki"), ("redirect_uri", "https://wiki.example/cb"),
                        ("scope", "openid email profile openid"), ("state", "s"), ("nonce", "n")]

    func testAGoodRequestKeepsOnlyTheScopesTheClientMayHave() throws {
        let request = try read(wiki + [("prompt", "login consent"), ("max_age", "300"), ("ui_locales", "fr de")])
        XCTAssertEqual(request.scopes, ["openid", "email"], "profile is not the wiki's; openid once")
        XCTAssertEqual(request.prompts, [.login, .consent])
        XCTAssertEqual(request.maxAge, 300)
        XCTAssertEqual(request.uiLocales, ["fr", "de"])
        XCTAssertNil(request.codeChallenge, "a confidential client may leave PKCE out")
        XCTAssertEqual(request.redirect([("code", "c 1&")], issuer: "https://id.example"),
                       "https://wiki.example/cb?code=c%201%26&state=s&iss=https%3A%2F%2Fid.example")
    }

    func testWhatCannotBeTrustedWithAnAnswerIsNeverSentBack() {
        let cases: [([(String, String)], AuthorizationRequest.Refusal)] = [
            (wiki.filter { $0.0 != "client_id" }, .unknownClient),
            (wiki.map { $0.0 == "client_id" ? ($0.0, "nobody") : $0 }, .unknownClient),
            (wiki + [("client_id", "wiki")], .unknownClient),
            (wiki.map { $0.0 == "redirect_uri" ? ($0.0, "https://wiki.example/cb/") : $0 }, .badRedirect),
            (wiki.map { $0.0 == "redirect_uri" ? ($0.0, "https://WIKI.example/cb") : $0 }, .badRedirect),
            (wiki.filter { $0.0 != "redirect_uri" }, .badRedirect),
            (wiki + [("redirect_uri", "https://wiki.example/cb")], .badRedirect),
        ]
        for (pairs, refusal) in cases {
            XCTAssertThrowsError(try read(pairs), "\(pairs)") { XCTAssertEqual($0 as? AuthorizationRequest.Refusal, refusal) }
        }
        XCTAssertThrowsError(try read(wiki, bytes: 4097)) { XCTAssertEqual($0 as? AuthorizationRequest.Refusal, .tooLarge) }
    }

    func testTheRestIsToldToTheApplication() {
        let phone = [("response_type", "code"), ("client_id", "phone"), ("redirect_uri", "http://127.0.0.1:9/cb?x=1"),
                     ("scope", "openid")]
        let cases: [([(String, String)], String, String)] = [
            (wiki + [("state", "t")], "invalid_request", "state is given more than once"),
            (wiki.map { $0.0 == "response_type" ? ($0.0, "token") : $0 }, "unsupported_response_type", "only the code flow"),
            (wiki.map { $0.0 == "scope" ? ($0.0, "email") : $0 }, "invalid_scope", "the scope must include openid"),
            (wiki + [("request", "eyJ")], "request_not_supported", "request objects"),
            (wiki + [("response_mode", "fragment")], "invalid_request", "response_mode fragment is not supported"),
            (wiki + [("login_hint", String(repeating: "x", count: 513))], "invalid_request", "login_hint is longer than 512 bytes"),
            (wiki + [("prompt", "none login")], "invalid_request", "prompt=none stands alone"),
            (wiki + [("prompt", "select_account")], "invalid_request", "prompt select_account is not one of"),
            (wiki + [("max_age", "-1")], "invalid_request", "max_age must be a whole number"),
            (wiki + [("code_challenge", challenge), ("code_challenge_method", "plain")], "invalid_request", "must be S256"),
            (wiki + [("code_challenge", challenge)], "invalid_request", "must be S256"),
            (wiki + [("code_challenge", "short"), ("code_challenge_method", "S256")], "invalid_request", "43 characters"),
            (phone, "invalid_request", "a public client must use PKCE"),
        ]
        for (pairs, error, description) in cases {
            XCTAssertThrowsError(try read(pairs), "\(pairs)") { thrown in
                guard case .toClient(let refusal)? = thrown as? AuthorizationRequest.Refusal else {
                    return XCTFail("\(thrown)")
                }
                XCTAssertEqual(refusal.error, error, refusal.description)
                XCTAssertTrue(["https://wiki.example/cb", "http://127.0.0.1:9/cb?x=1"].contains(refusal.redirectURI), refusal.redirectURI)
                XCTAssertTrue(refusal.description.contains(description), refusal.description)
            }
        }
        XCTAssertThrowsError(try read(wiki.map { $0.0 == "response_type" ? ($0.0, "token") : $0 })) { thrown in
            guard case .toClient(let refusal)? = thrown as? AuthorizationRequest.Refusal else { return XCTFail("\(thrown)") }
            XCTAssertEqual(refusal.redirect(issuer: "https://id.example"), "https://wiki.example/cb?error=unsupported_response_type"
                           + "&error_description=only%20the%20code%20flow%20is%20supported%20%28response_type%3Dcode%29&state=s"
                           + "&iss=https%3A%2F%2Fid.example", "at the checked URI, with the state and the issuer")
        }
        let good = try? read(phone + [("code_challenge", challenge), ("code_challenge_method", "S256")])
        XCTAssertEqual(good?.redirect([("code", "c")], issuer: "i"), "http://127.0.0.1:9/cb?x=1&code=c&iss=i",
                       "the registered query stays, the answer follows it")
    }
}
