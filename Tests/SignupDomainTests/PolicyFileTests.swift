import Foundation
import SignupDomain
import XCTest

/// Policy files: the shipped presets are files in the operator's format; a full file sets
/// every setting; a bad file names its line and what is wrong.
final class PolicyFileTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("livesignup-policy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func write(_ name: String, _ text: String) throws -> String {
        let url = directory.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    private func parse(_ text: String) throws -> Policy {
        try PolicyFile.parse(text, file: "policy.yaml", baseDirectory: directory)
    }

    func testThePresetsAreShippedFilesWithTheDocumentedSettings() throws {
        for name in Policy.presetNames {
            let file = try XCTUnwrap(Policy.presetFile(name), name)
            XCTAssertEqual(try PolicyFile.load(path: file.path).name, name)
        }
        let classic = Policy.classic
        XCTAssertEqual(classic.usernameLength, 4...32)
        XCTAssertEqual(classic.passwordMinimumLength, 8)
        XCTAssertTrue(classic.requiresUppercase)
        XCTAssertEqual(classic.minimumStrengthScore, 2)
        XCTAssertEqual(classic.blocklist.count, CommonPasswords.builtIn.count)
        XCTAssertTrue(classic.reservedUsernames.contains("admin"))
        let nist = Policy.nist
        XCTAssertEqual(nist.passwordMinimumLength, 15)
        XCTAssertFalse(nist.requiresUppercase)
        XCTAssertEqual(nist.minimumStrengthScore, 3)
        XCTAssertNil(nist.availabilityDebounceMilliseconds, "the server's flag decides")
    }

    func testAFullFileSetsEverySetting() throws {
        _ = try write("reserved.txt", "# ours\ntenant\n\n  landlord  \n")
        _ = try write("blocked.txt", "sunshine-apartment\n# a comment\nrent-is-due\n")
        let policy = try parse("""
            name: tenants
            summary: For the tenants' portal.
            service_name: Rentwise
            availability_debounce_ms: 500
            username:
              min_length: 6
              max_length: 20
              characters: {letters: true, digits: false, symbols: "_"}
              reserved: [owner]
              reserved_file: reserved.txt
            password:
              min_length: 12
              max_bytes: 256
              require_uppercase: false
              min_strength: 3
              blocklist: blocked.txt
              context_words: [landlord, "Rent Portal"]
            texts:
              username.length.text: "{min}–{max} Zeichen"
              username.charset.text: Letters and underscores only
              username.charset.message: Use only letters and underscores
              username.available.taken: That name belongs to someone already
            """)
        XCTAssertEqual(policy.name, "tenants")
        XCTAssertEqual(policy.summary, "For the tenants' portal.")
        XCTAssertEqual(policy.serviceName, "Rentwise")
        XCTAssertEqual(policy.availabilityDebounceMilliseconds, 500)
        XCTAssertEqual(policy.usernameLength, 6...20)
        XCTAssertEqual(policy.usernameCharacters, UsernameCharacters(letters: true, digits: false, symbols: "_"))
        XCTAssertEqual(policy.reservedUsernames, ["owner", "tenant", "landlord"])
        XCTAssertEqual(policy.passwordMinimumLength, 12)
        XCTAssertEqual(policy.passwordMaximumBytes, 256)
        XCTAssertFalse(policy.requiresUppercase)
        XCTAssertEqual(policy.minimumStrengthScore, 3)
        XCTAssertEqual(policy.blocklist.count, 2)
        XCTAssertTrue(policy.blocklist.contains("Rent-Is-Due"), "compared case-folded, like the built-in list")
        XCTAssertEqual(policy.contextWords, ["landlord", "Rent Portal"])

        let rules = FormPolicy(policy, strengthEstimator: FixedStrength(score: 4))
        XCTAssertEqual(rules.requirements(for: .username).first?.text, "6–20 Zeichen")
        XCTAssertEqual(rules.requirements(for: .password).map(\.id), ["password.length", "password.common", "password.strength"])
        XCTAssertEqual(rules.usernameTakenMessage, "That name belongs to someone already")
        XCTAssertTrue(rules.isReserved("Tenant"))
        XCTAssertTrue(rules.isReserved("rentwise"), "the service name is always reserved")

        let charset = rules.username.rules.first { $0.id == "username.charset" }!
        XCTAssertTrue(charset.isMet("mary_ann"))
        XCTAssertFalse(charset.isMet("mary.ann"), "'.' is not in this policy's symbols")
        XCTAssertFalse(charset.isMet("mary2"), "digits are off")
        XCTAssertEqual(rules.username.validation(of: rules.username.evaluate("mary2ann"), isShown: true).message,
                       "Use only letters and underscores")

        let blocked = rules.passwordCandidate(password: "sunshine-apartment", username: "maryann", email: "m@example.com")
        let commonIndex = try XCTUnwrap(rules.requirements(for: .password).firstIndex { $0.id == "password.common" })
        XCTAssertEqual(rules.password.evaluate(blocked).states[commonIndex], .unmet)
        let siteWord = rules.passwordCandidate(password: "landlord2024!", username: "maryann", email: "m@example.com")
        XCTAssertEqual(rules.password.validation(of: rules.password.evaluate(siteWord), isShown: true).message,
                       PolicyTexts.builtIn(.passwordCommonSiteWord),
                       "a policy context word counts as the site's own")
    }

    /// Issue 44: `second_factor` is off, optional (left out) or required; anything else is
    /// refused with the values it may take.
    func testTheSecondFactorRuleIsReadAndCheckedAsTheFileSaysIt() throws {
        XCTAssertEqual(try parse("name: a\n").secondFactor, .optional)
        XCTAssertEqual(try parse("name: a\nsecond_factor: required\n").secondFactor, .required)
        XCTAssertEqual(try parse("name: a\nsecond_factor: off\n").secondFactor, .off)
        XCTAssertThrowsError(try parse("name: a\nsecond_factor: sometimes\n")) { error in
            XCTAssertTrue("\(error)".contains("'second_factor' must be off, optional or required, not 'sometimes'"), "\(error)")
        }
    }

    func testProvidersAreReadWithTheirSecretsLeftInTheEnvironment() throws {
        let policy = try parse("""
            name: a
            providers:
              - id: work
                name: Example Work
                issuer: https://login.example.com/tenant
                client_id: livesignup
                client_secret_env: WORK_CLIENT_SECRET
                trust_email_verified: true
              - id: test-idp
                name: Test
                issuer: http://127.0.0.1:9400
                client_id: c
                client_secret_env: TEST_SECRET
                scopes: [openid, email]
            """)
        XCTAssertEqual(policy.providers, [
            ProviderDeclaration(id: "work", name: "Example Work", issuer: "https://login.example.com/tenant", clientID: "livesignup",
                                clientSecretVariable: "WORK_CLIENT_SECRET", trustsEmailVerified: true),
            ProviderDeclaration(id: "test-idp", name: "Test", issuer: "http://127.0.0.1:9400", clientID: "c",
                                clientSecretVariable: "TEST_SECRET", scopes: ["openid", "email"]),
        ])
        XCTAssertEqual(try parse("name: a\n").providers, [])
        let entry = "  - id: x\n    name: X\n    issuer: https://id.example\n    client_id: c\n    client_secret_env: X_SECRET\n"
        let cases: [(yaml: String, reason: String)] = [
            ("providers:\n  - id: x\n    name: X\n", "a provider needs 'issuer'"),
            ("providers:\n" + entry.replacingOccurrences(of: "client_secret_env: X_SECRET", with: "client_secret: hunter2"),
             "unknown setting 'providers.client_secret'"),
            ("providers:\n" + entry.replacingOccurrences(of: "X_SECRET", with: "hunter2"),
             "names an environment variable (A-Z, 0-9, '_'), not 'hunter2'; the secret itself never goes in the file"),
            ("providers:\n" + entry.replacingOccurrences(of: "https://id.example", with: "http://id.example"),
             "must be an https URL without query or fragment (http only on loopback, for tests)"),
            ("providers:\n" + entry.replacingOccurrences(of: "id: x", with: "id: Big Name"), "a provider's 'id' must be 1 to 32 of a-z"),
            ("providers:\n" + entry + entry, "the provider id 'x' is given twice"),
            ("providers:\n" + entry + "    scopes: [email]\n", "'providers.x.scopes' must include openid"),
        ]
        for (yaml, reason) in cases {
            XCTAssertThrowsError(try parse("name: a\n" + yaml), yaml) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(error)")
            }
        }
    }

    /// Issue 56: the applications LiveSignup is the OpenID provider of, each with its line
    /// when refused.
    func testClientsAreReadWithTheirURIsCheckedAndTheirSecretsLeftInTheEnvironment() throws {
        let policy = try parse("""
            name: a
            clients:
              - id: wiki
                name: The Wiki
                redirect_uris: [https://wiki.example.com/cb, http://127.0.0.1:8080/cb]
                post_logout_redirect_uris: [https://wiki.example.com/]
                scopes: [openid, email]
                first_party: true
                client_secret_env: WIKI_SECRET
                backchannel_logout_uri: https://wiki.example.com/logout
              - id: phone.app
                name: Phone
                redirect_uris: [http://localhost:9000/cb]
                public: true
            """)
        var wiki = ClientDeclaration(id: "wiki", name: "The Wiki", redirectURIs: ["https://wiki.example.com/cb", "http://127.0.0.1:8080/cb"])
        wiki.postLogoutRedirectURIs = ["https://wiki.example.com/"]
        wiki.scopes = ["openid", "email"]
        wiki.firstParty = true
        wiki.secretVariable = "WIKI_SECRET"
        wiki.backchannelLogoutURI = "https://wiki.example.com/logout"
        let phone = ClientDeclaration(id: "phone.app", name: "Phone", redirectURIs: ["http://localhost:9000/cb"])
        XCTAssertEqual(policy.clients, [wiki, phone])
        XCTAssertTrue(policy.clients[1].isPublic)
        XCTAssertEqual(try parse("name: a\n").clients, [])
        let entry = "  - id: x\n    name: X\n    redirect_uris: [https://x.example/cb]\n    client_secret_env: X_SECRET\n"
        let cases: [(yaml: String, reason: String)] = [
            ("clients:\n  - id: x\n    name: X\n", "a client needs 'redirect_uris'"),
            ("clients:\n" + entry.replacingOccurrences(of: "client_secret_env: X_SECRET", with: "client_secret: hunter2"),
             "unknown setting 'clients.client_secret'"),
            ("clients:\n" + entry.replacingOccurrences(of: "X_SECRET", with: "hunter2"),
             "names an environment variable (A-Z, 0-9, '_'), not 'hunter2'; the secret itself never goes in the file"),
            ("clients:\n" + entry.replacingOccurrences(of: "    client_secret_env: X_SECRET\n", with: ""),
             "'clients.x' needs client_secret_env"),
            ("clients:\n" + entry + "    public: true\n", "'clients.x' is public (no secret, PKCE instead) or has client_secret_env, not both"),
            ("clients:\n" + entry.replacingOccurrences(of: "https://x.example/cb", with: "http://x.example/cb"),
             "'http://x.example/cb' must be https (http only on loopback)"),
            ("clients:\n" + entry.replacingOccurrences(of: "https://x.example/cb", with: "https://x.example/cb#top"),
             "must not have a fragment"),
            ("clients:\n" + entry.replacingOccurrences(of: "https://x.example/cb", with: "/cb"), "must be an absolute URL"),
            ("clients:\n" + entry.replacingOccurrences(of: "https://x.example/cb", with: "https://x.example/" + String(repeating: "a", count: 2048)),
             "is longer than 2048 bytes"),
            ("clients:\n" + entry.replacingOccurrences(of: "[https://x.example/cb]", with: "[]"), "must list at least one URI"),
            ("clients:\n" + entry.replacingOccurrences(of: "id: x", with: "id: two words"), "a client's 'id' must be 1 to 64"),
            ("clients:\n" + entry + entry, "the client id 'x' is given twice"),
            ("clients:\n" + entry + "    scopes: [email]\n", "'clients.x.scopes' must include openid"),
            ("clients:\n" + entry + "    scopes: [openid, admin]\n", "may list openid, profile, email, offline_access, not 'admin'"),
            ("clients:\n" + entry + "    id_token_signed_response_alg: HS256\n", "must be ES256 or RS256, not 'HS256'"),
        ]
        for (yaml, reason) in cases {
            XCTAssertThrowsError(try parse("name: a\n" + yaml), yaml) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(error)")
            }
        }
    }

    func testJSONWorksToo() throws {
        let path = try write("policy.json", #"{"name": "json-policy", "password": {"min_length": 10, "require_uppercase": false}}"#)
        let policy = try PolicyFile.load(path: path)
        XCTAssertEqual(policy.name, "json-policy")
        XCTAssertEqual(policy.passwordMinimumLength, 10)
        XCTAssertEqual(policy.usernameLength, Policy.defaults.usernameLength, "left out: the classic value")
    }

    func testTheFileNameIsTheNameWhenTheFileGivesNone() throws {
        let path = try write("staff-portal.yaml", "password:\n  min_length: 14\n")
        XCTAssertEqual(try PolicyFile.load(path: path).name, "staff-portal")
    }

    func testABadFileNamesTheLineAndTheReason() throws {
        let cases: [(yaml: String, line: Int?, reason: String)] = [
            ("name: a\nusername:\n  min_lenght: 3\n", 3, "unknown setting 'username.min_lenght'; 'username' may have: min_length, max_length"),
            ("name: a\npassword:\n  min_length: twelve\n", 3, "'password.min_length' must be a whole number"),
            ("username:\n  min_length: 9\n  max_length: 5\n", 3, "'username.max_length' (5) is below 'username.min_length' (9)"),
            ("password:\n  min_strength: 5\n", 2, "'password.min_strength' must be 0 to 4, not 5"),
            ("password:\n  require_uppercase: sometimes\n", 2, "'password.require_uppercase' must be true or false"),
            ("username:\n  reserved: admin\n", 2, "'username.reserved' must be a list"),
            ("username:\n  reserved_file: missing.txt\n", 2, "missing.txt cannot be read: no such file"),
            ("password:\n  blocklist: nowhere.txt\n", 2, "nowhere.txt cannot be read"),
            ("texts:\n  password.length.text: At least {minimum} characters\n", 2,
             "'texts.password.length.text' uses {minimum}, which it cannot fill in; it may use {min}"),
            ("texts:\n  username.taken: Gone\n", 2, "unknown setting 'texts.username.taken'"),
            ("texts:\n  confirm.empty: ''\n", 2, "'texts.confirm.empty' is empty"),
            ("username:\n  characters: {letters: true, digits: true, symbols: \"._-+\"}\n", 2,
             "'username.characters' differs from the built-in rule, so 'texts' must say what is allowed: give 'username.charset.text' and 'username.charset.message'"),
            ("texts_by_language:\n  German:\n    confirm.empty: Bitte\n", 2, "'German' is not a language tag in lower case"),
            ("texts_by_language: [de]\n", 1, "'texts_by_language' must map language tags"),
            ("texts_by_language:\n  de:\n    username.taken: Weg\n", 3, "unknown setting 'texts_by_language.de.username.taken'"),
            ("texts_by_language:\n  de:\n    password.length.text: Mindestens {minimum}\n", 3,
             "'texts_by_language.de.password.length.text' uses {minimum}, which it cannot fill in; it may use {min}"),
            ("""
             username:
               characters: {letters: true, digits: true, symbols: "._-+"}
             texts:
               username.charset.text: Letters, digits and ._-+
               username.charset.message: Only letters, digits and ._-+
             texts_by_language:
               de:
                 confirm.empty: Bitte bestätigen
             """, 7, "so 'texts_by_language.de' must say what is allowed too: give 'username.charset.text' and 'username.charset.message'"),
            ("username:\n  characters: {symbols: \" \"}\n", 2, "may not hold spaces or invisible characters (U+20)"),
            ("name: a\nusername: [1, 2\n", 3, "is not valid YAML or JSON"),
            ("name: has spaces\n", 1, "'name' must be 1 to 40 letters, digits, '-' or '_'"),
            ("- just\n- a list\n", 1, "a policy file must be a mapping of settings"),
            ("", nil, "is empty"),
        ]
        for (yaml, line, reason) in cases {
            XCTAssertThrowsError(try parse(yaml), yaml) { error in
                guard let error = error as? PolicyFileError else { return XCTFail("\(yaml): \(error)") }
                XCTAssertEqual(error.file, "policy.yaml")
                XCTAssertEqual(error.line, line, "\(yaml): \(error)")
                XCTAssertTrue(error.reason.contains(reason), "\(yaml)\nexpected: \(reason)\nactual:   \(error.reason)")
                if let line { XCTAssertTrue(error.description.hasPrefix("policy.yaml:\(line): "), error.description) }
            }
        }
    }

    func testAListThatIsNotARegularFileIsNamedForWhatItIsAndNeverOpened() throws {
        // Opening a FIFO for reading would wait for a writer that never comes.
        XCTAssertEqual(mkfifo(directory.appendingPathComponent("names.fifo").path, 0o600), 0)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("names.d"), withIntermediateDirectories: false)
        for (name, kind) in [("names.fifo", "a FIFO"), ("names.d", "a directory")] {
            XCTAssertThrowsError(try parse("username:\n  reserved_file: \(name)\n")) { error in
                XCTAssertTrue("\(error)".hasSuffix("\(name) is not a regular file (it is \(kind))"), "\(error)")
                XCTAssertTrue("\(error)".hasPrefix("policy.yaml:2: "), "\(error)")
            }
        }
    }

    func testTextsForOneLanguageReplaceTheGeneralOnesInThatLanguageOnly() throws {
        let policy = try parse("""
            texts:
              username.available.text: Still free
            texts_by_language:
              de:
                username.available.text: Noch frei
            """)
        XCTAssertEqual(policy.texts(.usernameAvailableText), "Still free")
        XCTAssertEqual(policy.textsByLanguage["de"]?(.usernameAvailableText), "Noch frei")
        let german = PolicyTexts([.usernameAvailableText: "Nicht vergeben", .confirmEmpty: "Bitte bestätigen"])
        let rules = FormPolicy(policy)
        XCTAssertEqual(rules.localized(german, language: "de").settings.texts(.usernameAvailableText), "Noch frei",
                       "the policy's German wording over the German catalog")
        XCTAssertEqual(rules.localized(german, language: "de").settings.texts(.confirmEmpty), "Bitte bestätigen",
                       "the catalog still says what the policy does not")
        XCTAssertEqual(rules.localized(PolicyTexts(), language: "en").settings.texts(.usernameAvailableText), "Still free",
                       "a language without its own entry gets the general texts")
    }

    func testAFileThatCannotBeReadSaysSo() {
        XCTAssertThrowsError(try PolicyFile.load(path: directory.appendingPathComponent("absent.yaml").path)) { error in
            XCTAssertTrue("\(error)".hasSuffix("absent.yaml: cannot be read: no such file"), "\(error)")
        }
    }
}

/// A strength estimator with a fixed score, so these tests are about the file, not zxcvbn.
private struct FixedStrength: PasswordStrengthEstimating {
    let score: Int
    func strength(of password: String, userInputs: [String]) -> PasswordStrength {
        PasswordStrength(score: score, label: "", warning: "", suggestions: [])
    }
}
