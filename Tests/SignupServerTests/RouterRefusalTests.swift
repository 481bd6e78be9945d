import Foundation
import Identity
import Locking
import Logging
import MicroHTTPD
import SignupDomain
import SignupSQLite
@testable import SignupServer
@testable import WebKernel
import XCTest

/// Issue 54: a handler throws what it refuses and the router renders it as the row answers
/// (`Refused` lists the cases): the problem page in the visitor's language where a person is
/// looking, the JSON error for the script's endpoints, a limit's counted 429, a signed-out
/// person's 401 on a JSON row, and whatever else as the store's one 503. Each row here does
/// nothing but throw, so the answer is the router's alone.
final class RouterRefusalTests: XCTestCase {
    private var directory: URL!
    private var services: Services!
    private var router: Router!
    private let counted = Locked<[String]>([])

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-refusal-\(UUID().uuidString)")
        var quiet = Logger(label: "livesignup-refusal-test")
        quiet.logLevel = .critical
        let store = try SQLiteAccountStore(path: directory.appendingPathComponent("t.sqlite").path)
        services = try Services(configuration: .forTests(), store: store, logger: quiet)
        let counted = counted
        let rows = [
            Route(.get, "/page/unavailable", answers: .page) { _ in throw Refused.unavailable(retryAfter: 7) },
            Route(.get, "/json/unavailable", answers: .json) { _ in throw Refused.unavailable(retryAfter: 7) },
            Route(.get, "/page/limited", answers: .page) { _ in throw LimitExceeded(limit: .pages, retryAfter: 2.5) },
            Route(.get, "/json/limited", answers: .json) { _ in throw LimitExceeded(limit: .edits, retryAfter: 2.5) },
            Route(.get, "/json/shared-limit-unread", answers: .json) { _ in
                throw LimitExceeded(limit: .signins, retryAfter: 1, storeUnavailable: true)
            },
            Route(.get, "/json/api", answers: .json) { _ in throw APIError.missingParameter("token") },
            Route(.get, "/page/store", answers: .page) { _ in throw StorageFault("the disk is gone") },
            Route(.get, "/json/account", answers: .json, forAccount: { _, _ in XCTFail("no one is signed in"); return HTTPResponse(status: .ok) }),
            Route(.get, "/page/account", answers: .page, forAccount: { _, _ in XCTFail("no one is signed in"); return HTTPResponse(status: .ok) }),
        ]
        router = Router(table: RouteTable(rows), pages: services.site.pages, maxBodyBytes: 1024,
                        addresses: services.site.addresses, sameOrigin: services.site.sameOrigin,
                        limiters: services.site.limiters,
                        refusals: Refusals(countLimited: { name in counted.withLock { $0.append(name.rawValue) } },
                                           logger: quiet),
                        returnTo: services.site.returnTo,
                        signedIn: SignedInReader(signedIn: services.signIn.users, recent: services.signIn.recent),
                        metrics: RouterMetrics(request: { _, _, _ in }, refusedCrossSite: { _ in }), logger: quiet,
                        accessLines: LoggerAccessLines(logger: quiet))
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func get(_ path: String, language: String = "en") -> (response: HTTPResponse, body: String) {
        let response = router.respond(to: HTTPRequest(method: "GET", path: path,
                                                      headers: HTTPHeaders([("Accept-Language", language)])))
        guard case .bytes(let bytes) = response.body else { return (response, "") }
        return (response, String(decoding: bytes, as: UTF8.self))
    }

    /// A catalog's text, as the page escapes it (the expected words come from the catalogs, not from here).
    private func text(_ key: String, in tag: String) throws -> String {
        let language = try XCTUnwrap(services.site.languages.language(tag))
        return PageRenderer.escapeAttribute(services.site.pages.speaking(language).text(key))
    }

    func testARefusalOnAPageRowIsTheProblemPageInTheVisitorsLanguage() throws {
        let (response, body) = get("/page/unavailable", language: "de")
        XCTAssertEqual(response.status, .serviceUnavailable)
        XCTAssertEqual(response.headers["Retry-After"], "7")
        XCTAssertEqual(response.headers["Content-Language"], "de")
        XCTAssertTrue(response.headers["Content-Type"]?.hasPrefix("text/html") == true)
        XCTAssertTrue(body.contains("data-problem=\"unavailable\""), body)
        XCTAssertTrue(body.contains(try text("problem.unavailable_title", in: "de")), body)
        XCTAssertTrue(body.contains(try text("error.unavailable", in: "de")), body)
    }

    func testTheSameRefusalOnAJSONRowIsTheJSONErrorWithTheSameSentence() throws {
        // A JSON row that reads no form speaks no language of its own (the typing path never
        // negotiates): its sentence is the English catalog's.
        let (response, body) = get("/json/unavailable", language: "fr")
        XCTAssertEqual(response.status, .serviceUnavailable)
        XCTAssertEqual(response.headers["Retry-After"], "7")
        XCTAssertEqual(response.headers["Cache-Control"], "no-store")
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertEqual(json["error"] as? String, "unavailable")
        XCTAssertEqual(json["message"] as? String, services.site.pages.text("error.unavailable"))
    }

    func testAThrownLimitIsTheRowsFourTwentyNineCountedUnderItsName() throws {
        let page = get("/page/limited")
        XCTAssertEqual(page.response.status, .tooManyRequests)
        XCTAssertEqual(page.response.headers["Retry-After"], "3")
        XCTAssertTrue(page.body.contains("data-problem=\"rate_limited\""), page.body)
        let json = get("/json/limited")
        XCTAssertEqual(json.response.status, .tooManyRequests)
        XCTAssertTrue(json.body.contains("\"limit\":\"edits\""), json.body)
        XCTAssertEqual(counted.withLock { $0 }, ["pages", "edits"], "each 429 counted once, under its limit")
    }

    func testALimitWhoseSharedCountCouldNotBeReadFailsClosedAsTheStoresFiveOhThree() {
        let (response, body) = get("/json/shared-limit-unread")
        XCTAssertEqual(response.status, .serviceUnavailable, body)
        XCTAssertEqual(counted.withLock { $0 }, [], "not over the limit: nothing counted")
    }

    func testAnAPIErrorIsItsOwnJSONAndAnythingElseTheStoresFiveOhThree() {
        let api = get("/json/api")
        XCTAssertEqual(api.response.status, .badRequest)
        XCTAssertTrue(api.body.contains("\"error\":\"missing_parameter\""), api.body)
        let store = get("/page/store", language: "it")
        XCTAssertEqual(store.response.status, .serviceUnavailable)
        XCTAssertEqual(store.response.headers["Content-Language"], "it")
        XCTAssertTrue(store.body.contains("data-problem=\"unavailable\""), store.body)
    }

    func testASignedOutPersonIsSentToSignInFromAPageAndToldFromAJSONRow() throws {
        let page = get("/page/account")
        XCTAssertEqual(page.response.status, .seeOther)
        XCTAssertTrue(page.response.headers["Location"]?.hasPrefix("/signin") == true)
        let (response, body) = get("/json/account")
        XCTAssertEqual(response.status, .unauthorized)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        XCTAssertEqual(json["error"] as? String, "signed_out")
        XCTAssertEqual(json["message"] as? String, services.site.pages.text("passkey.error.signed_out"))
    }
}
