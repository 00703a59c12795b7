import NIOSSL

/// How the gateway speaks TLS to one upstream: the context (trust anchors, client certificate,
/// ALPN) and the name sent as SNI and checked against the certificate.
package struct UpstreamTLS: Sendable {
    package let context: NIOSSLContext
    /// nil: the URL's host (sent as SNI only when it is a name; an IP address is then checked
    /// against the certificate's IP entries).
    package let serverName: String?
    /// The context verifies the chain only; the certificate's names are checked against
    /// `serverName` here (`matches`). NIOSSL's own check also accepts a certificate whose IP
    /// entry matches the peer's address, whatever name is expected: with a configured
    /// `serverName` that would let the name go unchecked.
    let checksServerName: Bool

    package init(context: NIOSSLContext, serverName: String?) {
        self.init(context: context, serverName: serverName, checksServerName: false)
    }

    init(context: NIOSSLContext, serverName: String?, checksServerName: Bool) {
        self.context = context
        self.serverName = serverName
        self.checksServerName = checksServerName
    }

    /// The TLS handler for a connection to `target`.
    func makeHandler(for target: UpstreamURL) throws -> NIOSSLClientHandler {
        guard self.checksServerName, let serverName = self.serverName else {
            return try NIOSSLClientHandler(context: self.context, serverHostname: self.serverHostname(for: target))
        }
        return try NIOSSLClientHandler._makeSSLClientHandler(context: self.context, serverHostname: serverName) {
            certificate, channel in
            if Self.certificate(certificate, matches: serverName) { return channel.eventLoop.makeSucceededVoidFuture() }
            return channel.eventLoop.makeFailedFuture(ServerNameMismatch(expected: serverName))
        }
    }

    /// RFC 6125 §6.4: a DNS entry of the certificate's subject alternative names equals `name`
    /// (case-insensitively), or is a wildcard `*.rest` where `name` is one label more than `rest`.
    static func certificate(_ certificate: NIOSSLCertificate, matches name: String) -> Bool {
        let wanted = name.lowercased().hasSuffix(".") ? String(name.lowercased().dropLast()) : name.lowercased()
        for entry in certificate._subjectAlternativeNames() where entry.nameType == .dnsName {
            var dnsName = String(decoding: entry.contents, as: UTF8.self).lowercased()
            if dnsName.hasSuffix(".") { dnsName.removeLast() }
            if dnsName == wanted { return true }
            if dnsName.hasPrefix("*."), let dot = wanted.firstIndex(of: "."), wanted[dot...] == dnsName.dropFirst(),
                wanted[..<dot].count > 0
            {
                return true
            }
        }
        return false
    }

    /// The name for `NIOSSLClientHandler` (SNI and the hostname check): RFC 6066 forbids IP
    /// literals in SNI, and NIOSSL checks an IP host against the peer's address instead.
    package func serverHostname(for target: UpstreamURL) -> String? {
        if let serverName = self.serverName { return serverName }
        return ConfigurationLoader.isIPLiteral(target.host) ? nil : target.host
    }

    /// The TLS of a backend with an `https` URL (docs/forwarding.md): its own CA file or else the
    /// system trust store only (never the auth service's CA), its client certificate, ALPN
    /// `h2` for `protocol: "h2"`; nil for a backend without `https` URLs.
    static func backend(_ backend: BackendConfiguration) throws -> UpstreamTLS? {
        guard backend.urls.contains(where: \.isTLS) else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.applicationProtocols = backend.wireProtocol == .h2 ? ["h2"] : []
        let tls = backend.tls ?? BackendTLSConfiguration()
        if !tls.caCertificates.isEmpty {
            configuration.trustRoots = .certificates(tls.caCertificates)
        }
        if let key = tls.privateKey, !tls.certificateChain.isEmpty {
            configuration.certificateChain = tls.certificateChain.map { .certificate($0) }
            configuration.privateKey = .privateKey(key)
        }
        let checksServerName = tls.serverName != nil && !tls.insecureSkipVerify
        if tls.insecureSkipVerify {
            configuration.certificateVerification = .none
        } else if checksServerName {
            configuration.certificateVerification = .noHostnameVerification
        }
        return UpstreamTLS(
            context: try NIOSSLContext(configuration: configuration), serverName: tls.serverName,
            checksServerName: checksServerName)
    }

    /// Every backend's TLS, in the order of `configuration.backends` (built once per
    /// configuration, shared by all event loops).
    static func backends(_ configuration: GatewayConfiguration) throws -> [UpstreamTLS?] {
        try configuration.backends.map(Self.backend)
    }
}

/// The backend's certificate does not name the configured `tls.serverName`.
struct ServerNameMismatch: Error, CustomStringConvertible {
    let expected: String
    var description: String { "the backend's certificate is not valid for \(self.expected) (tls.serverName)" }
}
