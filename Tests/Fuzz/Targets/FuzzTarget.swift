import Foundation

/// One parser under the fuzzer: the same code the server runs on a stranger's bytes, and the
/// properties that must hold for every input (checked with `FuzzCheck`, which crashes so that
/// libFuzzer keeps the input).
struct FuzzTarget: Sendable {
    /// The name `make fuzz TARGET=…` takes, and the folder of its corpus and dictionary
    /// (`Tests/Fuzz/corpus/<name>/`, `Tests/Fuzz/dictionaries/<name>.dict`).
    let name: String
    /// What the server reads with it, for `make fuzz-list` and the docs.
    let summary: String
    /// Called once per input. Must not keep state between inputs that changes what an input
    /// does: a crash must reproduce from its input alone.
    let run: @Sendable (FuzzInput) -> Void
    /// Inputs the target makes for its corpus (`signup-fuzz seed`): minted with the fixed
    /// keys the target checks with, or cut from recorded real traffic. Most targets have none
    /// and are seeded by hand-written files.
    var seeds: @Sendable () -> [(name: String, bytes: [UInt8])] = { [] }

    init(name: String, summary: String, seeds: @escaping @Sendable () -> [(name: String, bytes: [UInt8])] = { [] },
         run: @escaping @Sendable (FuzzInput) -> Void) {
        self.name = name
        self.summary = summary
        self.seeds = seeds
        self.run = run
    }

    /// Every target, in the order `make fuzz` runs them.
    static let all: [FuzzTarget] = [
        .formBody,
        .fieldEdit,
        .cookie,
        .languageNegotiation,
        .returnTarget,
        .eventStream,
        .cbor,
        .authenticatorData,
        .attestationObject,
        .clientDataJSON,
        .webauthnRegistration,
        .webauthnAssertion,
        .altcha,
        .policyFile,
        .settingsFile,
        .openIDDiscovery,
        .openIDKeys,
        .idToken,
        .pwnedRange,
        .dnsAnswer,
        .mailAddress,
        .username,
        .linkCode,
        .messageFormat,
        .authorizeRequest,
        .tokenRequest,
    ]

    static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}

/// The bytes of one input, and ways to split them when a parser takes several values.
struct FuzzInput {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The bytes as text, invalid UTF-8 repaired the way the server's own readers repair it.
    var text: String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// The input cut at each NUL byte into at most `count` texts (the last keeps the rest,
    /// NULs included), padded with empty texts. How a target takes several values: the
    /// corpora and dictionaries write them the same way.
    func texts(_ count: Int) -> [String] {
        var parts = bytes.split(separator: 0, maxSplits: count - 1, omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        while parts.count < count { parts.append("") }
        return parts
    }
}

/// A property of a target that did not hold: says which, then aborts, so libFuzzer records the
/// input as a crash (`crash-<sha1>`) and the replay exits non-zero.
func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
               file: StaticString = #fileID, line: UInt = #line) {
    if !condition() {
        FileHandle.standardError.write(Data("fuzz property failed at \(file):\(line): \(message())\n".utf8))
        abort()
    }
}
