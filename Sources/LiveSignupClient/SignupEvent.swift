import Foundation

/// A sign-up event decoded from the server's event stream (see docs/PROTOCOL.md).
public enum SignupEvent: Equatable, Sendable {
    /// Always first on every connection: the complete current state.
    case snapshot(SignupSnapshot)
    case requirement(id: String, state: RequirementState, rev: Int)
    /// `text` is "" when the message is hidden.
    case message(field: String, text: String, rev: Int)
    /// The meter's new score and label, with advice for weak passwords.
    case strength(PasswordStrength, rev: Int)
    case submit(enabled: Bool, rev: Int)
    /// An event name this client does not know. The protocol may add names; surfacing them
    /// instead of failing keeps old clients working against newer servers.
    case unknown(ServerSentEvent)

    /// The edit number the event reflects, `nil` for `.unknown`.
    public var rev: Int? {
        switch self {
        case .snapshot(let snapshot): snapshot.rev
        case .requirement(_, _, let rev), .message(_, _, let rev), .strength(_, let rev),
             .submit(_, let rev):
            rev
        case .unknown: nil
        }
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
            let payload = try Self.decode(StrengthPayload.self, from: event)
            let strength = try Self.decode(PasswordStrength.self, from: event)
            self = .strength(strength, rev: payload.rev)
        case "submit":
            let payload = try Self.decode(SubmitPayload.self, from: event)
            self = .submit(enabled: payload.enabled, rev: payload.rev)
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
    private struct RequirementPayload: Decodable {
        var id: String
        var state: RequirementState
        var rev: Int
    }

    private struct MessagePayload: Decodable {
        var field: String
        var text: String
        var rev: Int
    }

    private struct StrengthPayload: Decodable {
        var rev: Int
    }

    private struct SubmitPayload: Decodable {
        var enabled: Bool
        var rev: Int
    }
}
