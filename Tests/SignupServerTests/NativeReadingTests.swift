import Foundation
import SignupDomain
@testable import Identity
@testable import SignupServer
@testable import WebKernel
import XCTest

/// Issue 58: read as a native speaker reads it. Dates and lists are ICU's own for the language
/// (held to PyICU, a reference we did not write), a name someone supplied keeps its own
/// direction inside any sentence, a mail's blocks say their direction, a wrong address is a
/// page in the person's language.
final class NativeReadingTests: XCTestCase {
    struct ReferenceFailed: Error, CustomStringConvertible {
        let message: String
        var description: String { "Tests/Reference/icu_reference.py failed (is python3-icu installed? make test-deps): \(message)" }
    }

    private static let root = TestServer.repositoryRoot
    private static let tags = ["en", "ar", "de", "es", "fr", "it", "ja", "nl", "pl", "pt-br", "tr", "zh-hans"]
    /// 3 November 2026, 09:05:00 UTC: a single-digit day and hour, a month every language abbreviates.
    private static let moment = Date(timeIntervalSince1970: 1_793_696_700)

    /// ICU's answer through PyICU (Tests/Reference/icu_reference.py, python3-icu).
    private func reference(_ arguments: [String]) throws -> [String: String] {
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = [Self.root.appendingPathComponent("Tests/Reference/icu_reference.py").path] + arguments
        let output = Pipe(), errors = Pipe()
        python.standardOutput = output
        python.standardError = errors
        try python.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        // Missing PyICU is a failure, not a skip: `make test-deps` installs python3-icu.
        guard python.terminationStatus == 0 else { throw ReferenceFailed(message: problem) }
        return try JSONDecoder().decode([String: String].self, from: data)
    }

    func testADateInEachOfTheTwelveLanguagesIsICUsOwnForThatLanguage() throws {
        let milliseconds = String(Int(Self.moment.timeIntervalSince1970 * 1000))
        let expected = try reference(["dates", milliseconds] + Self.tags)
        XCTAssertEqual(expected.count, 12)
        for tag in Self.tags {
            XCTAssertEqual(MessageFormat.date(Self.moment, language: tag), expected[tag], tag)
        }
        // Spelled out for a reader of this test: each language's own order, and the zone.
        XCTAssertEqual(expected["en"], "Nov 3, 2026, 9:05\u{202F}AM UTC", "a narrow no-break space before AM: CLDR 42")
        XCTAssertEqual(expected["de"], "3. Nov. 2026, 09:05 UTC")
        XCTAssertEqual(expected["ja"], "2026年11月3日 9:05 UTC")
        // Arabic writes Western digits, as its counts on the same page do (docs/LANGUAGES.md).
        let arabic = MessageFormat.date(Self.moment, language: "ar")
        XCTAssertTrue(arabic.contains("2026") && arabic.contains("9:05"), arabic)
        XCTAssertFalse(arabic.unicodeScalars.contains { (0x0660...0x0669).contains($0.value) }, "no Arabic-Indic digits: \(arabic)")
    }

    func testADateInASentenceIsTheLanguagesOwnAndMarkedUpForPrograms() throws {
        let catalogs = try Languages(directory: Self.root.appendingPathComponent("Templates/i18n"), policy: FormPolicy.classic())
        for tag in Self.tags {
            let language = try XCTUnwrap(catalogs.language(tag))
            let date = MessageFormat.date(Self.moment, language: tag)
            let html = HTMLSentence.fill(language.catalog["account.device_details"]!,
                                         ["began": .date(Self.moment), "last_used": .date(Self.moment)], language: tag)
            let element = "<time datetime=\"2026-11-03T09:05:00Z\">\(HTMLSentence.escape(date))</time>"
            XCTAssertEqual(html.components(separatedBy: element).count - 1, 2, "\(tag): both dates, whole, in <time>: \(html)")
            let text = language.filled(language.catalog["account.passkey_details_unused"]!, ["created": .date(Self.moment)])
            XCTAssertTrue(text.contains(date), "\(tag): \(text)")
        }
    }

    func testAListIsJoinedAsTheLanguageJoinsOne() throws {
        let items = ["Phone", "City", "Terms"]
        let expected = try reference(["lists"] + Self.tags + ["--"] + items)
        for tag in Self.tags {
            XCTAssertEqual(MessageFormat.list(items, language: tag), expected[tag], tag)
        }
        XCTAssertEqual(expected["en"], "Phone, City, and Terms")
        XCTAssertEqual(expected["ja"], "Phone、City、Terms", "full-width, no space after 、")
        XCTAssertEqual(MessageFormat.list(["Phone"], language: "de"), "Phone")
        XCTAssertEqual(MessageFormat.list([], language: "de"), "")
    }

