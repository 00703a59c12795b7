import Foundation
import NIOSSL
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `backends.<name>.tls` (docs/forwarding.md): every file checked by `check`, each error with its
/// JSON path.
@Suite("ConfigurationLoader: backend TLS")
struct ConfigurationLoaderBackendTLSTests {
    static func document(urls: [String] = ["https://127.0.0.1:9443"], tls: String) -> String {
        """
        {
          "listener": { "port": 8080 },
          "backends": { "api": { "urls": [\(urls.map { "\"\($0)\"" }.joined(separator: ", "))], "tls": \(tls) } },
          "routes": [ { "name": "all", "pathPrefix": "/", "backend": "api", "auth": "none" } ]
        }
        """
    }

    static func load(
        urls: [String] = ["https://127.0.0.1:9443"], tls: String, baseDirectory: String
    ) -> Result<GatewayConfiguration, ConfigurationError> {
        do throws(ConfigurationError) {
            return .success(
                try ConfigurationLoader(environment: [:]).load(
                    text: Self.document(urls: urls, tls: tls), baseDirectory: baseDirectory))
        } catch {
            return .failure(error)
        }
    }

    static func issues(urls: [String] = ["https://127.0.0.1:9443"], tls: String, baseDirectory: String) -> [String] {
        guard case .failure(let error) = Self.load(urls: urls, tls: tls, baseDirectory: baseDirectory) else {
            return []
        }
        return error.issues.map(\.description)
    }

