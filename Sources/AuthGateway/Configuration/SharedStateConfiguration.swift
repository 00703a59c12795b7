/// `sharedState` (docs/shared-state.md): the refresh single flight and grace outcomes shared by
/// every instance on one PostgreSQL database. Absent: each process keeps its own.
public struct SharedStateConfiguration: Sendable, Equatable, CustomStringConvertible {
    public var postgres: PostgresSettings
    /// The AES-256-GCM key sealing stored outcomes (32 bytes). Every instance on the database
    /// needs the same one.
    public var encryptionKey: EncryptionKey
    /// How often rows past their expiry are deleted.
    public var sweepIntervalSeconds: Int
    /// How often each instance exchanges its rate-limit consumption (docs/rate-limits.md).
    public var rateLimitSyncMilliseconds: Int = 200

    public var description: String {
        "postgres \(self.postgres.url) (tls \(self.postgres.tls.rawValue), timeout \(self.postgres.timeoutMilliseconds) ms)"
    }

    /// 32 key bytes; printed, described and dumped as `<redacted>` (as `Secret`).
    public struct EncryptionKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
        CustomReflectable
    {
        public static let byteCount = 32
        public let bytes: [UInt8]

        public init?(bytes: [UInt8]) {
            guard bytes.count == Self.byteCount else { return nil }
            self.bytes = bytes
        }

        public var description: String { "<redacted>" }
        public var debugDescription: String { "<redacted>" }
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
    }
}

public struct PostgresSettings: Sendable, Equatable {
    public var url: PostgresURL
    public var tls: PostgresTLSMode
    /// Trust anchor for `verify-full` (else the system trust store).
    public var caCertificatePEMFile: String?
    /// The bound on every database operation; past it the request falls back to the
    /// process-local table.
    public var timeoutMilliseconds: Int
}

/// `sharedState.postgres.tls`, named as libpq's `sslmode` values.
public enum PostgresTLSMode: String, Sendable, Equatable, CaseIterable {
    /// Plain TCP.
    case disable
    /// Encrypted; the server's certificate is not checked (as libpq's `require` without a
    /// root certificate).
    case require
    /// Encrypted; the certificate must chain to the CA file (or the system trust store) and
    /// name the URL's host.
    case verifyFull = "verify-full"
}
