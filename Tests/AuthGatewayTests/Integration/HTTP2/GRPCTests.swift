import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// gRPC through the gateway with a real gRPC implementation on both sides (Python grpcio, the
/// C core: `Fixtures/grpc/grpc_peer.py`): every call is authenticated per stream, answers the
/// gateway makes itself are Trailers-Only with the status docs/http2.md maps them to.
@Suite("gRPC (grpcio client and server, real sockets)", .serialized, .timeLimit(.minutes(5)), .awaitsCleanups)
struct GRPCTests {
    static let peer = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/grpc/grpc_peer.py"
    ).path

    static func python() throws -> String {
        let python = try ExternalTool.require("python3", package: "python3")
        guard FileManager.default.fileExists(atPath: Self.peer) else { throw ExternalTool.Missing(name: Self.peer) }
        return python
    }

    /// Runs one client scenario against the gateway; its JSON report.
    /// `method`: the path the `unary` scenario calls instead of `/test.Echo/Unary`;
    /// `metadata`: more metadata on its calls.
    static func call(
        _ gateway: GatewayFixture, _ scenario: String, token: String? = nil, refreshToken: String? = nil,
        timeout: Double = 10, method: String? = nil, metadata: [(String, String)] = []
    ) async throws -> JSONValue {
        var arguments = [Self.peer, "client", "127.0.0.1:\(gateway.port)", scenario, "--timeout", String(timeout)]
        if let token { arguments += ["--token", token] }
        if let refreshToken { arguments += ["--refresh-token", refreshToken] }
        if let method { arguments += ["--method", method] }
        if !metadata.isEmpty {
            arguments += ["--metadata", JSONValue.array(metadata.map { [.string($0.0), .string($0.1)] }).jsonText]
        }
        let result = try await ExternalTool.run(try Self.python(), arguments)
        if result.stderr.contains("No module named 'grpc'") {
            Issue.record("Python grpcio is not installed: pip install grpcio (or run .ci/run, which installs it)")
        }
        return try JSONValue(parsing: result.stdout)
    }

    /// A grpcio server for the duration of `body`, and a gateway whose backend `grpc` is it
    /// (`protocol: h2c`) and whose backend `plain` is an HTTP/1.1 echo backend.
    static func withGateway(
        configure: (inout JSONObject) -> Void = { _ in }, _ body: (GatewayFixture) async throws -> Void
    ) async throws {
        try await Self.withGatewayAndPeer(configure: configure) { gateway, _ in try await body(gateway) }
    }

    /// As `withGateway`, with the grpcio server too: its output says which endless calls it
    /// saw end (`{"ended": "Forever", "subject", "at"}` lines).
    static func withGatewayAndPeer(
        configure: (inout JSONObject) -> Void = { _ in }, _ body: (GatewayFixture, BackgroundTool) async throws -> Void
    ) async throws {
        let server = try BackgroundTool(try Self.python(), [Self.peer, "server"])
        do {
            try await Self.withGateway(server: server, configure: configure, body)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private static func withGateway(
        server: BackgroundTool, configure: (inout JSONObject) -> Void,
        _ body: (GatewayFixture, BackgroundTool) async throws -> Void
    ) async throws {
        let ready = try await server.firstLine()
        let port = try #require(
            ready.hasPrefix("READY ") ? Int(ready.dropFirst(6)) : nil, "grpc_peer.py printed \(ready)")
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = [
                "grpc": ["urls": [.string("http://127.0.0.1:\(port)")], "protocol": "h2c"],
                "plain": ["urls": [.string(config.backendURL)]],
            ]
            config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
            config["routes"] = [
                [
                    "name": "admin", "pathPrefix": "/test.Echo/Slow", "backend": "grpc",
                    "require": ["claims.roles": "admin"],
                ],
                ["name": "grpc", "pathPrefix": "/test.Echo/", "backend": "grpc"],
            ]
            configure(&config)
        }
        try await withCleanup({ await gateway.stop() }) { () async throws in
            try await body(gateway, server)
        }
    }

    @Test func theFourKindsOfCallsLargeMessagesAndManyConcurrentCalls() async throws {
        try await Self.withGateway { gateway in
            let token = TestKeys.token(subject: "grpc-user")
            let unary = try await Self.call(gateway, "unary", token: token)
            #expect(unary["code"]?.stringValue == "OK")
            #expect(unary["response"]?.stringValue == "hello")
            // The backend got the verified identity, the token, a request id.
            #expect(unary["trailing"]?["seen-x-user-subject"]?.stringValue == "grpc-user")
            #expect(unary["trailing"]?["seen-authorization"]?.stringValue == "Bearer \(token)")
            #expect(unary["trailing"]?["seen-x-request-id"]?.stringValue?.isEmpty == false)

            let serverStream = try await Self.call(gateway, "server_stream", token: token)
            #expect(
                serverStream["responses"]?.arrayValue?.compactMap(\.stringValue) == [
                    "part-0", "part-1", "part-2", "part-3", "part-4",
                ])
            let clientStream = try await Self.call(gateway, "client_stream", token: token)
            #expect(clientStream["response"]?.stringValue == "abbcccddddeeeee")
            let bidi = try await Self.call(gateway, "bidi", token: token)
            #expect(
                bidi["responses"]?.arrayValue?.compactMap(\.stringValue) == [
                    "echo:1", "echo:2", "echo:3", "echo:4", "echo:5",
                ])

            let large = try await Self.call(gateway, "large", token: token)
            #expect(large["code"]?.stringValue == "OK")
            #expect(large["sizes"]?.arrayValue?.compactMap { $0.numberValue?.exactInt } == [3 << 20, 3 << 20])
            #expect(large["equal"] == .bool(true))

            let concurrent = try await Self.call(gateway, "concurrent", token: token)
            #expect(concurrent["code"]?.stringValue == "OK")
            #expect(concurrent["ok"]?.numberValue?.exactInt == 100)
        }
    }

    @Test func refusalsAreTrailersOnlyWithTheMappedStatus() async throws {
        try await Self.withGateway { gateway in
            let missing = try await Self.call(gateway, "refused")
            #expect(missing["code"]?.stringValue == "UNAUTHENTICATED")
            #expect(missing["details"]?.stringValue == "An access token is required")
            #expect(missing["trailing"]?["www-authenticate"]?.stringValue == "Bearer realm=\"auth-gateway\"")

            let forged = try await Self.call(gateway, "refused", token: TestKeys.token(signer: TestKeys.otherRSA))
            #expect(forged["code"]?.stringValue == "UNAUTHENTICATED")
            #expect(forged["trailing"]?["www-authenticate"]?.stringValue?.contains("error=\"invalid_token\"") == true)

            // The route of Slow requires claims.roles == admin.
            let denied = try await Self.call(gateway, "slow", token: TestKeys.token(extra: ["roles": ["reader"]]))
            #expect(denied["code"]?.stringValue == "PERMISSION_DENIED")
            #expect(denied["details"]?.stringValue?.contains("claims.roles") == true)
        }
        // gRPC to an HTTP/1.1 backend, and to a backend that is down: UNAVAILABLE.
        try await Self.withGateway(configure: { config in
            config.set("backends.grpc", ["urls": ["http://127.0.0.1:1"], "protocol": "h2c"])
            config["routes"] = [
                ["name": "plain", "pathPrefix": "/test.Echo/Unary", "backend": "plain"],
                ["name": "grpc", "pathPrefix": "/test.Echo/", "backend": "grpc"],
            ]
        }) { gateway in
            let http1 = try await Self.call(gateway, "unary", token: TestKeys.token())
            #expect(http1["code"]?.stringValue == "UNAVAILABLE")
            #expect(gateway.backend.requestCount == 0)
            let down = try await Self.call(gateway, "bidi", token: TestKeys.token())
            #expect(down["code"]?.stringValue == "UNAVAILABLE")
        }
    }

    /// `grpc-timeout` shortens the backend's response timeout (30 s here): the Slow method
    /// takes 30 s, the call allows 300 ms, the gateway answers DEADLINE_EXCEEDED itself.
    @Test func grpcTimeoutShortensTheResponseTimeout() async throws {
        try await Self.withGateway(configure: { config in
            config["routes"] = [["name": "grpc", "pathPrefix": "/test.Echo/", "backend": "grpc"]]
        }) { gateway in
            let client = try await H2TestClient.connect(port: gateway.port)
            atTestEnd { await client.close() }
            let started = ContinuousClock.now
            var message = ByteBuffer(bytes: [0, 0, 0, 0, 4])
            message.writeString("late")
            let result = try await client.exchange([
                .headers(
                    .init(
                        headers: H2TestClient.request(
                            "POST", path: "/test.Echo/Slow",
                            fields: [
                                ("content-type", "application/grpc"), ("te", "trailers"), ("grpc-timeout", "300m"),
                                ("authorization", "Bearer \(TestKeys.token())"),
                            ]))),
                .data(.init(data: .byteBuffer(message), endStream: true)),
            ])
            let elapsed = ContinuousClock.now - started
            let trailers = try #require(result.finalHeaders)
            #expect(trailers.first(name: ":status") == "200")
            #expect(trailers.first(name: "grpc-status") == "4")
            #expect(trailers.first(name: "content-type") == "application/grpc")
            // After the call's 300 ms, long before the backend's answer or the route's
            // response timeout (30 s each): seconds of margin for a loaded machine.
            #expect(elapsed >= .milliseconds(290) && elapsed < .seconds(15), "answered after \(elapsed)")
        }
    }

    @Test func anExpiredTokenIsRefreshedAndTheNewOneComesBackInInitialMetadata() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        try await Self.withGateway(configure: { config in
            config["authService"] = ["url": .string(rainmaker.service.baseURL), "refresh": ["maxExpiredSeconds": 3600]]
        }) { gateway in
            let refreshed = try await Self.call(
                gateway, "unary", token: TestKeys.token(subject: "grpc-refresh", expiresIn: -60),
                refreshToken: rainmaker.issueRefreshToken())
            #expect(refreshed["code"]?.stringValue == "OK")
            let newToken = try #require(refreshed["initial"]?["x-access-token"]?.stringValue)
            #expect(refreshed["trailing"]?["seen-authorization"]?.stringValue == "Bearer \(newToken)")
            #expect(refreshed["trailing"]?["seen-x-refresh-token"] == nil)
            #expect(rainmaker.refreshCalls == 1)
        }
    }

    /// What a gRPC client (grpcio) sees of the other answers the gateway makes itself
    /// (docs/http2.md), each Trailers-Only with the mapped status and never forwarded: no
    /// route for the method (404 → UNIMPLEMENTED), a malformed request (400 →
    /// INVALID_ARGUMENT), a message over `limits.maxRequestBodyBytes` (413 →
    /// RESOURCE_EXHAUSTED), the auth service down while a refresh is needed (503 →
    /// UNAVAILABLE, with `retry-after`).
    @Test func theGatewaysOwnAnswersCarryTheMappedStatus() async throws {
        let refusing = try RefusingPort()
        atTestEnd { refusing.close() }
        try await Self.withGateway(configure: { config in
            config.set("limits.maxRequestBodyBytes", 1024)
            config["authService"] = ["url": .string(refusing.url), "refresh": ["maxExpiredSeconds": 3600]]
        }) { gateway in
            let token = TestKeys.token(subject: "grpc-user")
            let ok = try await Self.call(gateway, "unary", token: token)
            #expect(ok["code"]?.stringValue == "OK")

            let unrouted = try await Self.call(gateway, "unary", token: token, method: "/test.Other/Call")
            #expect(unrouted["code"]?.stringValue == "UNIMPLEMENTED", "\(unrouted)")
            #expect(unrouted["details"]?.stringValue?.isEmpty == false)

            // Two different tokens, in `authorization` and in the `access_token` cookie.
            let other = TestKeys.token(subject: "someone-else")
            let ambiguous = try await Self.call(
                gateway, "unary", token: token, metadata: [("cookie", "access_token=\(other)")])
            #expect(ambiguous["code"]?.stringValue == "INVALID_ARGUMENT", "\(ambiguous)")

            // 3 MiB messages against a 1 KiB limit.
            let large = try await Self.call(gateway, "large", token: token)
            #expect(large["code"]?.stringValue == "RESOURCE_EXHAUSTED", "\(large)")

            let unavailable = try await Self.call(
                gateway, "unary", token: TestKeys.token(subject: "grpc-user", expiresIn: -60), refreshToken: "rt-1")
            #expect(unavailable["code"]?.stringValue == "UNAVAILABLE", "\(unavailable)")
            #expect(unavailable["trailing"]?["retry-after"]?.stringValue.flatMap { Int($0) }.map { $0 >= 1 } == true)
        }
    }

    /// Request metadata over `limits.maxHeaderBytes`, the header list size the gateway
    /// advertises (docs/http2.md), sent by a grpcio client that already has the gateway's SETTINGS:
    /// never forwarded. A 431 maps to RESOURCE_EXHAUSTED, and the gateway answers one on the
    /// stream to a header list it sees over the limit (before the client acknowledged the
    /// SETTINGS), but this one it never sees: once the SETTINGS are acknowledged NIOHTTP2's
    /// decoder holds the limit and a header block over it is a connection error (GOAWAY, as
    /// `HTTP2AbuseTests` expects), so the client sees UNAVAILABLE, and every other call on that
    /// connection fails with it. A known issue inside NIOHTTP2, not fixable in the gateway
    /// without advertising a larger size than it enforces (docs/http2.md, "Known limits").
    @Test func metadataOverTheHeaderListSizeIsNeverForwarded() async throws {
        try await Self.withGateway(configure: { config in config.set("limits.maxHeaderBytes", 8192) }) { gateway in
            let token = TestKeys.token(subject: "grpc-user")
            let big = String(repeating: "m", count: 16 * 1024)
            let result = try await Self.call(gateway, "warm_then_unary", token: token, metadata: [("x-big", big)])
            let code = result["code"]?.stringValue
            #expect(result["response"] == nil, "the call went through: \(result)")
            #expect(["UNAVAILABLE", "RESOURCE_EXHAUSTED", "INVALID_ARGUMENT"].contains(code), "\(result)")
            withKnownIssue("HTTP/2: a header list over limits.maxHeaderBytes closes the connection instead of a 431") {
                #expect(code == "RESOURCE_EXHAUSTED" || code == "INVALID_ARGUMENT", "\(result)")
            }
        }
    }
}
