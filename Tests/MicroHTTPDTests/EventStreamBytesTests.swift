@testable import MicroHTTPD
import XCTest

/// The bytes an event becomes, as an event stream's parser reads them: every line break in
/// the data (LF, CR or CRLF) starts a new `data:` line, and a name or id never breaks a line.
final class EventStreamBytesTests: XCTestCase {
    /// What libmicrohttpd would read from the stream now (nothing is suspended while bytes wait).
    private func pendingText(of stream: EventStream) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBufferPointer { stream.read(into: $0.baseAddress!, capacity: $0.count) }
        return String(decoding: buffer.prefix(max(0, count)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func testEveryLineBreakOfTheDataStartsADataLine() {
        let stream = EventStream()
        stream.send(event: "message", data: "a\r\nb\rc\nd\n", id: "7")
        XCTAssertEqual(pendingText(of: stream), "id: 7\nevent: message\ndata: a\ndata: b\ndata: c\ndata: d\ndata: \n\n")
    }

    func testNamesIdsAndCommentsStayOnOneLine() {
        let stream = EventStream()
        stream.send(event: "mes\r\nsage", data: "{\"é\":1}", id: "1\n2")
        stream.sendComment("pi\nng")
        XCTAssertEqual(pendingText(of: stream), "id: 12\nevent: message\ndata: {\"é\":1}\n\n: ping\n\n")
    }

    /// A batch (one edit's changes) is the same bytes as its events sent one by one, in order,
    /// and an empty batch sends nothing.
    func testABatchIsItsEventsInOrder() {
        let single = EventStream(), batch = EventStream()
        single.send(event: "requirement", data: "{\"id\":\"a\"}", id: "3")
        single.send(event: "strength", data: "x\ny", id: "4")
        single.send(data: "")
        batch.send([])
        batch.send([EventStream.Event(name: "requirement", data: "{\"id\":\"a\"}", id: "3"),
                    EventStream.Event(name: "strength", data: "x\ny", id: "4"),
                    EventStream.Event(data: "")])
        let expected = "id: 3\nevent: requirement\ndata: {\"id\":\"a\"}\n\nid: 4\nevent: strength\ndata: x\ndata: y\n\ndata: \n\n"
        XCTAssertEqual(pendingText(of: single), expected)
        XCTAssertEqual(pendingText(of: batch), expected)
    }
}
