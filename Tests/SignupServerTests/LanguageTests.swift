import Foundation
import HTTPTestSupport
import LiveSignupClient
import SignupDomain
import SignupWire
@testable import Identity
@testable import SignupServer
@testable import WebKernel
import XCTest

/// Every text a person reads comes from the language's catalog: the page (negotiated from
/// Accept-Language or chosen with ?lang=), the live events, the 422 page; an unknown language
/// falls back to English; a right-to-left language gets `dir="rtl"`.
final class LanguageTests: XCTestCase {
    private static let catalogs = TestServer.repositoryRoot.appendingPathComponent("Templates/i18n")

    /// Issue 46: every catalog has every text, every placeholder the English text has, and in
    /// each plural every category the language's CLDR rules have (ICU's, not a list of ours),
    /// and ICU can format each of those texts.
    func testEveryCatalogIsCompleteWithItsOwnPluralForms() throws {
        let english = TextCatalog.builtInEnglish
        for text in PolicyText.allCases {
            XCTAssertNotNil(english[text.rawValue], "the English catalog has \(text.rawValue)")
            XCTAssertEqual(PolicyTexts.builtIn(text), english[text.rawValue], "the rules speak the catalog's English")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.catalogs.path).filter { $0.hasSuffix(".yaml") }.sorted()
        let expected = ["ar", "de", "es", "fr", "it", "ja", "nl", "pl", "pt-br", "tr", "zh-hans"]
        XCTAssertEqual(files.map { String($0.dropLast(5)) }, expected, "the twelve languages (with English, built in)")
        for file in files {
            let catalog = try TextCatalog.load(path: Self.catalogs.appendingPathComponent(file).path)
            let tag = catalog.language
            XCTAssertEqual(tag + ".yaml", file)
            XCTAssertEqual(Set(catalog.texts.keys), Set(english.texts.keys), "\(tag): every text, no stray key")
            XCTAssertEqual(Set(catalog.feedback.keys), Set(english.feedback.keys), "\(tag): every sentence of the server's own")
            XCTAssertEqual(catalog.direction, tag == "ar" ? "rtl" : "ltr", tag)
            let categories = MessageFormat.pluralCategories(language: tag)
            for (key, value) in catalog.texts {
                let englishText = english.texts[key]!
                XCTAssertEqual(Set(Self.arguments(in: value)), Set(Self.arguments(in: englishText)), "\(tag) \(key): its placeholders")
                if englishText.contains(", plural,") {
                    XCTAssertTrue(value.contains(", plural,"), "\(tag) \(key): a plural where English has one")
                }
                guard MessageFormat.usesICU(value) else { continue }
                XCTAssertEqual(Self.pluralKeywords(in: value), categories, "\(tag) \(key): exactly the language's plural categories")
                let values = Dictionary(Self.arguments(in: value).map { ($0, MessageValue.number(2)) }, uniquingKeysWith: { first, _ in first })
                XCTAssertNotNil(MessageFormat.format(value, values, locale: MessageFormat.icuLocale(tag)), "\(tag) \(key): ICU reads it")
            }
        }
    }

