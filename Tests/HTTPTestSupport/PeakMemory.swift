import Foundation

/// The process's peak resident memory around a piece of work, for tests that an attack costs
/// no memory: `reset` sets the peak (VmHWM) back to the current RSS (writing 5 to
/// /proc/self/clear_refs, Linux 4.0 and later), so a transient allocation that is freed
/// before the test looks still shows.
public enum PeakMemory {
    public static func reset() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .ascii)
    }

    /// A field of /proc/self/status in KiB ("VmRSS", "VmHWM").
    public static func kib(_ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) } ?? 0
    }

    /// How far the peak RSS rose above the RSS before `work`, in KiB.
    public static func growth(during work: () async throws -> Void) async rethrows -> Int {
        reset()
        let before = kib("VmRSS")
        try await work()
        return kib("VmHWM") - before
    }

    public static func growth(during work: () throws -> Void) rethrows -> Int {
        reset()
        let before = kib("VmRSS")
        try work()
        return kib("VmHWM") - before
    }
}
