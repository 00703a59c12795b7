import Foundation
import NIOSSL

/// A throwaway PKI made with the `openssl` CLI once per test run (an implementation
/// independent of the gateway's): a backend CA and an unrelated CA, a server certificate the
/// backend CA signs for `localhost`, `backend.test`, `*.wild.test` and 127.0.0.1, a client certificate it
/// signs (CN `auth-gateway test client`), and a key that matches neither certificate.
package final class TestPKI: Sendable {
    package let directory: String

    package var caCertificate: String { "\(self.directory)/ca.pem" }
    package var otherCACertificate: String { "\(self.directory)/other-ca.pem" }
    package var serverCertificate: String { "\(self.directory)/server.pem" }
    package var serverKey: String { "\(self.directory)/server.key" }
    package var clientCertificate: String { "\(self.directory)/client.pem" }
    package var clientKey: String { "\(self.directory)/client.key" }
    package var strayKey: String { "\(self.directory)/stray.key" }
    package static let clientCommonName = "auth-gateway test client"

    private init(directory: String) { self.directory = directory }

    package static func shared() async throws -> TestPKI {
        try await Self.made.value
    }

    private static let made = Task<TestPKI, Error> {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "auth-gateway-pki-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let openssl = try ExternalTool.require("openssl", package: "openssl")
        func ssl(_ arguments: [String]) async throws {
            let child = try ChildProcess([openssl] + arguments)
            // Bounded: openssl takes milliseconds; a hung one is killed after 20 s (and fails).
            try await child.exited(timeout: .seconds(20))
            guard child.terminationStatus == 0 else {
                throw ProcessHarnessError(
                    description: "openssl \(arguments.joined(separator: " ")) failed: \(child.standardError)")
            }
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        for ca in ["ca", "other-ca"] {
            try await ssl(
                ["req", "-x509"] + ec + [
                    "-days", "2", "-subj", "/CN=auth-gateway test \(ca)", "-keyout", "\(directory)/\(ca).key", "-out",
                    "\(directory)/\(ca).pem",
                ])
        }
        let leaves = [
            (
                "server", "/CN=localhost",
                "subjectAltName=DNS:localhost,DNS:backend.test,DNS:*.wild.test,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
            ),
            ("client", "/CN=\(TestPKI.clientCommonName)", "extendedKeyUsage=clientAuth\n"),
        ]
        for (name, subject, extensions) in leaves {
            try await ssl(
                ["req"] + ec + [
                    "-subj", subject, "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).csr",
                ])
            try extensions.write(toFile: "\(directory)/\(name).ext", atomically: true, encoding: .utf8)
            try await ssl([
                "x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", "\(directory)/ca.pem", "-CAkey",
                "\(directory)/ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "\(directory)/\(name).ext", "-out",
                "\(directory)/\(name).pem",
            ])
        }
        try await ssl([
            "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(directory)/stray.key",
        ])
        return TestPKI(directory: directory)
    }

    /// A backend's server TLS: this PKI's server certificate; with `clientCA`, a client
    /// certificate signed by it is required (mutual TLS).
    package func serverContext(requireClientCertificate: Bool = false, alpn: [String] = []) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(self.serverCertificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: self.serverKey, format: .pem))
        )
        configuration.applicationProtocols = alpn
        if requireClientCertificate {
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(self.caCertificate))
        }
        return try NIOSSLContext(configuration: configuration)
    }
}
