import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

@Suite("Timeouts and slow clients (real sockets)", .awaitsCleanups)
struct TimeoutTests {
    @Test func slowHeadersAreCutOffWithoutDisturbingOthers() async throws {
        let gateway = try await GatewayFixture.start { config in config.set("timeouts.requestHeaderSeconds", 1) }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        // A well-behaved client, connected and served before the slow one starts (so that a
        // busy start of the test run cannot eat the slow client's second).
        let client = try await gateway.connect()
        #expect(try await client.send(.get("/warm", token: token)).status == 200)
        // Taken before connecting: the header deadline runs from the first byte, and
        // this task may resume late on a loaded machine, which must not shorten what it measures.
        let started = ContinuousClock.now
        let slow = try await gateway.raw()
        try await slow.send("GET /slow HTTP/1.1\r\nHost: x\r\n")
        // Served while the slow one has unfinished headers, and on while it dribbles more.
        #expect(try await client.send(.get("/fine", token: token)).status == 200)
        var served = 1
        for index in 0..<10 where !slow.isClosed {
            try? await slow.send("X-Drip-\(index): a\r\n")
            #expect(try await client.send(.get("/fine/\(index)", token: token)).status == 200)
            served += 1
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(await slow.waitForClose(timeout: .seconds(30)))
        // Cut off by the 1 s deadline, not after its ten dribbles (at least 3 s): the loop
        // stopped early. (An upper bound on the elapsed time failed on a loaded machine, where
        // each iteration's request takes long.)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(900), "closed after \(elapsed)")
        #expect(served < 11, "every dribble went through: the header deadline never fired")
        #expect(slow.firstStatus == 408)
        #expect(try await client.send(.get("/still-fine", token: token)).status == 200)
        #expect(gateway.backend.requestCount == served + 2)
        await client.close()
    }

    /// A kept-alive connection is closed after `idleSeconds` without a request, and so is one
    /// that never sends any.
    ///
    /// No step races the 1 s deadline. With `idleSeconds: 1` from the start, the first request
    /// had to reach the gateway within 1 s of its accepting the connection, and a CI run once
    /// delivered it later (the gateway then rightly closed the connection unserved). So the
    /// connection is opened and served under the default 60 s, the configuration is reloaded
    /// to 1 s (polled until the loop has it), and only then does the second request, whose end
    /// starts the 1 s idle clock, go out on the same connection.
    @Test func idleConnectionsAreClosed() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        let client = try await RawConnection.connect(port: gateway.port)
        try await client.send("GET /first HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer \(token)\r\n\r\n")
        #expect(await client.waitFor(timeout: .seconds(30)) { $0.contains("\r\n\r\n") })
        #expect(client.firstStatus == 200, "\(client.received)")

        // One event loop: once a new connection sees the reloaded routes, so does `client`'s.
        try gateway.reload { config in
            config.set("timeouts.idleSeconds", 1)
            config["routes"] = [
                ["name": "reloaded", "pathPrefix": "/reloaded/", "backend": "api", "auth": "none"],
                ["name": "default", "pathPrefix": "/", "backend": "api"],
            ]
        }
        #expect(await eventually { (try? await gateway.send(.get("/reloaded/probe")).status) == 200 })
        let unused = try await RawConnection.connect(port: gateway.port)

        let started = ContinuousClock.now
        try await client.send("GET /second HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer \(token)\r\n\r\n")
        #expect(await client.waitForClose(timeout: .seconds(30)))
        #expect(ContinuousClock.now - started >= .milliseconds(1000))
        // Served (a kept-alive 200), then closed as idle: not closed instead of answering.
        #expect(client.received.components(separatedBy: "HTTP/1.1 200 ").count == 3, "\(client.received)")
        #expect(!client.received.lowercased().contains("connection: close"), "\(client.received)")
        #expect(await unused.waitForClose(timeout: .seconds(30)))
        #expect(unused.received.isEmpty)
        #expect(gateway.backend.requestCount == 3)
    }

