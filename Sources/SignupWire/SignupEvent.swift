import FormWire
import Foundation

/// One event of the sign-up event stream (see docs/PROTOCOL.md): the server encodes it, the
/// client decodes it.
public enum SignupEvent: Equatable, Sendable {
    /// Always first on every connection: the complete current state.
    case snapshot(SignupSnapshot)
    case requirement(id: String, state: RequirementState, rev: Int)
    /// `text` is "" when the message is hidden.
    case message(field: String, text: String, rev: Int)
    /// The meter's new score and label, with advice for weak passwords.
    case strength(PasswordStrength, rev: Int)
    case submit(enabled: Bool, rev: Int)
    /// A likely correction of a field's value ("Did you mean ada@gmail.com?"); `value` is ""
    /// when the field no longer has one. Never blocks the form.
    case suggestion(field: String, value: String, rev: Int)
    /// The person chose another credential: the checklist now holds that credential's
    /// requirements (the password's, or `passkey.created`). Sent before their states.
    case credential(CredentialMethod, rev: Int)
    /// An event name this client does not know. The protocol may add names; surfacing them
    /// instead of failing keeps old clients working against newer servers.
    case unknown(ServerSentEvent)

    /// The edit number the event reflects, `nil` for `.unknown`.
    public var rev: Int? {
        switch self {
        case .snapshot(let snapshot): snapshot.rev
        case .requirement(_, _, let rev), .message(_, _, let rev), .strength(_, let rev),
             .submit(_, let rev), .suggestion(_, _, let rev), .credential(_, let rev):
            rev
        case .unknown: nil
        }
    }

    /// The SSE `event:` name; part of the public protocol.
    public var name: String {
        switch self {
        case .snapshot: "snapshot"
        case .requirement: "requirement"
        case .message: "message"
        case .strength: "strength"
        case .submit: "submit"
        case .suggestion: "suggestion"
        case .credential: "credential"
        case .unknown(let event): event.type
        }
    }

    /// The one-line JSON `data:` payload (keys sorted), written directly (see `JSONWriter`).
    public var data: String {
        var json = JSONWriter()
        switch self {
        case .snapshot(let snapshot):
            snapshot.write(to: &json)
        case .requirement(let id, let state, let rev):
            json.beginObject()
            json.key("id"); json.string(id)
            json.key("rev"); json.int(rev)
            json.key("state"); json.string(state.rawValue)
            json.endObject()
        case .message(let field, let text, let rev):
            json.beginObject()
            json.key("field"); json.string(field)
            json.key("rev"); json.int(rev)
            json.key("text"); json.string(text)
            json.endObject()
        case .strength(let strength, let rev):
            strength.write(to: &json, rev: rev)
        case .submit(let enabled, let rev):
            json.beginObject()
            json.key("enabled"); json.bool(enabled)
            json.key("rev"); json.int(rev)
            json.endObject()
        case .suggestion(let field, let value, let rev):
            json.beginObject()
            json.key("field"); json.string(field)
            json.key("rev"); json.int(rev)
            json.key("value"); json.string(value)
            json.endObject()
        case .credential(let method, let rev):
            json.beginObject()
            json.key("method"); json.string(method.rawValue)
            json.key("rev"); json.int(rev)
            json.endObject()
        case .unknown(let event):
            return event.data
        }
        return json.text
    }

    /// Decodes a known event's JSON payload.
    /// - Throws: `SignupEventDecodingError` with a readable reason when the payload of a known
    ///   event is not valid JSON or lacks a field. Extra JSON keys are ignored.
    public init(_ event: ServerSentEvent) throws {
        switch event.type {
        case "snapshot":
            self = .snapshot(try Self.decode(SignupSnapshot.self, from: event))
        case "requirement":
            let payload = try Self.decode(RequirementPayload.self, from: event)
            self = .requirement(id: payload.id, state: payload.state, rev: payload.rev)
        case "message":
            let payload = try Self.decode(MessagePayload.self, from: event)
            self = .message(field: payload.field, text: payload.text, rev: payload.rev)
        case "strength":
            let payload = try Self.decode(RevPayload.self, from: event)
            let strength = try Self.decode(PasswordStrength.self, from: event)
            self = .strength(strength, rev: payload.rev)
        case "submit":
            let payload = try Self.decode(SubmitPayload.self, from: event)
            self = .submit(enabled: payload.enabled, rev: payload.rev)
        case "suggestion":
            let payload = try Self.decode(SuggestionPayload.self, from: event)
            self = .suggestion(field: payload.field, value: payload.value, rev: payload.rev)
        case "credential":
            let payload = try Self.decode(CredentialPayload.self, from: event)
            self = .credential(payload.method, rev: payload.rev)
        default:
            self = .unknown(event)
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, from event: ServerSentEvent) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(event.data.utf8))
        } catch let error as DecodingError {
            throw SignupEventDecodingError(event: event, reason: SignupEventDecodingError.describe(error))
        } catch {
            throw SignupEventDecodingError(event: event, reason: String(describing: error))
        }
    }

    // Wire shapes of the change events; private because callers get the flat enum cases.
    private struct RequirementPayload: Codable {
        var id: String
        var state: RequirementState
        var rev: Int
    }

    private struct MessagePayload: Codable {
        var field: String
        var text: String
        var rev: Int
    }

    private struct SuggestionPayload: Codable {
        var field: String
        var value: String
        var rev: Int
    }

    private struct CredentialPayload: Codable {
        var method: CredentialMethod
        var rev: Int
    }

    private struct RevPayload: Decodable {
        var rev: Int
    }

    private struct SubmitPayload: Codable {
        var enabled: Bool
        var rev: Int
    }
}
