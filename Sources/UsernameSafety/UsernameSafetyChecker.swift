import UnicodeSpoofShims

/// Tells whether a username can be shown to others and compared safely, with ICU's spoof
/// checker (Unicode UTS #39) at the "moderately restrictive" level: one script, or Latin
/// with one other script that has no Latin look-alikes (so "tanaka太郎" passes and a
/// Cyrillic "а" in "pаypal" does not). Invisible and bidi characters are found first, in
/// Swift, so the reason given is the specific one.
///
/// Safe to use from any thread: ICU's checks only read the checker, configured once.
public struct UsernameSafetyChecker: Sendable {
    public init() {}

    /// The problem with `username`, or nil when it is fine (empty included: emptiness is
    /// the other rules' business).
    public func problem(in username: String) -> UsernameSafetyProblem? {
        var isASCII = true
        for scalar in username.unicodeScalars where scalar.value >= 0x80 {
            // No ASCII character is a bidi control, default-ignorable or a format character:
            // only the others are looked up.
            isASCII = false
            if Self.bidiControls.contains(scalar.value) { return .bidiControl }
            if scalar.properties.isDefaultIgnorableCodePoint || scalar.properties.generalCategory == .format {
                return .invisibleCharacter
            }
        }
        // Plain ASCII is one script (Latin with Common), one digit system and no combining
        // marks: every check ICU runs here passes it (UsernameSafetyTests compares the two on
        // every ASCII character). Most usernames are, and ICU took about 14,000 instructions
        // per keystroke to say so. Empty is the other rules' business.
        return isASCII ? nil : icuProblem(in: username)
    }

    /// ICU's verdict alone, for a username already free of bidi and invisible characters.
    package func icuProblem(in username: String) -> UsernameSafetyProblem? {
        let failed = Self.check(username)
        if failed < 0 { return .mixedScripts }  // ICU could not judge it: refuse rather than guess
        if failed & Self.invisible != 0 { return .invisibleCharacter }
        if failed & Self.mixedNumbers != 0 { return .mixedNumbers }
        if failed & (Self.restrictionLevel | Self.hiddenOverlay) != 0 { return .mixedScripts }
        return nil
    }

    /// ICU's confusable skeleton: two names with the same skeleton look alike ("paypal" and
    /// "pаypal"). Useful to refuse a name that only looks like a taken one.
    public func skeleton(of text: String) -> String {
        var capacity = text.utf8.count * 4 + 16
        while true {
            var buffer = [CChar](repeating: 0, count: capacity)
            let length = Self.withUTF8(text) { unicode_spoof_skeleton($0, $1, &buffer, Int32(capacity)) }
            if length < 0 { return text }
            if Int(length) < capacity {
                return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            }
            capacity = Int(length) + 1
        }
    }

    private static func check(_ text: String) -> Int32 {
        withUTF8(text) { unicode_spoof_check($0, $1) }
    }

    /// The text's bytes and their count for ICU: with the length given, a NUL inside is a
    /// character ICU judges, not the end (found by fuzzing: "a\0pаypal" was judged as "a").
    private static func withUTF8<R>(_ text: String, _ body: (UnsafePointer<CChar>, Int32) -> R) -> R {
        let bytes = Array(text.utf8).map { CChar(bitPattern: $0) }
        return bytes.withUnsafeBufferPointer { buffer in
            // An empty array may have no storage: ICU is given a valid pointer with length 0.
            withUnsafePointer(to: CChar(0)) { empty in body(buffer.baseAddress ?? empty, Int32(clamping: buffer.count)) }
        }
    }

    // USpoofChecks bits (uspoof.h).
    private static let restrictionLevel: Int32 = 16
    private static let invisible: Int32 = 32
    private static let mixedNumbers: Int32 = 128
    private static let hiddenOverlay: Int32 = 256

    private static let bidiControls: Set<UInt32> = Set(0x202A...0x202E).union(0x2066...0x2069)
        .union([0x200E, 0x200F, 0x061C])
}
