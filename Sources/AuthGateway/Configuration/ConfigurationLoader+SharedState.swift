import Foundation
import NIOSSL

/// Reading `sharedState` (docs/shared-state.md). Validated without connecting: URL form, TLS mode
/// and CA file, key length. No message quotes the URL or the key (either may hold a secret).
extension ConfigurationLoader {
    static func sharedState(_ root: ConfigReader, files: FileResolver) -> SharedStateConfiguration? {
        guard let section = root.object("sharedState") else { return nil }
        defer { section.finish() }
        let postgres = section.object("postgres").flatMap { postgresSection in
            defer { postgresSection.finish() }
            return Self.postgres(postgresSection, files: files)
        }
        if !section.has("postgres") { section.error("postgres", "is required") }

        var key: SharedStateConfiguration.EncryptionKey?
        if let text = section.requiredString("encryptionKeyBase64") {
            key = Self.encryptionKey(text, section: section)
        }
        let sweep = section.duration("sweepIntervalSeconds") ?? 60
        let rateLimitSync = section.int("rateLimitSyncMilliseconds", in: 10...60_000) ?? 200
        guard let postgres, let key else { return nil }
        return SharedStateConfiguration(
            postgres: postgres, encryptionKey: key, sweepIntervalSeconds: sweep,
            rateLimitSyncMilliseconds: rateLimitSync)
    }

    static func postgres(_ section: ConfigReader, files: FileResolver) -> PostgresSettings? {
        var url: PostgresURL?
        if let text = section.requiredString("url") {
            switch PostgresURL.parse(text) {
            case .success(let parsed): url = parsed
            case .failure(let reason): section.error("url", reason.description)
            }
        }
        var tls = PostgresTLSMode.require
        if let name = section.string("tls") {
            if let mode = PostgresTLSMode(rawValue: name) {
                tls = mode
            } else {
                section.error("tls", "must be \"disable\", \"require\" or \"verify-full\"")
            }
        }
        var caFile: String?
        if let ca = section.nonEmptyString("caCertificatePEMFile") {
            let path = files.resolve(ca)
            if tls != .verifyFull {
                section.error(
                    "caCertificatePEMFile",
                    "applies only to tls \"verify-full\" (\"\(tls.rawValue)\" checks no certificate)")
            } else if let problem = files.unreadable(path) {
                section.error("caCertificatePEMFile", problem)
            } else if (try? NIOSSLCertificate.fromPEMFile(path))?.isEmpty != false {
                section.error("caCertificatePEMFile", "\(path) holds no PEM certificate")
            } else {
                caFile = path
            }
        }
        let timeout = section.int("timeoutMilliseconds", in: 1...600_000) ?? 1000
        guard let url else { return nil }
        return PostgresSettings(url: url, tls: tls, caCertificatePEMFile: caFile, timeoutMilliseconds: timeout)
    }

    /// 32 bytes of standard base64 (`openssl rand -base64 32`).
    static func encryptionKey(_ text: String, section: ConfigReader) -> SharedStateConfiguration.EncryptionKey? {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            section.error("encryptionKeyBase64", "is not base64 (make one with: openssl rand -base64 32)")
            return nil
        }
        guard let key = SharedStateConfiguration.EncryptionKey(bytes: Array(data)) else {
            section.error(
                "encryptionKeyBase64",
                "must be \(SharedStateConfiguration.EncryptionKey.byteCount) bytes for AES-256-GCM, found \(data.count) (make one with: openssl rand -base64 32)"
            )
            return nil
        }
        return key
    }
}