    /// The argument names a text uses, plain (`{min}`) or in ICU's syntax (`{n, plural, …}`).
    static func arguments(in text: String) -> [String] {
        text.matches(of: #/\{([a-z_]+)\s*[},]/#).map { String($0.output.1) }
    }

    /// The plural keywords a text's branches use (`one {`, `few {`, `other {`).
    static func pluralKeywords(in text: String) -> Set<String> {
        Set(text.matches(of: #/(?:^|[\s,}])(zero|one|two|few|many|other)\s*\{/#).map { String($0.output.1) })
    }

    func testABrowserAskingForAVarietyGetsTheOneTheServerHas() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for (wish, expected) in [("zh-CN,zh;q=0.9", "zh-hans"), ("zh", "zh-hans"), ("pt-PT", "pt-br"), ("pt", "pt-br"),
                                 ("zh-TW, ja;q=0.5", "ja"), ("zh-Hant-HK", "en"), ("ar-EG", "ar"), ("sv, pl;q=0.3", "pl")] {
            let page = try await server.request("GET", "/", headers: ["Accept-Language": wish])
            XCTAssertEqual(page.headers["content-language"], expected, wish)
        }
    }

    func testTwoFilesOfOneLanguageStopTheStartNamingBoth() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-i18n-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let german = try String(contentsOf: Self.catalogs.appendingPathComponent("de.yaml"), encoding: .utf8)
        try german.write(to: directory.appendingPathComponent("de.yaml"), atomically: true, encoding: .utf8)
        try german.write(to: directory.appendingPathComponent("de-old.yaml"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try Languages(directory: directory, policy: FormPolicy.classic())) { error in
            XCTAssertEqual("\(error)", "de-old.yaml and de.yaml are both language 'de': keep one (a file is named after its language, de.yaml)")
        }
    }

    func testPluralsFollowEachLanguagesRules() {
        let minutes = "{n, plural, one {# minute} other {# minutes}}"
        XCTAssertEqual(MessageFormat.fill(minutes, ["n": 1], language: "en"), "1 minute")
        XCTAssertEqual(MessageFormat.fill(minutes, ["n": 5], language: "en"), "5 minutes")
        let polish = "{n, plural, one {# minutę} few {# minuty} many {# minut} other {# minuty}}"
        XCTAssertEqual([1, 2, 4, 5, 12, 22, 25].map { MessageFormat.fill(polish, ["n": .number($0)], language: "pl") },
                       ["1 minutę", "2 minuty", "4 minuty", "5 minut", "12 minut", "22 minuty", "25 minut"])
        XCTAssertEqual([0, 1, 2, 3, 11, 100].map { MessageFormat.pluralCategory(of: $0, language: "ar") },
                       ["zero", "one", "two", "few", "many", "other"])
        XCTAssertEqual(MessageFormat.pluralCategories(language: "ja"), ["other"])
        XCTAssertEqual(MessageFormat.fill("{n} left", ["n": 3], language: "de"), "3 left", "a plain text is filled plainly")
        XCTAssertEqual(MessageFormat.fill("{n, plural, one {x}", ["n": 3], language: "en"), "{n, plural, one {x}",
                       "a text ICU cannot read is kept, not lost")
    }

    func testAGermanBrowserGetsTheGermanPage() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let page = try await server.request("GET", "/", headers: ["Accept-Language": "de-AT,de;q=0.9,en;q=0.4"])
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.headers["content-language"], "de")
        XCTAssertTrue(page.headers["vary"]?.contains("Accept-Language") == true)
        let html = page.body
        XCTAssertTrue(html.contains(#"<html lang="de" dir="ltr">"#))
        XCTAssertTrue(html.contains("<h1>Konto erstellen</h1>"))
        XCTAssertTrue(html.contains(#"<label for="username">Benutzername</label>"#))
        XCTAssertTrue(html.contains("4 bis 32 Zeichen"))
        XCTAssertTrue(html.contains(": nicht erfüllt"))
        XCTAssertTrue(html.contains(#"data-text-lost="Verbindung"#), "the script's notices come from the page")
        XCTAssertTrue(html.contains(#"<input type="hidden" name="lang" value="de">"#))
        XCTAssertTrue(html.contains(#"hreflang="en" lang="en" data-language="en">English</a>"#), "the switcher")
        XCTAssertFalse(html.contains("Create an account"))

        let chosen = try await server.request("GET", "/?lang=en", headers: ["Accept-Language": "de"])
        XCTAssertTrue(chosen.body.contains("<h1>Create an account</h1>"), "?lang= wins over the browser's wish")
    }

    func testAnUnknownLanguageFallsBackToEnglish() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let page = try await server.request("GET", "/?lang=tlh", headers: ["Accept-Language": "sv-FI, sv;q=0.8"])
        XCTAssertEqual(page.headers["content-language"], "en")
        XCTAssertTrue(page.body.contains(#"<html lang="en" dir="ltr">"#))
        XCTAssertTrue(page.body.contains("<h1>Create an account</h1>"))
        let weighed = try await server.request("GET", "/", headers: ["Accept-Language": "en;q=0, sv;q=0.9, de;q=0.5"])
        XCTAssertEqual(weighed.headers["content-language"], "de", "by weight, skipping what the server lacks")
    }

    /// Every page says its language: the router adds `Content-Language` to each HTML answer of
    /// a row that speaks (handlers no longer set it by hand), for pages that had it and for
    /// those that did not (a refused recovery code, an unknown undo link), and never to JSON.
    func testEveryPageSaysItsLanguageAndJSONDoesNot() async throws {
        let server = try TestServer {
            $0.emailVerification = EmailVerificationSettings(mail: MailSettings(transport: CapturedMail(), from: "t <t@example.org>"))
        }
        defer { server.stop() }
        let german = ["Accept-Language": "de"]
        for (method, path, body) in [("GET", "/signin", nil), ("GET", "/recover", nil), ("GET", "/", nil),
                                     ("POST", "/signin", "username=nobody&password=wrong-one&lang=de"),
                                     ("POST", "/recover/code", "token=x&code=000000&lang=de"),
                                     ("GET", "/account/email/undo?link=x", nil)] as [(String, String, String?)] {
            let answer = try await server.request(method, path, body: body, headers: german)
            XCTAssertTrue(answer.headers["content-type"]?.hasPrefix("text/html") == true, "\(method) \(path)")
            XCTAssertEqual(answer.headers["content-language"], "de", "\(method) \(path) (\(answer.status))")
        }
        // A refusal made before any handler, from another site: in German too.
        let crossSite = try await server.request("POST", "/signin", body: "username=a&password=b",
                                                 headers: ["Accept-Language": "de", "Origin": "https://elsewhere.example"])
        XCTAssertEqual(crossSite.status, 403)
        XCTAssertEqual(crossSite.headers["content-language"], "de")
        let json = try await server.request("POST", "/sessions", headers: german)
        XCTAssertNil(json.headers["content-language"], "JSON names no language")
    }

    func testLiveMessagesComeInTheSessionsLanguage() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let form = try await SignupClient(baseURL: server.baseURL, language: "de").openForm()
        let events = EventCollector(form.events())
        defer { events.stop() }
        let first = await events.wait(forCount: 1)
        guard case .snapshot(let snapshot) = first.first else { return XCTFail("no snapshot first") }
        XCTAssertEqual(snapshot.language, "de", "the snapshot says its language")
        XCTAssertEqual(snapshot.strength.label, "Sehr schwach")
        let receipt = try await form.edit("username", to: "ab", touched: true)
        await events.wait { $0.contains { event in
            if case .message(field: "username", let text, let rev) = event {
                return rev == receipt.rev && text.contains("mindestens 4 Zeichen")
            }
            return false
        } }
    }

    func testTheRefusedSubmitSpeaksTheFormsLanguage() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let form = try await server.client.openForm()
        let body = FormURLEncoder.encode([("token", form.token), ("lang", "de"), ("username", "ab"), ("email", "nope"),
                                          ("password", "short"), ("confirm", "other")])
        let answer = try await server.request("POST", "/signup", body: body)
        XCTAssertEqual(answer.status, 422)
        XCTAssertEqual(answer.headers["content-language"], "de")
        XCTAssertTrue(answer.body.contains("<title>Fehler: Konto erstellen"), "the title says there is an error, in German")
        let german = try TextCatalog.load(path: Self.catalogs.appendingPathComponent("de.yaml").path)
        XCTAssertTrue(answer.body.contains(german["page.summary_title"]!), "the error summary's title")
        XCTAssertTrue(answer.body.contains("mindestens 4 Zeichen"), "the username's message")
        XCTAssertFalse(answer.body.contains("There is a problem"))
    }

    func testTheOtherPagesFollowTheLanguageFromSignUpToWelcomeAndSignIn() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let form = try await server.client.openForm()
        let password = "Quiet-Otter-742"
        let created = try await server.request("POST", "/signup", body: FormURLEncoder.encode([
            ("token", form.token), ("lang", "de"), ("username", "Zuse"), ("email", "zuse@example.com"),
            ("password", password), ("confirm", password)]))
        XCTAssertEqual(created.status, 303, created.body)
        XCTAssertEqual(created.headers["location"], "/welcome?lang=de", "the welcome page keeps the language")
        let cookie = try XCTUnwrap(created.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        let welcome = try await server.request("GET", "/welcome?lang=de", headers: ["Cookie": cookie])
        XCTAssertTrue(welcome.body.contains("<h1>Willkommen, <bdi>Zuse</bdi>!</h1>"), welcome.body)
        XCTAssertTrue(welcome.body.contains(#"<html lang="de""#))

        let signIn = try await server.request("GET", "/signin", headers: ["Accept-Language": "de"])
        XCTAssertTrue(signIn.body.contains("<h1>Anmelden</h1>"))
        XCTAssertTrue(signIn.body.contains(#"<input type="hidden" name="lang" value="de">"#))
        let wrong = try await server.request("POST", "/signin", body: FormURLEncoder.encode([
            ("lang", "de"), ("username", "zuse"), ("password", "not-it")]))
        XCTAssertEqual(wrong.status, 401)
        XCTAssertTrue(wrong.body.contains("Benutzername oder Passwort ist falsch"), wrong.body)
        let english = try await server.request("POST", "/signin", body: FormURLEncoder.encode([
            ("username", "zuse"), ("password", "not-it")]))
        XCTAssertTrue(english.body.contains("The username or password is incorrect"), "English stays the default")
    }

    func testARightToLeftLanguageGetsItsDirectionAndEnglishFillsItsGaps() async throws {
        let templates = try Self.templates(withCatalog: """
            language: he
            name: עברית
            direction: rtl
            texts:
              page.title: "יצירת חשבון"
            """, named: "he")
        defer { try? FileManager.default.removeItem(at: templates) }
        let server = try TestServer { $0.templatesDirectory = templates }
        defer { server.stop() }
        let html = try await server.request("GET", "/", headers: ["Accept-Language": "he"]).body
        XCTAssertTrue(html.contains(#"<html lang="he" dir="rtl">"#))
        XCTAssertTrue(html.contains("<h1>יצירת חשבון</h1>"))
        XCTAssertTrue(html.contains(#"<label for="username">Username</label>"#), "a missing text is English's")
    }

    func testAnOperatorsEnglishCatalogReplacesTextsOfTheBuiltInOne() async throws {
        let templates = try Self.templates(withCatalog: """
            language: en
            name: English
            texts:
              page.title: "Join us"
              username.available.text: "Still free"
            """, named: "en")
        defer { try? FileManager.default.removeItem(at: templates) }
        let server = try TestServer { $0.templatesDirectory = templates }
        defer { server.stop() }
        let html = try await server.request("GET", "/").body
        XCTAssertTrue(html.contains("<h1>Join us</h1>"), "the page's text replaced")
        XCTAssertTrue(html.contains("Still free"), "a rule's text replaced")
        XCTAssertTrue(html.contains(#"<label for="username">Username</label>"#), "the rest is the built-in English")
    }

    /// The advice has keys (`advice.*`, `username.unsafe.*`) whose English is the built-in
    /// catalog's; a catalog written before the keys translated it by English sentence under
    /// `feedback:`, and says the same; a sentence English never had stops the start.
    func testAdviceIsSaidByKeyAndOlderCatalogsTranslatingItBySentenceStillWork() async throws {
        let templates = try Self.templates(withCatalog: """
            language: nl
            name: Nederlands
            texts:
              advice.own_details: "Dit is gebaseerd op uw eigen gegevens"
            feedback:
              "Username can't mix letters from different alphabets, like Latin and Cyrillic": "Geen letters uit verschillende alfabetten"
            """, named: "nl")
        defer { try? FileManager.default.removeItem(at: templates) }
        let server = try TestServer { $0.templatesDirectory = templates }
        defer { server.stop() }
        let english = FormPolicy(.classic).passwordCandidate(password: "alice1234", username: "alice", email: "").strength
        XCTAssertEqual(english.warning, "This is based on your own details, such as your username or email",
                       "English said from the built-in catalog by its key")

        let form = try await SignupClient(baseURL: server.baseURL, language: "nl").openForm()
        let events = EventCollector(form.events())
        defer { events.stop() }
        await events.wait(forCount: 1)
        _ = try await form.edit("username", to: "alice", touched: true)
        _ = try await form.edit("password", to: "alice1234")
        await events.wait { $0.contains { event in
            if case .strength(let strength, _) = event { return strength.warning == "Dit is gebaseerd op uw eigen gegevens" }
            return false
        } }
        _ = try await form.edit("username", to: "p\u{430}ypal", touched: true)  // a Cyrillic а among Latin letters
        await events.wait { $0.contains { event in
            if case .message(field: "username", let text, _) = event { return text == "Geen letters uit verschillende alfabetten" }
            return false
        } }

        try """
            language: nl
            name: Nederlands
            feedback:
              "A sentence English never had": "Een zin"
            """.write(to: templates.appendingPathComponent("i18n/nl.yaml"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try TestServer { $0.templatesDirectory = templates }) { error in
            XCTAssertTrue("\(error)".contains("A sentence English never had"), "\(error)")
        }
    }

    func testThePolicysOwnWordingForALanguageShowsInThatLanguageOnly() async throws {
        var settings = Policy.classic
        settings.texts = PolicyTexts([.usernameAvailableText: "Still free"])
        settings.textsByLanguage["de"] = PolicyTexts([.usernameAvailableText: "Noch frei"])
        let server = try TestServer { $0.policy = FormPolicy(settings) }
        defer { server.stop() }
        let english = try await server.request("GET", "/").body
        XCTAssertTrue(english.contains("Still free"), "English gets the general wording")
        let german = try await server.request("GET", "/?lang=de").body
        XCTAssertTrue(german.contains("Noch frei"), "German gets its own")
        XCTAssertFalse(german.contains("Still free"), "and no English wording")
        XCTAssertTrue(german.contains("Mindestens 8 Zeichen"), "the rest is the German catalog's")
    }

    func testPolicyTextsForALanguageTheServerDoesNotSpeakStopTheStart() throws {
        var settings = Policy.classic
        settings.textsByLanguage["sv"] = PolicyTexts([.usernameAvailableText: "Ledigt"])
        XCTAssertThrowsError(try TestServer { $0.policy = FormPolicy(settings) }) { error in
            XCTAssertTrue("\(error)".contains("The policy has texts for sv"), "\(error)")
            XCTAssertTrue("\(error)".contains("sv.yaml"), "\(error)")
        }
    }

    func testAFieldsTextsForALanguageTheServerDoesNotSpeakStopTheStartToo() throws {
        var settings = Policy.classic
        var nickname = FieldDeclaration(name: "nickname", kind: .text)
        nickname.texts = ["label": "Nickname"]
        nickname.textsByLanguage["sv"] = ["label": "Smeknamn"]
        settings.fields.append(nickname)
        XCTAssertThrowsError(try TestServer { $0.policy = FormPolicy(settings) }) { error in
            XCTAssertTrue("\(error)".contains("The policy has texts for sv"), "\(error)")
        }
    }

    /// A copy of the project's Templates with `catalog` as `i18n/<tag>.yaml` (remove it after).
    private static func templates(withCatalog catalog: String, named tag: String) throws -> URL {
        let templates = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-\(tag)-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: TestServer.repositoryRoot.appendingPathComponent("Templates"), to: templates)
        try catalog.write(to: templates.appendingPathComponent("i18n/\(tag).yaml"), atomically: true, encoding: .utf8)
        return templates
    }
}
