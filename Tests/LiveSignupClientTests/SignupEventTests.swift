import XCTest
@testable import LiveSignupClient

/// Decoding of the payloads in docs/PROTOCOL.md, forward compatibility, and readable errors.
final class SignupEventTests: XCTestCase {
    private func decode(_ type: String, _ data: String) throws -> SignupEvent {
        try SignupEvent(ServerSentEvent(type: type, data: data, id: "1"))
    }

    private func decodingError(_ type: String, _ data: String, file: StaticString = #filePath, line: UInt = #line) -> SignupEventDecodingError? {
        do {
            let event = try decode(type, data)
            XCTFail("expected a decoding error, got \(event)", file: file, line: line)
            return nil
        } catch let error as SignupEventDecodingError {
            return error
        } catch {
            XCTFail("expected SignupEventDecodingError, got \(error)", file: file, line: line)
            return nil
        }
    }

    private let snapshotJSON = """
    {"rev":3,"requirements":{"username.length":"met","username.charset":"met",\
    "username.available":"pending","email.format":"unmet","password.length":"met",\
    "password.uppercase":"unmet","password.common":"met","confirm.match":"unmet"},\
    "messages":{"username":"","email":"Enter your email address","password":"","confirm":""},\
    "strength":{"score":1,"label":"Weak"},"submit":{"enabled":false}}
    """

    // MARK: Valid payloads

    func testSnapshot() throws {
        let expected = SignupSnapshot(
            rev: 3,
            requirements: [
                "username.length": .met, "username.charset": .met, "username.available": .pending,
                "email.format": .unmet, "password.length": .met, "password.uppercase": .unmet,
                "password.common": .met, "confirm.match": .unmet,
            ],
            messages: ["username": "", "email": "Enter your email address", "password": "", "confirm": ""],
            strength: PasswordStrength(score: 1, label: "Weak"),
            submitEnabled: false
        )
        XCTAssertEqual(try decode("snapshot", snapshotJSON), .snapshot(expected))
    }

    func testSnapshotWithSubmitEnabled() throws {
        let json = #"{"rev":9,"requirements":{},"messages":{},"strength":{"score":4,"label":"Strong"},"submit":{"enabled":true}}"#
        XCTAssertEqual(
            try decode("snapshot", json),
            .snapshot(SignupSnapshot(rev: 9, requirements: [:], messages: [:], strength: PasswordStrength(score: 4, label: "Strong"), submitEnabled: true))
        )
    }

