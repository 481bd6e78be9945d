import XCTest
@testable import LiveSignupClient

/// Every rule of the WHATWG "Interpreting an event stream" algorithm the parser implements,
/// each asserted on the exact events produced so a wrong implementation fails.
final class ServerSentEventParserTests: XCTestCase {
    // MARK: Helpers

    private func parse(_ chunks: [[UInt8]], lastEventID: String = "") -> (events: [ServerSentEvent], parser: ServerSentEventParser) {
        var parser = ServerSentEventParser(lastEventID: lastEventID)
        var events: [ServerSentEvent] = []
        for chunk in chunks {
            events += parser.feed(chunk)
        }
        return (events, parser)
    }

    private func parse(_ text: String) -> [ServerSentEvent] {
        parse([Array(text.utf8)]).events
    }

    private func parse(chunks: [String]) -> [ServerSentEvent] {
        parse(chunks.map { Array($0.utf8) }).events
    }

    private func event(_ data: String, type: String = "message", id: String? = nil, retry: Int? = nil) -> ServerSentEvent {
        ServerSentEvent(type: type, data: data, id: id, retry: retry)
    }

    // MARK: Dispatch

    func testSingleDataLineDispatchesMessageEvent() {
        XCTAssertEqual(parse("data: hello\n\n"), [event("hello")])
    }

    func testEventFieldSetsTypeAndTypeResetsAfterDispatch() {
        XCTAssertEqual(
            parse("event: snapshot\ndata: {}\n\ndata: plain\n\n"),
            [event("{}", type: "snapshot"), event("plain")]
        )
    }

    func testEmptyEventFieldMeansMessage() {
        XCTAssertEqual(parse("event:\ndata: x\n\n"), [event("x")])
    }

    func testMultipleDataLinesAreJoinedWithLineFeed() {
        XCTAssertEqual(parse("data: YHOO\ndata: +2\ndata: 10\n\n"), [event("YHOO\n+2\n10")])
    }

    func testOnlyOneTrailingLineFeedIsRemoved() {
        // Buffer is "a\nb\n\n"; only the final LF goes.
        XCTAssertEqual(parse("data: a\ndata: b\ndata:\n\n"), [event("a\nb\n")])
    }

    func testEmptyDataLineDispatchesEventWithEmptyData() {
        XCTAssertEqual(parse("data\n\n"), [event("")])
        XCTAssertEqual(parse("data:\n\n"), [event("")])
    }

    func testTwoEmptyDataLinesGiveSingleNewline() {
        XCTAssertEqual(parse("data\ndata\n\n"), [event("\n")])
    }

    func testBlockWithoutDataIsNotDispatched() {
        XCTAssertEqual(parse("event: snapshot\n\n"), [])
        XCTAssertEqual(parse("retry: 10\n\n"), [])
        XCTAssertEqual(parse("\n\n\n"), [])
    }

    func testEventTypeOfUndispatchedBlockDoesNotLeakIntoNextEvent() {
        XCTAssertEqual(parse("event: lost\n\ndata: x\n\n"), [event("x")])
    }

    func testTrailingDataWithoutBlankLineIsNotDispatched() {
        XCTAssertEqual(parse("data: a\n"), [])
        XCTAssertEqual(parse("data: a"), [])
        XCTAssertEqual(parse("data: a\n\ndata: b\n"), [event("a")])
    }

    func testPendingBlockIsDispatchedWhenBlankLineArrivesLater() {
        XCTAssertEqual(parse(chunks: ["data: a\n", "data: b", "\n", "\n"]), [event("a\nb")])
    }

    func testIdenticalEventsAreBothDispatched() {
        // Spec example: the space after the colon is optional.
        XCTAssertEqual(parse("data:test\n\ndata: test\n\n"), [event("test"), event("test")])
    }

    // MARK: Lines and fields

    func testCommentLinesAreIgnored() {
        XCTAssertEqual(parse(": ping\n\n"), [])
        XCTAssertEqual(parse(":\n\n"), [])
        XCTAssertEqual(parse("data: a\n: comment in the middle\ndata: b\n\n"), [event("a\nb")])
    }

