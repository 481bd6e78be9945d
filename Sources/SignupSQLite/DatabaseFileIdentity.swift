import Foundation
import SignupDomain

/// Which file a path names (device and inode). A database file deleted or replaced under a
/// running process keeps working through the old descriptor, so every write would "succeed"
/// into a file nobody will ever open again; comparing identities catches that.
struct DatabaseFileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    /// The identity of the file at `path` now, or nil when there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