    /// A name keeps its own direction: between FSI and PDI in text, in <bdi> in a page's own
    /// sentence; the words around it are escaped, its own too; direction controls inside it
    /// cannot end the isolation early.
    func testANameSomeoneSuppliedIsIsolatedInTextAndInPages() {
        XCTAssertEqual(MessageFormat.fill("Signed in as {name}.", ["name": .name("grace")], language: "en"),
                       "Signed in as \u{2068}grace\u{2069}.")
        XCTAssertEqual(MessageFormat.fill("تم تسجيل الدخول باسم {name}.", ["name": .name("grace")], language: "ar"),
                       "تم تسجيل الدخول باسم \u{2068}grace\u{2069}.")
        XCTAssertEqual(MessageFormat.isolated("ev\u{2069}il\u{202E}name"), "\u{2068}evilname\u{2069}",
                       "an unmatched PDI or an override inside a name is dropped")
        XCTAssertEqual(MessageFormat.isolated(""), "")
        // A value is never read again for placeholders: an address holding "{username}" stays as typed.
        XCTAssertEqual(MessageFormat.fill("{email} for {username}", ["email": .text("{username}@x.example"), "username": .name("ada")],
                                          language: "en"), "{username}@x.example for \u{2068}ada\u{2069}")
        XCTAssertEqual(HTMLSentence.fill("Welcome, {name}!", ["name": .name("<b>Ada & co</b>")], language: "en"),
                       "Welcome, <bdi>&lt;b&gt;Ada &amp; co&lt;/b&gt;</bdi>!")
        XCTAssertEqual(HTMLSentence.fill("A < B {name}", ["name": .name("x")], language: "en"), "A &lt; B <bdi>x</bdi>",
                       "the catalog's own words are escaped too")
        XCTAssertEqual(HTMLSentence.fill("{code} for {name}", ["name": .name("Ada"), "code": .text("\u{E000}<i>")], language: "en"),
                       "&lt;i&gt; for <bdi>Ada</bdi>", "a value cannot pass for the name's stand-in")
        // Through ICU (a plural beside the name): the name still isolated, the count the language's.
        XCTAssertEqual(MessageFormat.fill("{name}: {n, plural, one {# passkey} other {# passkeys}}", ["name": .name("Ada"), "n": 2],
                                          language: "en"), "\u{2068}Ada\u{2069}: 2 passkeys")
        XCTAssertEqual(HTMLSentence.fill("{name}: {n, plural, one {# passkey} other {# passkeys}}", ["name": .name("Ada"), "n": 1],
                                         language: "en"), "<bdi>Ada</bdi>: 1 passkey")
    }