    func testFieldWithoutColonHasEmptyValue() {
        // "event" alone resets the type to "", which dispatches as "message".
        XCTAssertEqual(parse("event: x\nevent\ndata: d\n\n"), [event("d")])
    }

    func testOnlyOneLeadingSpaceIsStripped() {
        XCTAssertEqual(parse("data:  two\n\n"), [event(" two")])
        XCTAssertEqual(parse("data:nospace\n\n"), [event("nospace")])
        XCTAssertEqual(parse("data:\ttab\n\n"), [event("\ttab")])
        XCTAssertEqual(parse("data: trailing \n\n"), [event("trailing ")])
    }

    func testOnlyFirstColonSeparatesFieldFromValue() {
        XCTAssertEqual(parse("data: a:b: c\n\n"), [event("a:b: c")])
        XCTAssertEqual(parse("data::x\n\n"), [event(":x")])
    }

    func testUnknownFieldsAreIgnoredAndNamesAreCaseSensitive() {
        XCTAssertEqual(parse("foo: bar\nDATA: upper\ndata: a\nEvent: x\n\n"), [event("a")])
    }

    func testFieldNameWithSpaceBeforeColonIsUnknown() {
        XCTAssertEqual(parse("data : x\ndata: y\n\n"), [event("y")])
    }

    func testNullCharacterInDataIsKept() {
        XCTAssertEqual(parse([Array("data: a".utf8) + [0] + Array("b\n\n".utf8)]).events, [event("a\u{0}b")])
    }

    func testInvalidUTF8BecomesReplacementCharacter() {
        XCTAssertEqual(parse([Array("data: ".utf8) + [0xFF] + Array("x\n\n".utf8)]).events, [event("\u{FFFD}x")])
    }

    // MARK: Line endings

    func testCRLFLineEndings() {
        XCTAssertEqual(parse("data: a\r\ndata: b\r\n\r\n"), [event("a\nb")])
    }

    func testCRLineEndings() {
        XCTAssertEqual(parse("data: a\rdata: b\r\r"), [event("a\nb")])
    }

    func testMixedLineEndings() {
        XCTAssertEqual(parse("data: a\r\ndata: b\ndata: c\r\r\nevent: e\rdata: d\n\n"), [event("a\nb\nc"), event("d", type: "e")])
    }

    func testCRAtEndOfChunkAndLFAtStartOfNextIsOneLineEnding() {
        // If the LF were taken as a second line ending it would dispatch "a" alone.
        XCTAssertEqual(parse(chunks: ["data: a\r", "\ndata: b\r\n\r\n"]), [event("a\nb")])
    }

    func testBlankLineEndingWithSplitCRLFDispatchesOnceAtTheCR() {
        var parser = ServerSentEventParser()
        XCTAssertEqual(parser.feed(Array("data: a\r\n\r".utf8)), [event("a")])
        XCTAssertEqual(parser.feed(Array("\n".utf8)), [])
        XCTAssertEqual(parser.feed(Array("data: b\n\n".utf8)), [event("b")])
    }

    func testCRFollowedByNonLFInNextChunk() {
        XCTAssertEqual(parse(chunks: ["data: a\r", "data: b\r", "\r"]), [event("a\nb")])
    }

    func testTwoCRsAreTwoLineEndings() {
        XCTAssertEqual(parse(chunks: ["data: a\r", "\r", "\n"]), [event("a")])
    }

    // MARK: Bounds

    /// A server that never ends a line, or sends one endless event, cannot take the reader's
    /// memory: past `maximumEventBytes` the event is dropped, counted, and the stream goes on.
    func testAnEventOverTheBoundIsDroppedAndTheStreamGoesOn() {
        var parser = ServerSentEventParser(maximumEventBytes: 16)
        let long = String(repeating: "x", count: 100)
        XCTAssertEqual(parser.feed(Array("data: \(long)\n\ndata: ok\n\n".utf8)), [event("ok")])
        XCTAssertEqual(parser.feed(Array("data: 0123456\ndata: 0123456\ndata: 0\n\ndata: fits\n\n".utf8)), [event("fits")])
        XCTAssertEqual(parser.droppedEvents, 2)
        // A comment may be long: it is not kept, and the event after it arrives.
        XCTAssertEqual(parser.feed(Array(":\(long)\ndata: after\n\n".utf8)), [event("after")])
        XCTAssertEqual(parser.droppedEvents, 2)
    }