    @Test func slowBackendGets504AndTheGatewayStaysUp() async throws {
        let gateway = try await GatewayFixture.start { config in
            // The 1 s response timeout on the slow route only: the request after it must not
            // be held to 1 s on a loaded machine.
            config["backends"] = [
                "slow": ["urls": [.string(config.backendURL)], "responseTimeoutMilliseconds": 1000],
                "api": ["urls": [.string(config.backendURL)]],
            ]
            config["routes"] = [
                ["name": "slow", "pathPrefix": "/delay/", "backend": "slow"],
                ["name": "default", "pathPrefix": "/", "backend": "api"],
            ]
        }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        let started = ContinuousClock.now
        let slow = try await gateway.send(.get("/delay/60000", token: token))
        // Cut off by the slow route's 1 s response timeout: a 504 (the backend would answer
        // 200 after 60 s), not before 1 s, and well before the next timeout that could give
        // a 504 (the default 30 s). The upper bound leaves ~28 s for a loaded machine (a CI
        // run once resumed this task 8 s late).
        #expect(slow.status == 504)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(1000) && elapsed < .seconds(29), "504 after \(elapsed)")
        #expect(slow.json?["type"]?.stringValue == "urn:auth-gateway:problem:upstream.timeout")
        #expect(try await gateway.send(.get("/fast", token: token)).status == 200)
    }
}

@Suite("Backend failures (real sockets)", .awaitsCleanups)
struct BackendFailureTests {
    /// A port that refuses connections, reserved for the test (see `RefusingPort`).
    static func deadPort() throws -> RefusingPort { try RefusingPort() }

    @Test func deadBackendGets502() async throws {
        let dead = try Self.deadPort()
        defer { withExtendedLifetime(dead) {} }
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = ["api": ["urls": [.string(dead.url)], "connectTimeoutMilliseconds": 500]]
        }
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        let response = try await client.send(.get("/x", token: TestKeys.token()))
        #expect(response.status == 502)
        #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:upstream.unreachable")
        // The client connection stays usable for the next request.
        #expect(try await client.send(.get("/y", token: TestKeys.token())).status == 502)
        await client.close()
        let health = try await TestConnection.connect(port: gateway.adminPort).send(.get("/healthz"))
        #expect(health.status == 200)
        #expect(health.json?["status"]?.stringValue == "degraded")
        #expect(health.json?["checks"]?["backends"]?["api"]?["status"]?.stringValue == "unavailable")
    }

    @Test func roundRobinSkipsAURLThatRefusesConnections() async throws {
        let dead = try Self.deadPort()
        defer { withExtendedLifetime(dead) {} }
        let second = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await second.close() }
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = [
                "api": ["urls": [.string(dead.url), .string(config.backendURL), .string(second.baseURL)]]
            ]
        }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        // Separate client connections at once, so the pool opens several upstream connections.
        let responses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<12 {
                group.addTask { try await gateway.send(.get("/rr/\(index)", token: token)).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(responses.allSatisfy { $0 == 200 })
        #expect(gateway.backend.requestCount + second.requestCount == 12)
        #expect(gateway.backend.connectionCount >= 1)
        #expect(second.connectionCount >= 1)
    }

    @Test func replayableRequestIsRetriedWhenAReusedConnectionDies() async throws {
        let flaky = try await OneRequestPerConnectionBackend.start()
        atTestEnd { await flaky.close() }
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = ["api": ["urls": [.string(flaky.baseURL)]]]
        }
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        let token = TestKeys.token()
        #expect(try await client.send(.get("/first", token: token)).status == 200)
        // The pooled connection will be dropped on its second request: GET is replayed once.
        let second = try await client.send(.get("/second", token: token))
        #expect(second.status == 200)
        #expect(second.text == "/second")
        // POST is not replayable: the failure surfaces as 502.
        let post = try await client.send(
            TestRequest(.POST, "/third", headers: [("Authorization", "Bearer \(token)")], body: "data"))
        #expect(post.status == 502)
        await client.close()
    }
}

/// A backend that answers the first request on each connection with keep-alive, then closes
/// the connection when a second request arrives, without answering it — the keep-alive race.
final class OneRequestPerConnectionBackend: Sendable {
    private let server: Channel

    private init(server: Channel) { self.server = server }

    var baseURL: String { "http://127.0.0.1:\(self.server.localAddress?.port ?? 0)" }

    static func start() async throws -> OneRequestPerConnectionBackend {
        let server = try await ServerBootstrap(group: TestGroup.shared)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return OneRequestPerConnectionBackend(server: server)
    }

    func close() async { try? await self.server.close() }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        var requests = 0
        var uri = ""

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch self.unwrapInboundIn(data) {
            case .head(let head):
                self.requests += 1
                self.uri = head.uri
                if self.requests > 1 { context.close(promise: nil) }
            case .body:
                break
            case .end:
                guard self.requests == 1 else { return }
                let body = context.channel.allocator.buffer(string: self.uri)
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: String(body.readableBytes))
                context.write(
                    self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                    promise: nil)
                context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
                context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
