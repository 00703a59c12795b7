import Foundation
import NIOCore
import NIOSSL
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// TLS on the listener, and HTTPS to the auth service with a configured CA file.
@Suite("TLS (real sockets)", .awaitsCleanups)
struct TLSTests {
    /// The example certificate (CN/SAN localhost, 127.0.0.1) shipped with config/examples.
    static let certificatePath = ProcessTests.packageRoot.appendingPathComponent("config/examples/tls/example-cert.pem")
        .path
    static let keyPath = ProcessTests.packageRoot.appendingPathComponent("config/examples/tls/example-key.pem").path

    static func clientContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file(Self.certificatePath)
        return try NIOSSLContext(configuration: configuration)
    }

    static func serverContext() throws -> NIOSSLContext {
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(Self.certificatePath).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: Self.keyPath, format: .pem))
        )
        return try NIOSSLContext(configuration: configuration)
    }

    @Test func tlsListenerSetsForwardedProtoAndSecureCookies() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        let gateway = try await GatewayFixture.start { config in
            config["listener"] = [
                "host": "127.0.0.1", "port": 0,
                "tls": [
                    "certificatePEMFile": .string(Self.certificatePath), "privateKeyPEMFile": .string(Self.keyPath),
                ],
            ]
            // Generous: the refresh runs over TLS on a loaded machine.
            config["authService"] = [
                "url": .string(rainmaker.service.baseURL), "refresh": [:], "timeoutMilliseconds": 20000,
            ]
        }
        atTestEnd { await gateway.stop() }
        let client = try await TestConnection.connect(port: gateway.port, tls: try Self.clientContext())
        let plain = try await client.send(.get("/x", token: TestKeys.token()))
        #expect(plain.status == 200)
        #expect(plain.echoedHeader("x-forwarded-proto") == ["https"])
        let refreshed = try await client.send(
            TestRequest(
                .GET, "/y",
                headers: [
                    (
                        "Cookie",
                        "access_token=\(TestKeys.token(expiresIn: -30)); refresh_token=\(rainmaker.issueRefreshToken())"
                    )
                ]))
        #expect(refreshed.status == 200)
        #expect(refreshed.headers["set-cookie"].count == 2)
        #expect(refreshed.headers["set-cookie"].allSatisfy { $0.hasSuffix("; Secure") })
        await client.close()
    }

    /// With HTTP/2 on (the default), nothing but the negotiation deadline times a TLS
    /// connection out before ALPN has chosen a protocol: a silent peer is closed after
    /// `requestHeaderSeconds`, while a real client on the same listener is served.
    ///
    /// The real client negotiates under the default 10 s and only then is the deadline
    /// reloaded to 1 s: a TLS handshake between two processes on a loaded 2-core machine may
    /// take longer than 1 s, and that client would be (rightly) cut off.
    @Test func aSilentTLSConnectionIsClosedAfterTheHeaderTimeout() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["listener"] = [
                "host": "127.0.0.1", "port": 0,
                "tls": [
                    "certificatePEMFile": .string(Self.certificatePath), "privateKeyPEMFile": .string(Self.keyPath),
                ],
            ]
        }
        atTestEnd { await gateway.stop() }
        let client = try await TestConnection.connect(port: gateway.port, tls: try Self.clientContext())
        #expect(try await client.send(.get("/x", token: TestKeys.token())).status == 200)
        try gateway.reload { config in
            config.set("timeouts.requestHeaderSeconds", 1)
            config["routes"] = [
                ["name": "reloaded", "pathPrefix": "/reloaded/", "backend": "api", "auth": "none"],
                ["name": "default", "pathPrefix": "/", "backend": "api"],
            ]
        }
        // One event loop: once a new connection is routed by the reloaded configuration, new
        // connections get the 1 s deadline. (An attempt whose handshake is cut off retries.)
        #expect(
            await eventually {
                guard let probe = try? await TestConnection.connect(port: gateway.port, tls: try Self.clientContext())
                else { return false }
                let status = try? await probe.send(.get("/reloaded/probe")).status
                await probe.close()
                return status == 200
            })
        let started = ContinuousClock.now
        let silent = try await gateway.raw()
        #expect(try await client.send(.get("/y", token: TestKeys.token())).status == 200)
        #expect(await silent.waitForClose(timeout: .seconds(30)))
        #expect(ContinuousClock.now - started >= .milliseconds(900))
        #expect(silent.received.isEmpty)
        await client.close()
    }

    @Test func httpsAuthServiceIsTrustedThroughTheConfiguredCAFile() async throws {
        let service = try await SimpleHTTPServer.start(group: TestGroup.shared, tls: try Self.serverContext()) {
            request, eventLoop in
            eventLoop.makeSucceededFuture(.json(.ok, ["user_id": "tls-user"]))
        }
        atTestEnd { await service.close() }
        func gateway(caFile: String?) async throws -> GatewayFixture {
            try await GatewayFixture.start { config in
                var authService: JSONObject = [
                    "url": .string("https://localhost:\(service.port)"), "timeoutMilliseconds": 20000,
                    "profile": ["path": "/v1/user"],
                ]
                if let caFile { authService["caCertificatePEMFile"] = .string(caFile) }
                config["authService"] = .object(authService)
                config["identityHeaders"] = ["X-User-Id": "profile.user_id"]
            }
        }
        let trusting = try await gateway(caFile: Self.certificatePath)
        atTestEnd { await trusting.stop() }
        let response = try await trusting.send(.get("/p", token: TestKeys.token()))
        #expect(response.status == 200)
        #expect(response.echoedHeader("x-user-id") == ["tls-user"])

        // Without the CA the certificate is not trusted: the auth service counts as
        // unavailable (503), never as "no profile needed".
        let untrusting = try await gateway(caFile: nil)
        atTestEnd { await untrusting.stop() }
        let refused = try await untrusting.send(.get("/p", token: TestKeys.token()))
        #expect(refused.status == 503)
        #expect(untrusting.backend.requestCount == 0)
    }
}
