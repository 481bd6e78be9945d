import Foundation
import HTTPTestSupport
import XCTest

/// A throwaway PostgreSQL cluster on loopback for tests: `initdb` into a temporary folder,
/// `pg_ctl start` on a free port, one fresh database per test (`makeDatabase`). PostgreSQL
/// refuses to run as root, so as root the cluster runs as the `postgres` user (Debian's
/// package creates it). `make test` installs the server from Debian's packages; where its
/// binaries are missing, `shared()` throws `Prerequisite.missing` saying so (a skip, or a
/// failure where the run requires everything).
public final class PostgresTestCluster: @unchecked Sendable {
    public let port: UInt16
    public let directory: URL
    private let binaries: URL
    private let lock = NSLock()
    private var databaseCount = 0

    /// One cluster for the whole test process, stopped when the process exits.
    public static func shared() throws -> PostgresTestCluster {
        try sharedCluster.get()
    }

    private static let sharedCluster: Result<PostgresTestCluster, any Error> = Result {
        let cluster = try PostgresTestCluster()
        clusterToStopAtExit = cluster
        atexit {
            PostgresTestCluster.clusterToStopAtExit?.stop()
            PostgresTestCluster.clusterToStopAtExit?.remove()
        }
        return cluster
    }
    nonisolated(unsafe) private static var clusterToStopAtExit: PostgresTestCluster?

    /// The newest installed server's binaries (Debian keeps them per major version).
    static func findBinaries() -> URL? {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }
            .map { root.appendingPathComponent($0).appendingPathComponent("bin") }
            .first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("pg_ctl").path) }
    }

    /// A new cluster, initialised and started. Call `stop()` and `remove()` when done (the
    /// shared one does so at exit).
    public init() throws {
        guard let binaries = Self.findBinaries() else {
            throw Prerequisite.missing("PostgreSQL's server is not installed under /usr/lib/postgresql (make test installs Debian's postgresql)")
        }
        self.binaries = binaries
        directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("livesignup-pg-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            let chown = try Self.run(URL(fileURLWithPath: "/bin/chown"), ["postgres:postgres", directory.path])
            guard chown.status == 0 else {
                throw Prerequisite.missing("running as root, but there is no postgres user to run PostgreSQL as: \(chown.output)")
            }
        }
        port = try Self.freePort()
        let data = directory.appendingPathComponent("data").path
        try runChecked("initdb", ["-D", data, "-U", "livesignup", "--auth=trust", "-E", "UTF8", "--locale=C"])
        try start()
    }

    /// Starts (or restarts) the server; waits until it accepts connections.
    public func start() throws {
        // fsync off: a test cluster needs speed, not crash safety (commits are still
        // synchronous, so an answered commit is visible to every connection).
        let options = "-p \(port) -h 127.0.0.1 -k \(directory.path) -c fsync=off -c max_connections=200"
        try runChecked("pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-l",
                                  directory.appendingPathComponent("server.log").path, "-o", options, "-w", "-t", "60", "start"])
    }

    /// Stops the server at once (connections are cut, as in a crash or a network fault).
    public func stop() {
        _ = try? runChecked("pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
    }

    public func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A fresh, empty database; its URL for `--database` or `PostgresLocation`.
    public func makeDatabase() throws -> String {
        let name = lock.withLock { () -> String in
            databaseCount += 1
            return "test_\(getpid())_\(databaseCount)"
        }
        try runChecked("createdb", ["-h", "127.0.0.1", "-p", String(port), "-U", "livesignup", name])
        return "postgres://livesignup@127.0.0.1:\(port)/\(name)?sslmode=disable"
    }

    /// What the server logged, for failure messages.
    public var serverLog: String {
        (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
    }

    @discardableResult
    private func runChecked(_ tool: String, _ arguments: [String]) throws -> String {
        let executable = binaries.appendingPathComponent(tool)
        let result: (status: Int32, output: String)
        if getuid() == 0 {
            result = try Self.run(URL(fileURLWithPath: "/usr/sbin/runuser"),
                                  ["-u", "postgres", "--", executable.path] + arguments)
        } else {
            result = try Self.run(executable, arguments)
        }
        guard result.status == 0 else {
            throw ClusterError(description: "\(tool) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.output)")
        }
        return result.output
    }

    /// Runs a tool to completion with its output in a file, through `posix_spawn` and
    /// `waitpid` on its own pid. Not `Foundation.Process`: `pg_ctl start` leaves a daemon
    /// behind, and Foundation's exit monitoring on Linux then never saw `runuser` exit
    /// (the test hung in `waitUntilExit` with the child a zombie).
    private static func run(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let outputPath = NSTemporaryDirectory() + "livesignup-pg-tool-\(getpid())-\(UUID().uuidString.prefix(8)).log"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable.path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw ClusterError(description: "could not start \(executable.path): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw ClusterError(description: "waitpid failed: \(String(cString: strerror(errno)))") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED/WEXITSTATUS are macros Swift cannot import.
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exitStatus, output)
    }

    /// A port nothing listens on now (the kernel's pick for port 0).
    private static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ClusterError(description: "socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw ClusterError(description: "could not find a free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    public struct ClusterError: Error, CustomStringConvertible {
        public let description: String
    }
}