    // MARK: Chunking

    func testLineSplitAcrossChunks() {
        XCTAssertEqual(parse(chunks: ["da", "ta: hel", "lo\n", "\n"]), [event("hello")])
        XCTAssertEqual(parse(chunks: ["event: snap", "shot\nid: 4", "2\ndata: x\n\n"]), [event("x", type: "snapshot", id: "42")])
    }

    func testMultibyteUTF8SplitAcrossChunks() {
        let bytes = Array("data: é€😀\n\n".utf8)
        XCTAssertEqual(parse(bytes.map { [$0] }).events, [event("é€😀")])
        // Split inside the 4-byte emoji specifically.
        let emoji = Array("😀".utf8)
        XCTAssertEqual(parse([Array("data: ".utf8) + emoji[0..<2], Array(emoji[2...]) + Array("\n\n".utf8)]).events, [event("😀")])
    }

    func testEverySplitPointGivesTheSameEvents() {
        let stream = "\u{FEFF}: hi\r\nretry: 500\r\nevent: a\rid: 1\ndata: é\r\ndata:  x\r\n\r\nid\ndata: 😀\n\nid: 2\0\ndata: z\r\r"
        let bytes = Array(stream.utf8)
        let expected = [
            event("é\n x", type: "a", id: "1", retry: 500),
            event("😀"),
            event("z"),
        ]
        XCTAssertEqual(parse([bytes]).events, expected)
        XCTAssertEqual(parse(bytes.map { [$0] }).events, expected, "byte by byte")
        for split in 0...bytes.count {
            XCTAssertEqual(
                parse([Array(bytes[..<split]), Array(bytes[split...])]).events, expected,
                "split at byte \(split)"
            )
        }
    }

    func testEmptyChunksChangeNothing() {
        XCTAssertEqual(parse(chunks: ["", "data: a\r", "", "\n", "", "\n"]), [event("a")])
    }

    // MARK: BOM

    func testLeadingBOMIsStripped() {
        XCTAssertEqual(parse("\u{FEFF}data: a\n\n"), [event("a")])
    }

    func testLeadingBOMSplitAcrossChunksIsStripped() {
        XCTAssertEqual(parse([[0xEF], [0xBB], [0xBF] + Array("data: a\n\n".utf8)]).events, [event("a")])
    }

    func testOnlyOneBOMIsStripped() {
        // The second BOM becomes part of the field name, which is then unknown.
        XCTAssertEqual(parse("\u{FEFF}\u{FEFF}data: a\n\ndata: b\n\n"), [event("b")])
    }

    func testBOMAfterStreamStartIsNotStripped() {
        XCTAssertEqual(parse("data: a\n\n\u{FEFF}data: b\n\ndata: c\n\n"), [event("a"), event("c")])
        XCTAssertEqual(parse(chunks: ["\n", "\u{FEFF}data: b\n\n"]), [])
    }

    func testBOMInsideValueIsKept() {
        XCTAssertEqual(parse("data: \u{FEFF}x\n\n"), [event("\u{FEFF}x")])
    }

    // MARK: id

    func testIdPersistsAcrossEvents() {
        let (events, parser) = parse([Array("id: 7\ndata: a\n\ndata: b\n\n".utf8)])
        XCTAssertEqual(events, [event("a", id: "7"), event("b", id: "7")])
        XCTAssertEqual(parser.lastEventID, "7")
    }

    func testEmptyIdResetsLastEventID() {
        let (events, parser) = parse([Array("id: 5\ndata: a\n\nid\ndata: b\n\n".utf8)])
        XCTAssertEqual(events, [event("a", id: "5"), event("b", id: nil)])
        XCTAssertEqual(parser.lastEventID, "")
    }

    func testIdIsAppliedAtDispatchNotAtLinePosition() {
        // The id line may follow the data lines of its block.
        XCTAssertEqual(parse("data: first event\nid: 1\n\n"), [event("first event", id: "1")])
    }

