import Foundation
import NIOCore
import NIOSSL
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// TLS and mutual TLS to backends (docs/forwarding.md), over real sockets, with a throwaway PKI
/// made by `openssl` (`TestPKI`).
@Suite("Backend TLS (real sockets)", .awaitsCleanups)
struct BackendTLSTests {
    /// A gateway whose backend `api` is `url` (default `https://localhost:<port>`) with `tls`.
    static func gateway(
        backend: EchoBackend, url: String? = nil, protocolName: String = "http1", tls: JSONObject?,
        configure: (inout JSONObject) -> Void = { _ in }
    ) async throws -> GatewayFixture {
        try await GatewayFixture.start(backend: backend) { config in
            var entry: JSONObject = [
                "urls": [.string(url ?? "https://localhost:\(backend.port)")], "protocol": .string(protocolName),
            ]
            if let tls { entry["tls"] = .object(tls) }
            config["backends"] = ["api": .object(entry)]
            configure(&config)
        }
    }

    static func get(_ gateway: GatewayFixture, _ path: String) async throws -> TestResponse {
        try await gateway.send(.get(path, token: TestKeys.token()))
    }

    @Test func aBackendWithItsOwnCAIsVerifiedAgainstThatCAOnly() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(group: TestGroup.shared, tls: try pki.serverContext())
        atTestEnd { await backend.close() }

        let trusting = try await Self.gateway(
            backend: backend, tls: ["caCertificatePEMFile": .string(pki.caCertificate)])
        atTestEnd { await trusting.stop() }
        let ok = try await Self.get(trusting, "/with-ca")
        #expect(ok.status == 200)
        #expect(ok.json?["uri"]?.stringValue == "/with-ca")

        // The system trust store does not know the throwaway CA.
        let untrusting = try await Self.gateway(backend: backend, tls: nil)
        atTestEnd { await untrusting.stop() }
        let refused = try await Self.get(untrusting, "/without-ca")
        #expect(refused.status == 502)
        #expect(refused.json?["type"]?.stringValue == "urn:auth-gateway:problem:upstream.unreachable")