    /// Mail clients keep the body's elements, not <html> and often not <body>: each block of an
    /// Arabic mail says it is right to left, and the text part isolates the names in it.
    func testAnArabicMailsBodyElementsSayRightToLeftAndItsNamesAreIsolated() throws {
        let templates = Self.root.appendingPathComponent("Templates")
        let languages = try Languages(directory: templates.appendingPathComponent("i18n"), policy: FormPolicy.classic())
        let arabic = try XCTUnwrap(languages.language("ar"))
        let renderer = try PageRenderer(directory: templates, required: MailContent.templates, serviceName: "Acme Cloud")
        let lead = arabic.filled(arabic.catalog["mail.changed_lead"]!, ["username": .name("grace_hopper"), "service": .name("Acme Cloud")])
        let mail = MailContent(subject: "s", heading: "h", lead: lead, code: "123456", linkLead: "l", linkURL: "https://x.example/a",
                               linkText: "t", after: ["a"], footer: "f")
        let parts = renderer.render(mail, language: arabic)
        XCTAssertTrue(parts.html.contains(#"<div dir="rtl" lang="ar""#), parts.html)
        let blocks = parts.html.matches(of: #/<(?:p|h1|div|body)\b[^>]*>/#).map { String($0.output) }
        XCTAssertGreaterThanOrEqual(blocks.count, 8)
        for block in blocks where !block.contains("data-code") {
            XCTAssertTrue(block.contains(#"dir="rtl""#) && block.contains(#"lang="ar""#), block)
        }
        XCTAssertTrue(parts.html.contains(#"<p dir="ltr""#) && parts.html.contains("data-code"), "the code is read left to right")
        XCTAssertTrue(parts.text.contains("\u{2068}grace_hopper\u{2069}"), parts.text)
        XCTAssertTrue(parts.text.contains("\u{2068}Acme Cloud\u{2069}"), parts.text)
    }

    /// The sign-out button's accessible name is one sentence: the device's name isolated, or,
    /// for a browser that said nothing recognisable, a sentence of its own (not "Sign out A
    /// browser").
    func testTheSignOutButtonsNameIsOneSentenceForANamedAndAnUnknownDevice() throws {
        let languages = try Languages(directory: Self.root.appendingPathComponent("Templates/i18n"), policy: FormPolicy.classic())
        let english = languages.english, german = try XCTUnwrap(languages.language("de"))
        XCTAssertEqual(AccountPage.endLabel(device: "Firefox · Linux", lastUsed: Self.moment, language: english),
                       "Sign out \u{2068}Firefox · Linux\u{2069} (last used Nov 3, 2026, 9:05\u{202F}AM UTC)")
        XCTAssertEqual(AccountPage.endLabel(device: "", lastUsed: Self.moment, language: english),
                       "Sign out the browser last used Nov 3, 2026, 9:05\u{202F}AM UTC")
        XCTAssertEqual(AccountPage.endLabel(device: "", lastUsed: Self.moment, language: german),
                       "Den zuletzt am 3. Nov. 2026, 09:05 UTC verwendeten Browser abmelden")
    }

    /// A person who mistypes a link reads a page in their language with the way back; a program
    /// (not asking for HTML) keeps the JSON whose `error` it reads.
    func testAWrongAddressIsAPageInThePersonsLanguageAndJSONForPrograms() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let browser = try await server.request("GET", "/accout", headers: [
            "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "Accept-Language": "de-DE,de;q=0.9"])
        XCTAssertEqual(browser.status, 404)
        XCTAssertTrue(browser.headers["content-type"]?.hasPrefix("text/html") == true)
        XCTAssertEqual(browser.headers["content-language"], "de")
        XCTAssertTrue(browser.body.contains(#"<html lang="de""#), browser.body)
        XCTAssertTrue(browser.body.contains("Seite nicht gefunden"), browser.body)
        XCTAssertTrue(browser.body.contains(#"data-problem="not_found""#))
        XCTAssertTrue(browser.body.contains(#"href="/?lang=de""#), "the way back, in the same language")
        for accept in ["application/json", "*/*", ""] {
            let program = try await server.request("GET", "/accout", headers: accept.isEmpty ? [:] : ["Accept": accept])
            XCTAssertEqual(program.status, 404, accept)
            XCTAssertTrue(program.headers["content-type"]?.hasPrefix("application/json") == true, accept)
            XCTAssertTrue(program.body.contains(#""error":"not_found""#), program.body)
        }
        // A form posted to nowhere is not a page to show: JSON, as before.
        let posted = try await server.request("POST", "/accout", body: "a=b", headers: ["Accept": "text/html"])
        XCTAssertEqual(posted.status, 404)
        XCTAssertTrue(posted.body.contains(#""error":"not_found""#), posted.body)
    }

    /// The 404 page is a page: rendering it spends the address's `pages` limit first, and past
    /// the limit the address gets the JSON, which costs next to nothing. A flow this server does
    /// not offer (no mail: no `/recover`) answers as a path nothing serves, HTML or JSON alike.
    func testTheWrongAddressPageSpendsThePagesLimitAndAFlowNotOfferedIsAWrongAddress() async throws {
        let server = try TestServer { $0.limits.pagesPerAddress = .per(minute: 1, burst: 2) }
        defer { server.stop() }
        let browser = ["Accept": "text/html", "Accept-Language": "de"]
        for _ in 0..<2 {
            let page = try await server.request("GET", "/accout", headers: browser)
            XCTAssertEqual(page.status, 404)
            XCTAssertTrue(page.body.contains("Seite nicht gefunden"), page.body)
        }
        let spent = try await server.request("GET", "/accout", headers: browser)
        XCTAssertEqual(spent.status, 404)
        XCTAssertTrue(spent.body.contains(#""error":"not_found""#), "past the limit, the cheap answer: \(spent.body)")
        let control = try await server.request("GET", "/accout", headers: browser, from: "127.0.0.2")
        XCTAssertTrue(control.body.contains("Seite nicht gefunden"), "another address still gets its page")

        let unlimited = try TestServer()
        defer { unlimited.stop() }
        let recover = try await unlimited.request("GET", "/recover", headers: browser)
        XCTAssertEqual(recover.status, 404)
        XCTAssertTrue(recover.body.contains(#"data-problem="not_found""#) && recover.body.contains("Seite nicht gefunden"), recover.body)
        let program = try await unlimited.request("POST", "/recover", body: "identifier=a", headers: ["Accept": "application/json"])
        XCTAssertEqual(program.status, 404)
        XCTAssertTrue(program.body.contains(#""error":"not_found""#), program.body)
    }

    /// A catalog written for an older English names the sentence that replaced each retired
    /// key, instead of only calling it a typo.
    func testAnOlderCatalogIsToldWhatReplacedItsRetiredKeys() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("issue58-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "language: de\nname: Deutsch\ntexts:\n  account.began: \"angemeldet\"\n"
            .write(to: directory.appendingPathComponent("de.yaml"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try Languages(directory: directory, policy: FormPolicy.classic())) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("account.began is now account.device_details"), text)
        }
    }
}
