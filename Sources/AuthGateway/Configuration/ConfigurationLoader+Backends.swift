import NIOSSL

/// The per-backend keys of docs/forwarding.md: `tls`, `healthCheck`, `outlierDetection`.
extension ConfigurationLoader {
    /// Reads the §4.11 keys of one backend into `backend` (its `urls` already read).
    static func backendExtras(_ section: ConfigReader, into backend: inout BackendConfiguration, files: FileResolver) {
        backend.tls = Self.backendTLS(section, urls: backend.urls, files: files)
        if let health = section.object("healthCheck") {
            var check = HealthCheckConfiguration()
            if let path = health.nonEmptyString("path") {
                if path.hasPrefix("/") && !path.contains(where: { $0.isWhitespace || $0.isNewline }) {
                    check.path = path
                } else {
                    health.error("path", "must be a path starting with \"/\"")
                }
            }
            check.intervalSeconds = health.int("intervalSeconds", in: 1...3600) ?? check.intervalSeconds
            check.timeoutMilliseconds = health.int("timeoutMilliseconds", in: 1...600_000) ?? check.timeoutMilliseconds
            check.unhealthyThreshold = health.int("unhealthyThreshold", in: 1...1000) ?? check.unhealthyThreshold
            check.healthyThreshold = health.int("healthyThreshold", in: 1...1000) ?? check.healthyThreshold
            health.finish()
            backend.healthCheck = check
        }
        if let outlier = section.object("outlierDetection") {
            var detection = OutlierDetectionConfiguration()
            detection.consecutiveFailures =
                outlier.int("consecutiveFailures", in: 1...10_000) ?? detection.consecutiveFailures
            detection.baseEjectionSeconds =
                outlier.int("baseEjectionSeconds", in: 1...300) ?? detection.baseEjectionSeconds
            detection.maxEjectionPercent =
                outlier.int("maxEjectionPercent", in: 1...100) ?? detection.maxEjectionPercent
            outlier.finish()
            backend.outlierDetection = detection
        }
        if (backend.healthCheck != nil || backend.outlierDetection != nil)
            && backend.urls.count > BackendConfiguration.maxTrackedURLs
        {
            section.error(
                "urls",
                "healthCheck and outlierDetection track at most \(BackendConfiguration.maxTrackedURLs) URLs per backend"
            )
        }
    }

    /// `backends.<name>.tls`: every file readable and parseable, the key matching the
    /// certificate, both or neither of them, and only on a backend with an `https` URL.
    static func backendTLS(
        _ backend: ConfigReader, urls: [UpstreamURL], files: FileResolver
    ) -> BackendTLSConfiguration? {
        guard let section = backend.object("tls") else { return nil }
        defer { section.finish() }
        var tls = BackendTLSConfiguration()
        if !urls.isEmpty && !urls.contains(where: \.isTLS) {
            backend.error("tls", "applies to https URLs only, and every URL of this backend is http")
        }
        tls.insecureSkipVerify = section.bool("insecureSkipVerify") ?? false
        if let name = section.nonEmptyString("serverName") {
            if Self.isIPLiteral(name) {
                section.error(
                    "serverName",
                    "\"\(name)\" is an IP address: SNI and certificate names need a DNS name (leave serverName out to check the URL's IP)"
                )
            } else if name.utf8.count > 253
                || !name.allSatisfy({
                    $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_")
                })
            {
                section.error("serverName", "\"\(name)\" is not a DNS name")
            } else {
                tls.serverName = name
            }
        }
        if let file = section.nonEmptyString("caCertificatePEMFile").map(files.resolve) {
            if let certificates = Self.certificates(file, key: "caCertificatePEMFile", section: section, files: files) {
                tls.caCertificatePEMFile = file
                tls.caCertificates = certificates
            }
        }
        let certificateFile = section.nonEmptyString("certificatePEMFile").map(files.resolve)
        let keyFile = section.nonEmptyString("privateKeyPEMFile").map(files.resolve)
        if section.has("certificatePEMFile") != section.has("privateKeyPEMFile") {
            let missing = section.has("certificatePEMFile") ? "privateKeyPEMFile" : "certificatePEMFile"
            let present = section.has("certificatePEMFile") ? "certificatePEMFile" : "privateKeyPEMFile"
            section.error(missing, "is required with \(present) (mutual TLS needs the certificate and its key)")
        }
        if let certificateFile,
            let chain = Self.certificates(certificateFile, key: "certificatePEMFile", section: section, files: files)
        {
            tls.certificatePEMFile = certificateFile
            tls.certificateChain = chain
        }
        if let keyFile {
            if let problem = files.unreadable(keyFile) {
                section.error("privateKeyPEMFile", problem)
            } else if let key = try? NIOSSLPrivateKey(file: keyFile, format: .pem) {
                tls.privateKeyPEMFile = keyFile
                tls.privateKey = key
            } else {
                section.error(
                    "privateKeyPEMFile", "\(keyFile) is not a PEM private key (an encrypted key is not supported)")
            }
        }
        if let key = tls.privateKey, !tls.certificateChain.isEmpty,
            !Self.keyMatches(key, certificates: tls.certificateChain)
        {
            section.error(
                "privateKeyPEMFile", "\(keyFile ?? "") does not match the certificate in \(certificateFile ?? "")")
        }
        return tls
    }

    /// The PEM certificates in `file`, or nil after recording why there are none.
    private static func certificates(
        _ file: String, key: String, section: ConfigReader, files: FileResolver
    ) -> [NIOSSLCertificate]? {
        if let problem = files.unreadable(file) {
            section.error(key, problem)
            return nil
        }
        guard let certificates = try? NIOSSLCertificate.fromPEMFile(file), !certificates.isEmpty else {
            section.error(key, "\(file) holds no PEM certificate")
            return nil
        }
        return certificates
    }

    /// BoringSSL refuses a private key that does not belong to the leaf certificate already
    /// set (`SSL_CTX_use_PrivateKey`): building a client context tells.
    static func keyMatches(_ key: NIOSSLPrivateKey, certificates: [NIOSSLCertificate]) -> Bool {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateChain = certificates.map { .certificate($0) }
        configuration.privateKey = .privateKey(key)
        return (try? NIOSSLContext(configuration: configuration)) != nil
    }

    static func isIPLiteral(_ host: String) -> Bool {
        host.contains(":") || (!host.isEmpty && host.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") })
    }
}
