import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
import Locking
#endif

/// One server-side form session: its token plus the per-field `seq` counters the protocol
/// asks the client to keep, so that the server can drop edits that arrive out of order.
///
/// Checked `Sendable`: the only mutable state, the counters, sits in a lock-protected box,
/// so edits may be sent from several tasks at once and still get distinct, increasing seqs.
public final class FormSession: Sendable {
    public let client: SignupClient
    /// The form's token (from `POST /sessions`) (or any token, to test how the server rejects it).
    public let token: String
    private let lastSeq = Locked<[String: Int]>([:])

    /// `lang=` when the client chose a language: the server builds the session in it.
    private var languageQuery: [(String, String)] {
        client.language.map { [("lang", $0)] } ?? []
    }

    public init(client: SignupClient, token: String) {
        self.client = client
        self.token = token
    }

    /// Sends the field's next value with the next `seq` for that field (1, 2, 3, …).
    /// - Parameter touched: `true` once the user left the field, which makes its message visible.
    public func edit(_ field: String, to value: String, touched: Bool = false) async throws -> EditReceipt {
        try await send(field: field, value: value, seq: nextSeq(for: field), touched: touched)
    }

    /// `POST /fields` with a caller-chosen `seq`, e.g. to send edits out of order on purpose.
    /// Later `edit` calls continue above the highest seq used here, so mixing both stays sane.
    public func post(field: String, value: String, seq: Int, touched: Bool = false) async throws -> EditReceipt {
        recordSeq(seq, for: field)
        return try await send(field: field, value: value, seq: seq, touched: touched)
    }

    /// Reserves the field's next seq. Starts at 1 so it is newer than any initial value the
    /// server may assume; reserving under the lock gives concurrent edits distinct seqs.
    func nextSeq(for field: String) -> Int {
        lastSeq.withLock { seqs in
            let next = (seqs[field] ?? 0) + 1
            seqs[field] = next
            return next
        }
    }

    /// Notes an explicitly chosen seq so that `nextSeq` continues above it.
    func recordSeq(_ seq: Int, for field: String) {
        lastSeq.withLock { seqs in
            seqs[field] = max(seqs[field] ?? 0, seq)
        }
    }

    /// The urlencoded body of an edit; internal so tests can check the encoding.
    func body(field: String, value: String, seq: Int, touched: Bool) -> String {
        var fields: [(name: String, value: String)] = [
            ("token", token), ("field", field), ("value", value), ("seq", String(seq)),
        ]
        if touched {
            fields.append(("touched", "1"))
        }
        return FormURLEncoder.encode(fields)
    }

    private func send(field: String, value: String, seq: Int, touched: Bool) async throws -> EditReceipt {
        // The token in the URL as well as the body: a proxy in front of several instances
        // routes a form's edits to its instance by it.
        var request = URLRequest(url: client.url(path: "fields", query: [("token", token)] + languageQuery))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = Data(body(field: field, value: value, seq: seq, touched: touched).utf8)
        let (data, response) = try await client.send(request)
        guard (200..<300).contains(response.statusCode) else {
            throw SignupClientError.http(status: response.statusCode, body: data)
        }
        return try Self.receipt(body: data, revHeader: response.value(forHTTPHeaderField: "X-Rev"))
    }

    /// Reads `{"rev":N,"applied":B}`; `X-Rev` stands in when the body lacks a rev.
    static func receipt(body: Data, revHeader: String?) throws -> EditReceipt {
        // Field by field (not `EditReceipt`'s own decoding), so a missing key can be filled
        // from the header or named in the error.
        struct Answer: Decodable {
            var rev: Int?
            var applied: Bool?
        }
        let answer = body.isEmpty ? nil : try? JSONDecoder().decode(Answer.self, from: body)
        let headerRev = revHeader.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard let rev = answer?.rev ?? headerRev else {
            throw SignupClientError.invalidResponse(
                "POST /fields answer has no rev: \(String(decoding: body.prefix(200), as: UTF8.self))"
            )
        }
        guard let applied = answer?.applied else {
            throw SignupClientError.invalidResponse(
                "POST /fields answer has no applied flag: \(String(decoding: body.prefix(200), as: UTF8.self))"
            )
        }
        return EditReceipt(rev: rev, applied: applied)
    }

    /// `GET /events?token=…` as typed events, reconnecting like a browser. Each call opens a
    /// new connection; it closes when the consumer stops iterating.
    ///
    /// The stream fails with `SignupClientError.http` for a non-200 answer (e.g. 404
    /// `unknown_session`), `EventSourceError` for other connection failures, and
    /// `SignupEventDecodingError` for a known event with a malformed payload.
    public func events() -> AsyncThrowingStream<SignupEvent, Error> {
        let connection = EventSourceConnection(
            url: eventsURL,
            reconnectionTime: client.reconnectionTime,
            maximumReconnectionTime: client.maximumReconnectionTime
        )
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await event in connection.events {
                        continuation.yield(try SignupEvent(event))
                    }
                    continuation.finish()
                } catch EventSourceError.badStatus(let status, let body) {
                    continuation.finish(throwing: SignupClientError.http(status: status, body: body))
                } catch {
                    continuation.finish(throwing: error)
                }
                connection.close()
            }
            continuation.onTermination = { _ in
                task.cancel()
                connection.close()
            }
        }
    }

    /// Internal so tests can check the query encoding.
    var eventsURL: URL {
        client.url(path: "events", query: [("token", token)] + languageQuery)
    }
}
