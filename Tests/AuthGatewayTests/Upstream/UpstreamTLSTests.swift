import NIOSSL
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `UpstreamTLS`: the name check behind `tls.serverName` (RFC 6125 §6.4 on the certificate's
/// DNS names), and the names a connection sends.
@Suite("UpstreamTLS")
struct UpstreamTLSTests {
    @Test func aConfiguredServerNameMustBeOneOfTheCertificatesDNSNames() async throws {
        let pki = try await TestPKI.shared()
        let certificate = try #require(try NIOSSLCertificate.fromPEMFile(pki.serverCertificate).first)
        for name in ["backend.test", "BACKEND.test", "backend.test.", "localhost", "a.wild.test"] {
            #expect(UpstreamTLS.certificate(certificate, matches: name), "\(name)")
        }
        // Not a listed name; a wildcard covers exactly one label; an IP entry is no DNS name.
        for name in ["billing.test", "sub.backend.test", "wild.test", "a.b.wild.test", "127.0.0.1", "test"] {
            #expect(!UpstreamTLS.certificate(certificate, matches: name), "\(name)")
        }
    }

    @Test func sniIsTheServerNameOrTheURLsHostUnlessItIsAnIPAddress() throws {
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        let named = UpstreamURL(scheme: .https, host: "api.internal", port: 443, pathAndQuery: "")
        let ip = UpstreamURL(scheme: .https, host: "10.1.2.3", port: 443, pathAndQuery: "")
        let ipv6 = UpstreamURL(scheme: .https, host: "::1", port: 443, pathAndQuery: "")
        let plain = UpstreamTLS(context: context, serverName: nil)
        #expect(plain.serverHostname(for: named) == "api.internal")
        #expect(plain.serverHostname(for: ip) == nil)
        #expect(plain.serverHostname(for: ipv6) == nil)
        let configured = UpstreamTLS(context: context, serverName: "billing.internal")
        #expect(configured.serverHostname(for: ip) == "billing.internal")
    }
}