    @Test func aCompleteSectionIsReadWithItsFilesParsed() async throws {
        let pki = try await TestPKI.shared()
        let tls =
            #"{"caCertificatePEMFile": "ca.pem", "serverName": "backend.test", "certificatePEMFile": "client.pem", "privateKeyPEMFile": "client.key"}"#
        guard case .success(let configuration) = Self.load(tls: tls, baseDirectory: pki.directory) else {
            Issue.record("\(Self.issues(tls: tls, baseDirectory: pki.directory))")
            return
        }
        let backend = try #require(configuration.backend(named: "api")?.tls)
        #expect(backend.caCertificatePEMFile == pki.caCertificate)
        #expect(backend.serverName == "backend.test")
        #expect(backend.caCertificates.count == 1)
        #expect(backend.certificateChain.count == 1)
        #expect(backend.isMutual)
        #expect(backend.insecureSkipVerify == false)
        // The same files read twice are equal (an unchanged backend keeps its pool on reload)...
        guard case .success(let again) = Self.load(tls: tls, baseDirectory: pki.directory) else { return }
        #expect(again.backend(named: "api") == configuration.backend(named: "api"))
        // ...and other contents under the keys make the backend count as changed.
        guard
            case .success(let other) = Self.load(
                tls: #"{"caCertificatePEMFile": "other-ca.pem"}"#, baseDirectory: pki.directory)
        else { return }
        #expect(other.backend(named: "api") != configuration.backend(named: "api"))
    }

    @Test func unreadableAndUnparseableFilesAreErrorsWithTheirPaths() async throws {
        let pki = try await TestPKI.shared()
        let base = pki.directory
        try "not a certificate".write(toFile: "\(base)/garbage.pem", atomically: true, encoding: .utf8)
        #expect(
            Self.issues(tls: #"{"caCertificatePEMFile": "missing.pem"}"#, baseDirectory: base) == [
                "backends.api.tls.caCertificatePEMFile: cannot read \(base)/missing.pem: no such file"
            ])
        #expect(
            Self.issues(tls: #"{"caCertificatePEMFile": "garbage.pem"}"#, baseDirectory: base) == [
                "backends.api.tls.caCertificatePEMFile: \(base)/garbage.pem holds no PEM certificate"
            ])
        #expect(
            Self.issues(
                tls: #"{"certificatePEMFile": "garbage.pem", "privateKeyPEMFile": "client.key"}"#, baseDirectory: base)
                == [
                    "backends.api.tls.certificatePEMFile: \(base)/garbage.pem holds no PEM certificate"
                ])
        #expect(
            Self.issues(
                tls: #"{"certificatePEMFile": "client.pem", "privateKeyPEMFile": "client.pem"}"#, baseDirectory: base)
                == [
                    "backends.api.tls.privateKeyPEMFile: \(base)/client.pem is not a PEM private key (an encrypted key is not supported)"
                ])
        #expect(
            Self.issues(
                tls: #"{"certificatePEMFile": "client.pem", "privateKeyPEMFile": "nowhere.key"}"#, baseDirectory: base)
                == [
                    "backends.api.tls.privateKeyPEMFile: cannot read \(base)/nowhere.key: no such file"
                ])
    }

    @Test func aKeyThatDoesNotMatchTheCertificateIsAnError() async throws {
        let pki = try await TestPKI.shared()
        #expect(
            Self.issues(
                tls: #"{"certificatePEMFile": "client.pem", "privateKeyPEMFile": "stray.key"}"#,
                baseDirectory: pki.directory) == [
                    "backends.api.tls.privateKeyPEMFile: \(pki.strayKey) does not match the certificate in \(pki.clientCertificate)"
                ])
        #expect(
            Self.issues(
                tls: #"{"certificatePEMFile": "client.pem", "privateKeyPEMFile": "server.key"}"#,
                baseDirectory: pki.directory) == [
                    "backends.api.tls.privateKeyPEMFile: \(pki.serverKey) does not match the certificate in \(pki.clientCertificate)"
                ])
    }

    @Test func aCertificateWithoutItsKeyOrAKeyWithoutItsCertificateIsAnError() async throws {
        let pki = try await TestPKI.shared()
        #expect(
            Self.issues(tls: #"{"certificatePEMFile": "client.pem"}"#, baseDirectory: pki.directory) == [
                "backends.api.tls.privateKeyPEMFile: is required with certificatePEMFile (mutual TLS needs the certificate and its key)"
            ])
        #expect(
            Self.issues(tls: #"{"privateKeyPEMFile": "client.key"}"#, baseDirectory: pki.directory) == [
                "backends.api.tls.certificatePEMFile: is required with privateKeyPEMFile (mutual TLS needs the certificate and its key)"
            ])
    }

    @Test func tlsOnABackendWithOnlyHTTPURLsIsAnError() {
        #expect(
            Self.issues(
                urls: ["http://127.0.0.1:1", "http://127.0.0.1:2"], tls: #"{"serverName": "api.internal"}"#,
                baseDirectory: "/") == [
                    "backends.api.tls: applies to https URLs only, and every URL of this backend is http"
                ])
        // One https URL is enough.
        #expect(
            Self.issues(
                urls: ["http://127.0.0.1:1", "https://127.0.0.1:2"], tls: #"{"serverName": "api.internal"}"#,
                baseDirectory: "/") == [])
    }

    @Test func badServerNamesAndUnknownKeysAreErrors() {
        #expect(
            Self.issues(tls: #"{"serverName": "10.0.0.1"}"#, baseDirectory: "/") == [
                "backends.api.tls.serverName: \"10.0.0.1\" is an IP address: SNI and certificate names need a DNS name (leave serverName out to check the URL's IP)"
            ])
        #expect(
            Self.issues(tls: #"{"serverName": "a b"}"#, baseDirectory: "/") == [
                "backends.api.tls.serverName: \"a b\" is not a DNS name"
            ])
        #expect(
            Self.issues(tls: #"{"insecureSkipVerify": "yes"}"#, baseDirectory: "/") == [
                "backends.api.tls.insecureSkipVerify: expected true or false, found string"
            ])
        #expect(Self.issues(tls: #"{"caFile": "x"}"#, baseDirectory: "/") == ["backends.api.tls.caFile: unknown key"])
    }
}
