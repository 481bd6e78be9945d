import Foundation

/// Where measurements (the `…Measurements` test classes, run by `make bench`) record their
/// figures: Benchmarks/figures/NAME in the repository, committed with the change they measure.
public enum Figures {
    public static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Benchmarks/figures")

    public static func record(_ name: String, _ lines: [String]) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let text = lines.joined(separator: "\n") + "\n"
        try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        print("--- Benchmarks/figures/\(name) ---\n\(text)", terminator: "")
    }
}