    func testRequirement() throws {
        XCTAssertEqual(
            try decode("requirement", #"{"id":"password.length","state":"met","rev":4}"#),
            .requirement(id: "password.length", state: .met, rev: 4)
        )
        XCTAssertEqual(
            try decode("requirement", #"{"id":"username.available","state":"pending","rev":5}"#),
            .requirement(id: "username.available", state: .pending, rev: 5)
        )
        XCTAssertEqual(
            try decode("requirement", #"{"id":"confirm.match","state":"unmet","rev":6}"#),
            .requirement(id: "confirm.match", state: .unmet, rev: 6)
        )
    }

    func testMessage() throws {
        XCTAssertEqual(
            try decode("message", #"{"field":"username","text":"That username is taken","rev":5}"#),
            .message(field: "username", text: "That username is taken", rev: 5)
        )
        XCTAssertEqual(
            try decode("message", #"{"field":"email","text":"","rev":8}"#),
            .message(field: "email", text: "", rev: 8)
        )
    }

    func testMessageWithEscapedUnicode() throws {
        XCTAssertEqual(
            try decode("message", #"{"field":"username","text":"caf\u00e9 \"x\"\n","rev":1}"#),
            .message(field: "username", text: "café \"x\"\n", rev: 1)
        )
    }

    func testStrength() throws {
        XCTAssertEqual(try decode("strength", #"{"score":2,"label":"Fair","rev":6}"#), .strength(PasswordStrength(score: 2, label: "Fair"), rev: 6))
    }

    func testSubmit() throws {
        XCTAssertEqual(try decode("submit", #"{"enabled":true,"rev":7}"#), .submit(enabled: true, rev: 7))
        XCTAssertEqual(try decode("submit", #"{"enabled":false,"rev":8}"#), .submit(enabled: false, rev: 8))
    }

    func testSuggestionRoundTripsAndAnEmptyValueWithdrawsIt() throws {
        XCTAssertEqual(try decode("suggestion", #"{"field":"email","value":"ada@gmail.com","rev":7}"#),
                       .suggestion(field: "email", value: "ada@gmail.com", rev: 7))
        let withdrawn = SignupEvent.suggestion(field: "email", value: "", rev: 8)
        XCTAssertEqual(withdrawn.name, "suggestion")
        XCTAssertEqual(withdrawn.data, #"{"field":"email","rev":8,"value":""}"#)
        XCTAssertEqual(try decode(withdrawn.name, withdrawn.data), withdrawn)
        XCTAssertEqual(withdrawn.rev, 8)
    }

    func testSnapshotSuggestionsAreOptionalForOldServersAndChangesComeAfterMessages() throws {
        guard case .snapshot(let old) = try decode("snapshot", snapshotJSON) else { return XCTFail("not a snapshot") }
        XCTAssertEqual(old.suggestions, [:], "a server that predates suggestions")
        var typo = old
        typo.rev = 4
        typo.messages["email"] = ""
        typo.suggestions = ["email": "ada@gmail.com"]
        var json = JSONWriter()
        typo.write(to: &json)
        XCTAssertTrue(json.text.hasSuffix(#","suggestions":{"email":"ada@gmail.com"}}"#), json.text)
        guard case .snapshot(let decoded) = try decode("snapshot", json.text) else { return XCTFail("not a snapshot") }
        XCTAssertEqual(decoded.suggestions, typo.suggestions)
        let order = ["username", "email", "password", "confirm"]
        XCTAssertEqual(typo.changes(since: old, requirementOrder: [], fieldOrder: order),
                       [.message(field: "email", text: "", rev: 4), .suggestion(field: "email", value: "ada@gmail.com", rev: 4)])
        var fixed = typo
        fixed.rev = 5
        fixed.suggestions = [:]
        XCTAssertEqual(fixed.changes(since: typo, requirementOrder: [], fieldOrder: order),
                       [.suggestion(field: "email", value: "", rev: 5)])
    }

    func testRevAccessor() throws {
        XCTAssertEqual(try decode("snapshot", snapshotJSON).rev, 3)
        XCTAssertEqual(try decode("submit", #"{"enabled":true,"rev":7}"#).rev, 7)
        XCTAssertNil(try decode("future", "{}").rev)
    }

    // MARK: Forward compatibility

    func testStrengthFeedback() throws {
        XCTAssertEqual(
            try decode("strength", #"{"score":1,"label":"Weak","rev":2,"warning":"This is a top-10 common password","suggestions":["Add another word"]}"#),
            .strength(PasswordStrength(score: 1, label: "Weak", warning: "This is a top-10 common password",
                                       suggestions: ["Add another word"]), rev: 2)
        )
    }

    func testExtraKeysAreTolerated() throws {
        XCTAssertEqual(
            try decode("strength", #"{"score":1,"label":"Weak","rev":2,"colour":"red"}"#),
            .strength(PasswordStrength(score: 1, label: "Weak"), rev: 2)
        )
        XCTAssertEqual(
            try decode("requirement", #"{"id":"email.format","state":"met","rev":3,"text":"A valid email address"}"#),
            .requirement(id: "email.format", state: .met, rev: 3)
        )
        let snapshot = #"{"rev":1,"requirements":{},"messages":{},"strength":{"score":0,"label":"Too weak","hue":"red"},"submit":{"enabled":false,"reason":"x"},"future":[1,2]}"#
        XCTAssertEqual(
            try decode("snapshot", snapshot),
            .snapshot(SignupSnapshot(rev: 1, requirements: [:], messages: [:], strength: PasswordStrength(score: 0, label: "Too weak"), submitEnabled: false))
        )
    }

    func testUnknownEventNameIsPassedThroughUndecoded() throws {
        let sse = ServerSentEvent(type: "celebration", data: "not even json", id: "12", retry: nil)
        XCTAssertEqual(try SignupEvent(sse), .unknown(sse))
    }

    func testEventNamesAreCaseSensitive() throws {
        let sse = ServerSentEvent(type: "Snapshot", data: "{}", id: nil)
        XCTAssertEqual(try SignupEvent(sse), .unknown(sse))
    }

    // MARK: Errors

    func testMalformedJSONThrowsReadableError() {
        guard let error = decodingError("requirement", #"{"id":"password.length","#) else { return }
        XCTAssertEqual(error.event.type, "requirement")
        XCTAssertTrue(error.reason.hasPrefix("the data is not valid JSON"), error.reason)
        XCTAssertTrue(error.description.hasPrefix("Cannot decode the 'requirement' event: the data is not valid JSON"), error.description)
        XCTAssertEqual(error.localizedDescription, error.description)
    }

    func testEmptyDataThrows() {
        guard let error = decodingError("snapshot", "") else { return }
        XCTAssertTrue(error.reason.hasPrefix("the data is not valid JSON"), error.reason)
    }

    func testMissingKeyNamesTheKey() {
        XCTAssertEqual(decodingError("requirement", #"{"id":"password.length","rev":4}"#)?.reason, "missing key 'state'")
        XCTAssertEqual(decodingError("submit", #"{"enabled":true}"#)?.reason, "missing key 'rev'")
    }

    func testMissingNestedKeyNamesThePath() {
        let json = #"{"rev":1,"requirements":{},"messages":{},"strength":{"score":0,"label":"x"},"submit":{}}"#
        XCTAssertEqual(decodingError("snapshot", json)?.reason, "missing key 'submit.enabled'")
    }

    func testWrongTypeNamesThePath() {
        XCTAssertEqual(decodingError("strength", #"{"score":"2","label":"Fair","rev":6}"#)?.reason, "expected Int at 'score'")
    }

    func testNullValueIsReported() {
        XCTAssertEqual(decodingError("message", #"{"field":"email","text":null,"rev":1}"#)?.reason, "null where String was expected at 'text'")
    }

    func testUnknownRequirementStateIsAnError() {
        guard let error = decodingError("requirement", #"{"id":"email.format","state":"maybe","rev":1}"#) else { return }
        XCTAssertTrue(error.reason.hasPrefix("invalid value at 'state'"), error.reason)
    }

    func testUnknownRequirementStateInSnapshotNamesTheRequirement() {
        let json = #"{"rev":1,"requirements":{"email.format":"maybe"},"messages":{},"strength":{"score":0,"label":"x"},"submit":{"enabled":false}}"#
        guard let error = decodingError("snapshot", json) else { return }
        XCTAssertTrue(error.reason.hasPrefix("invalid value at 'requirements.email.format'"), error.reason)
    }

    func testTopLevelArrayIsAnError() {
        XCTAssertEqual(decodingError("submit", "[true, 1]")?.reason.hasPrefix("expected"), true)
    }

    func testLongPayloadIsCutInDescription() {
        let data = #"{"rev":"# + String(repeating: "9", count: 1000)
        guard let error = decodingError("submit", data) else { return }
        XCTAssertLessThan(error.description.count, 400)
        XCTAssertTrue(error.description.hasSuffix("…"))
        XCTAssertEqual(error.event.data, data, "the error keeps the whole event")
    }
}
