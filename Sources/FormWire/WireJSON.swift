import Foundation

/// The one JSON form of the protocol: sorted keys (stable bytes, easy to diff and test) and
/// slashes unescaped.
public enum WireJSON {
    public static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The protocol's plain structs cannot fail to encode.
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
