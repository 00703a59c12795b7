import Foundation
import NIOCore
import NIOHPACK
import NIOSSL
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Backends spoken to over HTTP/2 (`protocol: "h2c"` and `"h2"`, docs/http2.md): streams
/// multiplexed over pooled connections, reached by HTTP/1.1 and HTTP/2 clients alike.
@Suite("HTTP/2 backends (real sockets)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct HTTP2BackendTests {
    static func gateway(
        backend: EchoBackend, protocolName: String = "h2c", url: String? = nil,
        configure: (inout JSONObject) -> Void = { _ in }
    ) async throws -> GatewayFixture {
        try await GatewayFixture.start(backend: backend) { config in
            config["backends"] = [
                "api": ["urls": [.string(url ?? backend.baseURL)], "protocol": .string(protocolName)]
            ]
            configure(&config)
        }
    }

    @Test func anHTTP11ClientReachesAnH2cBackend() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared, http2: true)
        let gateway = try await Self.gateway(backend: backend)
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        for index in 0..<5 {
            let response = try await client.send(
                TestRequest(
                    .POST, "/h2c/\(index)?q=1", headers: [("Authorization", "Bearer \(TestKeys.token())")],
                    body: "payload-\(index)"))
            #expect(response.status == 200)
            #expect(response.json?["uri"]?.stringValue == "/h2c/\(index)?q=1")
            #expect(response.json?["body"]?["bytes"]?.numberValue?.exactInt == "payload-\(index)".utf8.count)
            #expect(response.echoedHeader("x-request-id").count == 1)
            #expect(response.header("x-echo-backend") == "1")
        }
        // One HTTP/2 connection carried every request.
        #expect(backend.connectionCount == 1)
        #expect(backend.requestCount == 5)
        await client.close()
    }

    @Test func concurrentStreamsShareOneUpstreamConnection() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared, http2: true)
        // The wait for a free stream slot is bounded by connectTimeoutMilliseconds (1 s by
        // default): on a loaded machine a slot freed late (a stream's close trails its
        // response) turned a few of the 500 into 503 `upstream.busy`. Generous here; the
        // bound itself is tested by the pool's own tests.
        let gateway = try await Self.gateway(backend: backend) { config in
            config.set("backends.api.connectTimeoutMilliseconds", 15_000)
        }
        atTestEnd { await gateway.stop() }
        let h2load = try ExternalTool.require("h2load", package: "nghttp2-client")
        let load = try await ExternalTool.run(
            h2load,
            [
                "-n", "500", "-c", "2", "-m", "40", "-H", "authorization: Bearer \(TestKeys.token())",
                "http://127.0.0.1:\(gateway.port)/multiplexed",
            ])
        #expect(load.stdout.contains("500 succeeded, 0 failed, 0 errored"), "\(load.stdout)")
        #expect(load.stdout.contains("status codes: 500 2xx"), "\(load.stdout)")
        // 80 concurrent requests fit in one connection's 100 streams (one event loop); a
        // second connection may open while the first one's finished streams are still closing
        // (their slots are freed on close), never one per request.
        #expect((1...2).contains(backend.connectionCount), "\(backend.connectionCount) connections")
    }

    @Test func anH2BackendOverTLSIsReachedByALPN() async throws {
        var serverTLS = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(TLSTests.certificatePath).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: TLSTests.keyPath, format: .pem))
        )
        serverTLS.applicationProtocols = ["h2"]
        let backend = try await EchoBackend.start(
            group: TestGroup.shared, http2: true, tls: try NIOSSLContext(configuration: serverTLS))
        let gateway = try await Self.gateway(
            backend: backend, protocolName: "h2", url: "https://localhost:\(backend.port)"
        ) { config in
            // The backend's certificate is trusted through its own CA file (docs/forwarding.md).
            config["backends"] = [
                "api": [
                    "urls": [.string("https://localhost:\(backend.port)")], "protocol": "h2",
                    "tls": ["caCertificatePEMFile": .string(TLSTests.certificatePath)],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        let result = try await HTTP2ClientTests.curl([
            "--http2-prior-knowledge", "--include", "-H", "Authorization: Bearer \(TestKeys.token())",
            "http://127.0.0.1:\(gateway.port)/tls-h2",
        ])
        let response = HTTP2ClientTests.parse(result.stdout)
        #expect(response.status == 200, "\(result.stdout) \(result.stderr)")
        #expect(try JSONValue(parsing: response.body)["uri"]?.stringValue == "/tls-h2")
        #expect(backend.requestCount == 1)
    }

    /// docs/http2.md: trailers pass through between HTTP/2 peers — an HTTP/2 client's request
    /// trailers reach an h2c backend; an HTTP/1.1 backend gets the body without them.
    @Test(arguments: [true, false])
    func requestTrailersReachAnHTTP2Backend(http2Backend: Bool) async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared, http2: http2Backend)
        let gateway = try await Self.gateway(backend: backend, protocolName: http2Backend ? "h2c" : "http1")
        atTestEnd { await gateway.stop() }
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        let result = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(
                        "POST", path: "/with-trailers", fields: [("authorization", "Bearer \(TestKeys.token())")]),
                    endStream: false)),
            .data(.init(data: .byteBuffer(ByteBuffer(string: "body")), endStream: false)),
            .headers(.init(headers: HPACKHeaders([("x-checksum", "c0ffee")]), endStream: true)),
        ])
        #expect(result.status == 200)
        let echoed = try JSONValue(parsing: String(buffer: result.body))
        #expect(echoed["body"]?["bytes"]?.numberValue?.exactInt == 4)
        #expect(echoed["trailers"]?["x-checksum"]?.stringValue == (http2Backend ? "c0ffee" : nil))
    }

    /// The h2c backend's port refuses connections (502), then an h2c backend comes up on that
    /// very port: the next request, on the same client connection, reaches it (the failed
    /// connect left nothing stuck in the HTTP/2 pool).
    @Test func aDeadH2BackendIs502AndTheNextRequestStillWorks() async throws {
        // Reserved (bound, not listening) for the test: no other test can take the port.
        let refusing = try RefusingPort(shareable: true)
        defer { refusing.close() }
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = ["api": ["urls": [.string(refusing.url)], "protocol": "h2c"]]
        }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        let client = try await gateway.connect()
        atTestEnd { await client.close() }
        let response = try await client.send(.get("/down", token: token))
        #expect(response.status == 502)
        #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:upstream.unreachable")

        // The backend comes up on the same port (bound beside the refusing socket, which then
        // goes: the port is never free in between).
        let backend = try await EchoBackend.start(group: TestGroup.shared, port: refusing.port, http2: true)
        atTestEnd { await backend.close() }
        refusing.close()
        let next = try await client.send(.get("/up", token: token))
        #expect(next.status == 200, "\(next.text)")
        #expect(next.json?["uri"]?.stringValue == "/up")
        #expect(backend.requestCount == 1)
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func checkRefusesAProtocolThatDoesNotFitTheURLScheme() throws {
        let text = """
            {"listener":{},"backends":{"a":{"urls":["http://127.0.0.1:1"],"protocol":"h2"},"b":{"urls":["https://x:1"],"protocol":"h2c"},
             "c":{"urls":["http://127.0.0.1:1"],"protocol":"spdy"}},
             "routes":[{"name":"r","pathPrefix":"/","backend":"a","auth":"none"}]}
            """
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
        }
        do {
            _ = try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
        } catch {
            let messages = error.issues.map { "\($0.path): \($0.message)" }
            #expect(messages.contains { $0.hasPrefix("backends.a.urls[0]") && $0.contains("needs an https URL") })
            #expect(messages.contains { $0.hasPrefix("backends.b.urls[0]") && $0.contains("needs an http URL") })
            #expect(messages.contains { $0.hasPrefix("backends.c.protocol") })
        }
    }
}
