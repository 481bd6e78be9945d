import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MicroHTTPD
import XCTest

/// Responses produced off libmicrohttpd's threads: the connection waits suspended, holding
/// no worker, and gets exactly the response that was delivered.
final class DeferredResponseTests: XCTestCase {
    /// Answers `/slow?n=…` after `release()` is called, from another queue; anything else at once.
    final class GatedResponder: HTTPResponder, @unchecked Sendable {
        private let gate = DispatchSemaphore(value: 0)
        /// Signalled as each slow request's deferred work starts (the server counts it as
        /// pending from then on).
        let arrivals = DispatchSemaphore(value: 0)
        private let worker = DispatchQueue(label: "deferred-test", attributes: .concurrent)

        func release(_ count: Int) {
            for _ in 0..<count { gate.signal() }
        }

        func respond(to request: HTTPRequest) -> HTTPResponse {
            guard request.path == "/slow" else { return .text("fast") }
            let n = request.queryValue("n") ?? "?"
            return .later { [gate, worker, arrivals] respond in
                arrivals.signal()
                worker.async {
                    gate.wait()
                    respond(.text("slow \(n)", status: .created))
                }
            }
        }
    }

    private static func get(_ url: URL) async throws -> (Int, String) {
        let (data, response) = try await URLSession.shared.data(from: url)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    func testWaitingDeferredResponsesDoNotBlockOtherRequests() async throws {
        let responder = GatedResponder()
        // One worker thread: if a deferred answer held it, the fast request could not be served.
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0, workerThreads: 1), responder: responder)
        try server.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"

        async let slow1 = Self.get(URL(string: "\(base)/slow?n=1")!)
        async let slow2 = Self.get(URL(string: "\(base)/slow?n=2")!)
        let fast = try await Self.get(URL(string: "\(base)/")!)
        XCTAssertEqual(fast.1, "fast")

        responder.release(2)
        let answers = try await [slow1, slow2]
        XCTAssertEqual(answers.map(\.0), [201, 201])
        XCTAssertEqual(Set(answers.map(\.1)), ["slow 1", "slow 2"])
    }

    func testStopWaitsForPendingDeferredResponses() async throws {
        let responder = GatedResponder()
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), responder: responder)
        try server.start()
        let url = URL(string: "http://127.0.0.1:\(server.port)/slow?n=9")!
        let request = Task.detached { try await DeferredResponseTests.get(url) }
        XCTAssertEqual(responder.arrivals.wait(timeout: .now() + 10), .success, "request reached the server")
        let stopping = Task.detached { _ = server.stop() }
        responder.release(1)
        await stopping.value
        // The suspended request was answered before the daemon stopped, not cut off.
        let answer = try await request.value
        XCTAssertEqual(answer.1, "slow 9")
    }
}