        // Another CA's file replaces the system store: still not trusted.
        let wrongCA = try await Self.gateway(
            backend: backend, tls: ["caCertificatePEMFile": .string(pki.otherCACertificate)])
        atTestEnd { await wrongCA.stop() }
        #expect(try await Self.get(wrongCA, "/other-ca").status == 502)
        #expect(backend.requestCount == 1)
    }

    @Test func serverNameIsWhatTheCertificateIsCheckedAgainst() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(group: TestGroup.shared, tls: try pki.serverContext())
        atTestEnd { await backend.close() }
        let byIP = "https://127.0.0.1:\(backend.port)"
        let right = try await Self.gateway(
            backend: backend, url: byIP,
            tls: ["caCertificatePEMFile": .string(pki.caCertificate), "serverName": "backend.test"])
        atTestEnd { await right.stop() }
        #expect(try await Self.get(right, "/right-name").status == 200)

        let wrong = try await Self.gateway(
            backend: backend, url: byIP,
            tls: ["caCertificatePEMFile": .string(pki.caCertificate), "serverName": "billing.test"])
        atTestEnd { await wrong.stop() }
        let refused = try await Self.get(wrong, "/wrong-name")
        #expect(refused.status == 502)
        #expect(backend.requestCount == 1)
    }

    /// The trust leak docs/forwarding.md forbids: `authService.caCertificatePEMFile` is the auth
    /// service's trust, not a backend's.
    @Test func theAuthServicesCAIsNotTrustedForBackends() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(group: TestGroup.shared, tls: try pki.serverContext())
        atTestEnd { await backend.close() }
        let gateway = try await Self.gateway(backend: backend, tls: nil) { config in
            config["authService"] = ["url": "https://127.0.0.1:1", "caCertificatePEMFile": .string(pki.caCertificate)]
        }
        atTestEnd { await gateway.stop() }
        #expect(try await Self.get(gateway, "/leak").status == 502)
        #expect(backend.requestCount == 0)
    }

    @Test func insecureSkipVerifyTrustsAnything() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(group: TestGroup.shared, tls: try pki.serverContext())
        atTestEnd { await backend.close() }
        let gateway = try await Self.gateway(
            backend: backend, tls: ["insecureSkipVerify": true, "serverName": "billing.test"])
        atTestEnd { await gateway.stop() }
        #expect(try await Self.get(gateway, "/insecure").status == 200)
    }

    @Test func mutualTLSPresentsTheConfiguredClientCertificate() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(
            group: TestGroup.shared, tls: try pki.serverContext(requireClientCertificate: true))
        atTestEnd { await backend.close() }
        let mutual = try await Self.gateway(
            backend: backend,
            tls: [
                "caCertificatePEMFile": .string(pki.caCertificate),
                "certificatePEMFile": .string(pki.clientCertificate), "privateKeyPEMFile": .string(pki.clientKey),
            ])
        atTestEnd { await mutual.stop() }
        let ok = try await Self.get(mutual, "/mutual")
        #expect(ok.status == 200)
        #expect(
            ok.json?["tlsPeerCertificate"]?.stringValue?.contains("common_name=\(TestPKI.clientCommonName)") == true,
            "\(ok.text)")

        // Without a client certificate the backend refuses the connection.
        let anonymous = try await Self.gateway(
            backend: backend, tls: ["caCertificatePEMFile": .string(pki.caCertificate)])
        atTestEnd { await anonymous.stop() }
        #expect(try await Self.get(anonymous, "/anonymous").status == 502)
        #expect(backend.requestCount == 1)
    }

    @Test func anH2BackendOverMutualTLSSeesTheClientCertificate() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(
            group: TestGroup.shared, http2: true,
            tls: try pki.serverContext(requireClientCertificate: true, alpn: ["h2"])
        )
        atTestEnd { await backend.close() }
        let mutual = try await Self.gateway(
            backend: backend, protocolName: "h2",
            tls: [
                "caCertificatePEMFile": .string(pki.caCertificate),
                "certificatePEMFile": .string(pki.clientCertificate), "privateKeyPEMFile": .string(pki.clientKey),
            ])
        atTestEnd { await mutual.stop() }
        for index in 0..<3 {
            let ok = try await Self.get(mutual, "/h2-mutual/\(index)")
            #expect(ok.status == 200)
            #expect(
                ok.json?["tlsPeerCertificate"]?.stringValue?.contains("common_name=\(TestPKI.clientCommonName)")
                    == true, "\(ok.text)")
        }
        #expect(backend.connectionCount == 1)

        let untrusting = try await Self.gateway(
            backend: backend, protocolName: "h2",
            tls: [
                "certificatePEMFile": .string(pki.clientCertificate), "privateKeyPEMFile": .string(pki.clientKey),
            ])
        atTestEnd { await untrusting.stop() }
        #expect(try await Self.get(untrusting, "/h2-untrusted").status == 502)
        let anonymous = try await Self.gateway(
            backend: backend, protocolName: "h2", tls: ["caCertificatePEMFile": .string(pki.caCertificate)])
        atTestEnd { await anonymous.stop() }
        #expect(try await Self.get(anonymous, "/h2-anonymous").status == 502)
        #expect(backend.requestCount == 3)
    }

    /// SIGHUP: a backend whose `tls` changed gets a new pool; new connections use the new
    /// settings.
    @Test func aReloadAppliesNewTLSSettingsToNewConnections() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(
            group: TestGroup.shared, tls: try pki.serverContext(requireClientCertificate: true))
        atTestEnd { await backend.close() }
        let gateway = try await Self.gateway(
            backend: backend, tls: ["caCertificatePEMFile": .string(pki.caCertificate)])
        atTestEnd { await gateway.stop() }
        #expect(try await Self.get(gateway, "/before").status == 502)
        try gateway.reload { config in
            config["backends"] = [
                "api": [
                    "urls": [.string("https://localhost:\(backend.port)")],
                    "tls": [
                        "caCertificatePEMFile": .string(pki.caCertificate),
                        "certificatePEMFile": .string(pki.clientCertificate),
                        "privateKeyPEMFile": .string(pki.clientKey),
                    ],
                ]
            ]
        }
        #expect(await eventually { (try? await Self.get(gateway, "/after").status) == 200 })
        let after = try await Self.get(gateway, "/after")
        #expect(
            after.json?["tlsPeerCertificate"]?.stringValue?.contains("common_name=\(TestPKI.clientCommonName)") == true)
    }

    /// SIGHUP rereads the files: a CA file rewritten under the same name makes the backend
    /// count as changed, and new connections trust the new CA.
    @Test func aReloadRereadsACertificateFileRewrittenUnderTheSameName() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(group: TestGroup.shared, tls: try pki.serverContext())
        atTestEnd { await backend.close() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rotating-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appendingPathComponent("backend-ca.pem")
        try FileManager.default.copyItem(atPath: pki.otherCACertificate, toPath: caFile.path)
        let gateway = try await Self.gateway(backend: backend, tls: ["caCertificatePEMFile": .string(caFile.path)])
        atTestEnd { await gateway.stop() }
        #expect(try await Self.get(gateway, "/old-ca").status == 502)
        try FileManager.default.removeItem(at: caFile)
        try FileManager.default.copyItem(atPath: pki.caCertificate, toPath: caFile.path)
        try gateway.reload { _ in }
        #expect(await eventually { (try? await Self.get(gateway, "/new-ca").status) == 200 })
    }
}
