@testable import MicroHTTPD
import XCTest

/// `OpenStreams`, the server's list of open event streams: whatever order streams open and
/// close in, the list holds each open one exactly once, so the heartbeat pings every open
/// stream once and never a closed one.
final class OpenStreamsTests: XCTestCase {
    func testTheListHoldsExactlyTheOpenStreamsThroughAnyOpensAndCloses() {
        var generator = SystemRandomNumberGenerator()
        let pool = (0..<40).map { _ in EventStream() }
        var streams = OpenStreams()
        var open = Set<ObjectIdentifier>()
        for step in 0..<2_000 {
            let stream = pool.randomElement(using: &generator)!
            if Bool.random(using: &generator) {
                streams.insert(stream)
                open.insert(ObjectIdentifier(stream))
            } else {
                streams.remove(stream)
                open.remove(ObjectIdentifier(stream))
            }
            let listed = streams.list.map(ObjectIdentifier.init)
            XCTAssertEqual(listed.count, Set(listed).count, "a stream listed twice at step \(step)")
            XCTAssertEqual(Set(listed), open, "step \(step)")
            XCTAssertEqual(streams.count, open.count)
        }
    }
}
