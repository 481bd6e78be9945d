import Foundation
import NIOSSL
import PostgresNIO

/// Where the PostgreSQL database is, from a URL in libpq's form:
/// `postgres://user:password@host:port/database?sslmode=disable|prefer|require|verify-full`.
/// `sslmode` means what it means to libpq: `prefer` (the default) and `require` encrypt
/// without checking the certificate, `verify-full` checks it and the host name.
public struct PostgresLocation: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var sslMode: SSLMode

    public enum SSLMode: String, Sendable, CaseIterable {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    /// Whether `text` is meant as a PostgreSQL URL (anything else is a SQLite file path).
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Parses the URL; the error says what is wrong with it (never repeating the password).
    public init(url text: String) throws(PostgresLocationError) {
        guard Self.isURL(text), let components = URLComponents(string: text) else {
            throw PostgresLocationError("'\(Self.redacted(text))' is not a URL of the form postgres://user:password@host:port/database.")
        }
        guard let host = components.host, !host.isEmpty else {
            throw PostgresLocationError("The database URL '\(Self.redacted(text))' names no host.")
        }
        guard let username = components.user, !username.isEmpty else {
            throw PostgresLocationError("The database URL '\(Self.redacted(text))' names no user (postgres://USER:password@host/database).")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw PostgresLocationError("The database URL '\(Self.redacted(text))' names no database (…@host:port/DATABASE).")
        }
        var sslMode = SSLMode.prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value.flatMap(SSLMode.init(rawValue:)) else {
                    throw PostgresLocationError("sslmode must be one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")), not '\(item.value ?? "")'.")
                }
                sslMode = mode
            default:
                throw PostgresLocationError("The database URL has an unknown parameter '\(item.name)' (only sslmode is understood).")
            }
        }
        // URLComponents keeps brackets around IPv6 hosts; the connection wants the address.
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? 5432
        self.username = username
        password = components.password
        self.database = database
        self.sslMode = sslMode
    }

    /// `host:port/database`, for messages and logs (no credentials).
    public var displayName: String { "\(host):\(port)/\(database)" }

    /// The URL with its password replaced by `***`, for messages.
    public static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? "postgres://…"
    }

    var tls: PostgresClient.Configuration.TLS {
        var checked = TLSConfiguration.makeClientConfiguration()
        var unchecked = checked
        unchecked.certificateVerification = .none
        switch sslMode {
        case .disable: return .disable
        case .prefer: return .prefer(unchecked)
        case .require: return .require(unchecked)
        case .verifyFull:
            checked.certificateVerification = .fullVerification
            return .require(checked)
        }
    }
}

/// A database URL that cannot be used, and why.
public struct PostgresLocationError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
