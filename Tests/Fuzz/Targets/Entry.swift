import Foundation

// Two builds of one executable. `make fuzz` compiles it with `-sanitize=fuzzer,address` and
// `-DFUZZING`: libFuzzer supplies `main` and calls the two functions below. The ordinary build
// (`swift build`) has the `main` at the bottom instead, which runs a target over inputs once
// each, without sanitizers: a quick way to replay a finding under the debugger.

/// The target this process fuzzes, from the name it was started as (`make fuzz` links
/// `.build-fuzz/targets/<name>` to the executable, so libFuzzer's reproduce lines name it) or
/// from LIVESIGNUP_FUZZ_TARGET.
private func chosenTarget(program: String) -> FuzzTarget {
    let environment = ProcessInfo.processInfo.environment
    if environment["LIVESIGNUP_FUZZ_LIST"] != nil {
        for target in FuzzTarget.all { print("\(target.name)\t\(target.summary)") }
        exit(0)
    }
    let name = environment["LIVESIGNUP_FUZZ_TARGET"] ?? URL(fileURLWithPath: program).lastPathComponent
    guard let target = FuzzTarget.named(name) else {
        let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
        FileHandle.standardError.write(Data("No fuzz target named \"\(name)\". Start the executable as (a link named) one of: \(names); or set LIVESIGNUP_FUZZ_TARGET.\n".utf8))
        exit(2)
    }
    return target
}

#if FUZZING
nonisolated(unsafe) private var target: FuzzTarget?

/// libFuzzer's driver, for a program whose `main` is its own (SwiftPM names an executable's
/// entry point itself, so libFuzzer's `main` cannot be the one linked).
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    target?.run(FuzzInput(bytes))
    return 0
}

@main
enum Fuzz {
    static func main() {
        target = chosenTarget(program: CommandLine.arguments.first ?? "")
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv, fuzzerTestOneInput))
    }
}
#else
@main
enum Replay {
    /// `signup-fuzz list`: the targets. `signup-fuzz TARGET FILE-OR-FOLDER…`: every file once
    /// through the target. `signup-fuzz seed TARGET FOLDER`: writes the target's made seeds
    /// (minted tokens, recorded passkeys cut into parts) into its corpus folder.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "list" {
            for target in FuzzTarget.all { print("\(target.name)\t\(target.summary)") }
            return
        }
        if arguments.first == "seed", arguments.count == 3 {
            let target = named(arguments[1])
            var written = 0
            for (name, bytes) in target.seeds() {
                let url = URL(fileURLWithPath: arguments[2]).appendingPathComponent("seed-" + name)
                guard (try? Data(bytes).write(to: url)) != nil else { fail("cannot write \(url.path)") }
                written += 1
            }
            print("\(target.name): \(written) seeds written to \(arguments[2])")
            return
        }
        guard arguments.count >= 2 else {
            fail("usage: signup-fuzz list | TARGET FILE-OR-FOLDER… | seed TARGET FOLDER")
        }
        let target = named(arguments[0])
        var count = 0
        for path in arguments.dropFirst() {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { fail("No such file: \(path)") }
            let files = isFolder.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target.run(FuzzInput(Array(data)))
                count += 1
            }
        }
        print("\(target.name): \(count) inputs, no property failed")
    }

    private static func named(_ name: String) -> FuzzTarget {
        guard let target = FuzzTarget.named(name) else {
            fail("No fuzz target named \"\(name)\"; `signup-fuzz list` names them.")
        }
        return target
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(2)
    }
}
#endif
