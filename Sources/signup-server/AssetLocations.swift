import ArgumentParser
import Foundation

/// Finds the page templates and static files wherever the binary is started from:
/// 1. the folders given with `--public-directory` / `--templates-directory`;
/// 2. an installed layout: `<prefix>/bin/signup-server` with
///    `<prefix>/share/livesignup/{Public,Templates}` (what `make install PREFIX=…` makes);
/// 3. the source checkout the binary was built in (`.build/<triple>/<config>/signup-server`);
/// 4. the current directory.
enum AssetLocations {
    static func find(publicDirectory: String?, templatesDirectory: String?) throws
        -> (publicDirectory: URL, templatesDirectory: URL) {
        let roots = candidateRoots()
        func locate(_ given: String?, folder: String, marker: String) throws -> URL {
            if let given {
                let url = URL(fileURLWithPath: given)
                guard FileManager.default.fileExists(atPath: url.appendingPathComponent(marker).path) else {
                    throw ValidationError("\(given) has no \(marker).")
                }
                return url
            }
            for root in roots {
                let url = root.appendingPathComponent(folder)
                if FileManager.default.fileExists(atPath: url.appendingPathComponent(marker).path) { return url }
            }
            throw ValidationError("Could not find the \(folder) folder (looked in \(roots.map(\.path).joined(separator: ", "))). Install with `make install`, or pass --\(folder.lowercased())-directory.")
        }
        return (try locate(publicDirectory, folder: "Public", marker: "app.js"),
                try locate(templatesDirectory, folder: "Templates", marker: "signup.mustache"))
    }

    private static func candidateRoots() -> [URL] {
        // /proc/self/exe is the binary itself, symlinks resolved.
        let executable = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                             ?? CommandLine.arguments[0]).resolvingSymlinksInPath()
        let binDirectory = executable.deletingLastPathComponent()
        return [
            binDirectory.deletingLastPathComponent().appendingPathComponent("share/livesignup"),
            // .build/<triple>/<config>/signup-server → the checkout three levels up.
            binDirectory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent(),
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        ]
    }
}