    func testIdContainingNullIsIgnored() {
        let bytes = Array("id: 1\ndata: a\n\nid: 2".utf8) + [0] + Array("x\ndata: b\n\n".utf8)
        let (events, parser) = parse([bytes])
        XCTAssertEqual(events, [event("a", id: "1"), event("b", id: "1")])
        XCTAssertEqual(parser.lastEventID, "1")
    }

    func testIdOfBlockWithoutDataIsStillCommitted() {
        let (events, parser) = parse([Array("id: 3\n\ndata: a\n\n".utf8)])
        XCTAssertEqual(events, [event("a", id: "3")])
        XCTAssertEqual(parser.lastEventID, "3")
    }

    func testIdWithoutBlankLineIsNotCommitted() {
        let (events, parser) = parse([Array("id: 1\ndata: a\n\nid: 9\ndata: x".utf8)])
        XCTAssertEqual(events, [event("a", id: "1")])
        XCTAssertEqual(parser.lastEventID, "1")
    }

    func testInitialLastEventIDCarriesOver() {
        let (events, parser) = parse([Array("data: a\n\nid: 42\ndata: b\n\n".utf8)], lastEventID: "41")
        XCTAssertEqual(events, [event("a", id: "41"), event("b", id: "42")])
        XCTAssertEqual(parser.lastEventID, "42")
    }

    func testIdKeepsSpacesBeyondTheFirst() {
        XCTAssertEqual(parse("id:  x y\ndata: a\n\n"), [event("a", id: " x y")])
    }

    // MARK: retry

    func testRetrySetsReconnectionTime() {
        let (events, parser) = parse([Array("retry: 2000\n\n".utf8)])
        XCTAssertEqual(events, [])
        XCTAssertEqual(parser.reconnectionTime, 2000)
    }

    func testRetryIsReportedOnTheEventOfItsBlockOnly() {
        let (events, parser) = parse([Array("retry: 1500\ndata: a\n\ndata: b\n\n".utf8)])
        XCTAssertEqual(events, [event("a", retry: 1500), event("b")])
        XCTAssertEqual(parser.reconnectionTime, 1500)
    }

    func testRetryWithNonDigitsIsIgnored() {
        for value in ["15x0", "-1", "+1", " 100", "1.5", "", "1e3", "١٢", "100 "] {
            let (events, parser) = parse([Array("retry: 300\n\nretry: \(value)\ndata: a\n\n".utf8)])
            XCTAssertEqual(events, [event("a")], "retry: \(value)")
            XCTAssertEqual(parser.reconnectionTime, 300, "retry: \(value)")
        }
    }

    func testRetryWithoutColonIsIgnored() {
        let (_, parser) = parse([Array("retry\n\n".utf8)])
        XCTAssertNil(parser.reconnectionTime)
    }

    func testRetryTooLargeForIntIsIgnored() {
        let (_, parser) = parse([Array("retry: 5\nretry: 99999999999999999999999\n\n".utf8)])
        XCTAssertEqual(parser.reconnectionTime, 5)
    }

    func testRetryZeroIsAccepted() {
        let (_, parser) = parse([Array("retry: 0\n\n".utf8)])
        XCTAssertEqual(parser.reconnectionTime, 0)
    }

    // MARK: Spec examples and the sign-up stream

    func testSpecExampleWithCommentAndIds() {
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
        XCTAssertEqual(parse(stream), [
            event("first event", id: "1"),
            event("second event", id: nil),
            event(" third event", id: nil),
        ])
    }

    func testSpecExampleWithEmptyDataBlocks() {
        XCTAssertEqual(parse("data\n\ndata\ndata\n\ndata:"), [event(""), event("\n")])
    }

    func testSignupServerStreamShape() {
        let stream = """
        retry: 2000

        id: 1
        event: snapshot
        data: {"rev":0}

        : ping

        id: 2
        event: requirement
        data: {"id":"password.length","state":"met","rev":1}


        """
        XCTAssertEqual(parse(stream), [
            event(#"{"rev":0}"#, type: "snapshot", id: "1"),
            event(#"{"id":"password.length","state":"met","rev":1}"#, type: "requirement", id: "2"),
        ])
    }
}
