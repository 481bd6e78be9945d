import Foundation

/// Files of the repository a target reads once at start (catalogs, recorded passkeys): found
/// from this source file's place, so a target runs from any working directory.
enum FuzzResources {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func url(_ path: String) -> URL {
        repository.appendingPathComponent(path)
    }

    /// The one moment every target's clock reads (2027-01-15), inside every minted seed's life.
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
}
