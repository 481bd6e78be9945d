import Foundation

/// One entry of an account's profile: what a stored declared field kept (a text or a
/// select's value, a checkbox's state, when terms were accepted). A profile is a JSON object
/// of these, stored with the account.
public enum ProfileValue: Sendable, Equatable, Codable {
    case string(String)
    case bool(Bool)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .bool(let flag): try container.encode(flag)
        }
    }

    /// ISO 8601 in UTC with seconds, as every stored time in a profile is written.
    public static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// A profile as the JSON object the stores keep (keys sorted, so equal profiles are equal text).
    public static func json(_ profile: [String: ProfileValue]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(profile) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A stored profile's JSON read back; an unreadable one is empty rather than fatal.
    /// The profile a store kept. One it cannot read (edited by hand into something else) is
    /// kept whole under `"unreadable"` rather than shown as empty, so nothing is lost from
    /// `accounts list` or a webhook.
    public static func profile(fromJSON text: String) -> [String: ProfileValue] {
        if let profile = try? JSONDecoder().decode([String: ProfileValue].self, from: Data(text.utf8)) { return profile }
        return text.isEmpty || text == "{}" ? [:] : ["unreadable": .string(text)]
    }
}
