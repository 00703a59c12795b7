import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Rate limits per identity on real sockets (docs/rate-limits.md), over HTTP/1.1 and HTTP/2: the
/// refusal and its headers, other users unaffected, refused requests never reaching the
/// backend, the client-address fallback, two limits on one route, gRPC, SIGHUP.
///
/// Rates are slow (one request per 100 s) so no refill happens while a test runs: the counts
/// are exact without sleeping. Seconds in the headers count down while a loaded machine runs
/// the test, so they are checked as ranges.
@Suite("Rate limits (real sockets)", .awaitsCleanups)
struct RateLimitIntegrationTests {
    /// A `RateLimit` value, `"name";r=<n>;t=<n>`, parsed.
    struct Field: Equatable {
        var name: String
        var remaining: Int
        var reset: Int
    }

    static func field(_ value: String?) -> Field? {
        guard let value else { return nil }
        let parts = value.split(separator: ";").map(String.init)
        guard parts.count == 3, parts[0].count >= 2, parts[0].hasPrefix("\""), parts[0].hasSuffix("\""),
            parts[1].hasPrefix("r="), parts[2].hasPrefix("t="), let remaining = Int(parts[1].dropFirst(2)),
            let reset = Int(parts[2].dropFirst(2))
        else { return nil }
        return Field(name: String(parts[0].dropFirst().dropLast()), remaining: remaining, reset: reset)
    }

    /// `RateLimit` is `name` with `remaining` left and a reset within `reset`.
    static func expectField(
        _ value: String?, _ name: String, remaining: Int, reset: ClosedRange<Int>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let field = Self.field(value) else {
            Issue.record("RateLimit: \(value ?? "absent") is not \"name\";r=…;t=…", sourceLocation: sourceLocation)
            return
        }
        #expect(field.name == name, sourceLocation: sourceLocation)
        #expect(field.remaining == remaining, sourceLocation: sourceLocation)
        #expect(reset.contains(field.reset), "t=\(field.reset) not in \(reset)", sourceLocation: sourceLocation)
    }

    /// A refusal's `Retry-After` is within 1…100 and equals its `RateLimit` t.
    static func expectRefusal(
        retryAfter: String?, rateLimit: String?, _ name: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let seconds = retryAfter.flatMap { Int($0) }
        #expect(
            seconds.map { (1...100).contains($0) } == true, "Retry-After: \(retryAfter ?? "absent")",
            sourceLocation: sourceLocation)
        #expect(
            Self.field(rateLimit) == seconds.map { Field(name: name, remaining: 0, reset: $0) },
            "RateLimit: \(rateLimit ?? "absent")", sourceLocation: sourceLocation)
    }
    static func limit(
        _ name: String, key: String, burst: Int, routes: [String]? = nil, rate: Double = 0.01
    ) -> JSONValue {
        var limit: JSONObject = [
            "name": .string(name), "key": .string(key),
            "requestsPerSecond": .number(JSONNumber(text: String(rate), double: rate)),
            "burst": .number(JSONNumber(burst)),
        ]
        if let routes { limit["routes"] = .array(routes.map { .string($0) }) }
        return .object(limit)
    }

    static func start(auth: String = "required", _ limits: [JSONValue]) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["routes"] = [["name": "default", "pathPrefix": "/", "backend": "api", "auth": .string(auth)]]
            config["rateLimits"] = .array(limits)
        }
    }

    static func metrics(_ gateway: GatewayFixture) async throws -> String {
        let connection = try await TestConnection.connect(port: gateway.adminPort)
        return try await withCleanup({ await connection.close() }) { try await connection.send(.get("/metrics")).text }
    }

    @Test func theRefusalItsHeadersAndNoBackendCallOverHTTP1() async throws {
        let gateway = try await Self.start([Self.limit("per-user", key: "claims.sub", burst: 2)])
        atTestEnd { await gateway.stop() }
        let alice = TestKeys.token(subject: "alice")
        let first = try await gateway.send(.get("/a", token: alice))
        #expect(first.status == 200)
        Self.expectField(first.header("ratelimit"), "per-user", remaining: 1, reset: 1...100)
        let second = try await gateway.send(.get("/a", token: alice))
        #expect(second.status == 200)
        Self.expectField(second.header("ratelimit"), "per-user", remaining: 0, reset: 101...200)
        #expect(gateway.backend.requestCount == 2)

        let refused = try await gateway.send(.get("/a", token: alice))
        #expect(refused.status == 429)
        #expect(refused.header("content-type") == "application/problem+json")
        #expect(refused.header("ratelimit-policy") == #""per-user";q=2;w=200"#)
        Self.expectRefusal(
            retryAfter: refused.header("retry-after"), rateLimit: refused.header("ratelimit"), "per-user")
        let problem = try #require(refused.json)
        #expect(problem["error"]?.stringValue == "rate_limited")
        #expect(problem["status"]?.numberValue?.exactInt == 429)
        #expect(problem["requestId"]?.stringValue == refused.header("x-request-id"))
        // Never forwarded.
        #expect(gateway.backend.requestCount == 2)

        // Another user is unaffected.
        let bob = try await gateway.send(.get("/a", token: TestKeys.token(subject: "bob")))
        #expect(bob.status == 200)
        Self.expectField(bob.header("ratelimit"), "per-user", remaining: 1, reset: 1...100)
        #expect(gateway.backend.requestCount == 3)

        let metrics = try await Self.metrics(gateway)
        #expect(
            metrics.contains("auth_gateway_rate_limited_total{limit=\"per-user\",route=\"default\"} 1\n"), "\(metrics)")
        #expect(
            metrics.contains(
                "auth_gateway_requests_total{route=\"default\",status_class=\"4xx\",protocol=\"http/1.1\"} 1\n"))
    }

    @Test func anonymousRequestsFallBackToTheClientAddress() async throws {
        let gateway = try await Self.start(auth: "optional", [Self.limit("per-user", key: "claims.sub", burst: 2)])
        atTestEnd { await gateway.stop() }
        #expect(try await gateway.send(.get("/")).status == 200)
        #expect(try await gateway.send(.get("/")).status == 200)
        let refused = try await gateway.send(.get("/"))
        #expect(refused.status == 429)
        Self.expectRefusal(
            retryAfter: refused.header("retry-after"), rateLimit: refused.header("ratelimit"), "per-user")
        // A signed-in user from the same address has a bucket of their own.
        #expect(try await gateway.send(.get("/", token: TestKeys.token(subject: "carol"))).status == 200)
        #expect(gateway.backend.requestCount == 3)
    }

    @Test func twoLimitsOnOneRouteAndARefusalConsumesNothingFromTheOther() async throws {
        // per-ip first: a request it admits and per-user refuses must be given back to per-ip.
        let gateway = try await Self.start([
            Self.limit("per-ip", key: "client.ip", burst: 5, routes: ["default"]),
            Self.limit("per-user", key: "claims.sub", burst: 3),
        ])
        atTestEnd { await gateway.stop() }
        let alice = TestKeys.token(subject: "alice")
        for _ in 0..<3 { #expect(try await gateway.send(.get("/", token: alice)).status == 200) }
        let aliceRefused = try await gateway.send(.get("/", token: alice))
        #expect(aliceRefused.status == 429)
        #expect(aliceRefused.header("ratelimit-policy") == #""per-user";q=3;w=300"#)
        #expect(try await gateway.send(.get("/", token: alice)).status == 429)
        // The address has 2 left (5 − alice's 3): alice's refusals took nothing from it.
        let bob = TestKeys.token(subject: "bob")
        let bobFirst = try await gateway.send(.get("/", token: bob))
        #expect(bobFirst.status == 200)
        // The tightest limit names the header: per-ip has 1 left, per-user 2.
        Self.expectField(bobFirst.header("ratelimit"), "per-ip", remaining: 1, reset: 301...400)
        #expect(try await gateway.send(.get("/", token: bob)).status == 200)
        let bobRefused = try await gateway.send(.get("/", token: bob))
        #expect(bobRefused.status == 429)
        #expect(bobRefused.header("ratelimit-policy") == #""per-ip";q=5;w=500"#)
        #expect(gateway.backend.requestCount == 5)
        let metrics = try await Self.metrics(gateway)
        #expect(
            metrics.contains("auth_gateway_rate_limited_total{limit=\"per-user\",route=\"default\"} 2\n"), "\(metrics)")
        #expect(
            metrics.contains("auth_gateway_rate_limited_total{limit=\"per-ip\",route=\"default\"} 1\n"), "\(metrics)")
    }

    @Test func theRefusalOverHTTP2() async throws {
        let gateway = try await Self.start([Self.limit("per-user", key: "claims.sub", burst: 1)])
        atTestEnd { await gateway.stop() }
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        let token = TestKeys.token(subject: "h2-user")
        let request = H2TestClient.request(path: "/h2", fields: [("authorization", "Bearer \(token)")])
        let admitted = try await client.exchange([.headers(.init(headers: request, endStream: true))])
        #expect(admitted.status == 200)
        Self.expectField(admitted.headers?.first(name: "ratelimit"), "per-user", remaining: 0, reset: 1...100)
        let refused = try await client.exchange([.headers(.init(headers: request, endStream: true))])
        #expect(refused.status == 429)
        #expect(refused.headers?.first(name: "content-type") == "application/problem+json")
        #expect(refused.headers?.first(name: "ratelimit-policy") == #""per-user";q=1;w=100"#)
        Self.expectRefusal(
            retryAfter: refused.headers?.first(name: "retry-after"),
            rateLimit: refused.headers?.first(name: "ratelimit"), "per-user")
        let problem = try JSONValue(parsing: String(buffer: refused.body))
        #expect(problem["error"]?.stringValue == "rate_limited")
        #expect(gateway.backend.requestCount == 1)
        // Another user on the same connection is unaffected.
        let other = H2TestClient.request(
            path: "/h2", fields: [("authorization", "Bearer \(TestKeys.token(subject: "h2-other"))")])
        #expect(try await client.exchange([.headers(.init(headers: other, endStream: true))]).status == 200)
        let metrics = try await Self.metrics(gateway)
        #expect(
            metrics.contains("auth_gateway_rate_limited_total{limit=\"per-user\",route=\"default\"} 1\n"), "\(metrics)")
    }

    @Test func gRPCGetsResourceExhaustedTrailersOnly() async throws {
        let gateway = try await Self.start([Self.limit("per-route", key: "route", burst: 1)])
        atTestEnd { await gateway.stop() }
        // The route's one request, over HTTP/1.1.
        #expect(try await gateway.send(.get("/", token: TestKeys.token())).status == 200)
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        var message = ByteBuffer(bytes: [0, 0, 0, 0, 2])
        message.writeString("hi")
        let result = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(
                        "POST", path: "/test.Echo/Unary",
                        fields: [
                            ("content-type", "application/grpc"), ("te", "trailers"),
                            ("authorization", "Bearer \(TestKeys.token())"),
                        ]))),
            .data(.init(data: .byteBuffer(message), endStream: true)),
        ])
        let trailers = try #require(result.finalHeaders)
        #expect(trailers.first(name: ":status") == "200")
        #expect(trailers.first(name: "content-type") == "application/grpc")
        #expect(trailers.first(name: "grpc-status") == "8")
        #expect(trailers.first(name: "retry-after").flatMap { Int($0) }.map { (1...100).contains($0) } == true)
        #expect(gateway.backend.requestCount == 1)
    }

    @Test func aReloadKeepsTheBucketsOfUnchangedLimits() async throws {
        let gateway = try await Self.start([
            Self.limit("per-user", key: "claims.sub", burst: 1), Self.limit("per-ip", key: "client.ip", burst: 100),
        ])
        atTestEnd { await gateway.stop() }
        let alice = TestKeys.token(subject: "alice")
        #expect(try await gateway.send(.get("/", token: alice)).status == 200)
        #expect(try await gateway.send(.get("/", token: alice)).status == 429)
        // Another limit changes: alice's bucket stays empty.
        try gateway.reload { config in
            config["rateLimits"] = [
                Self.limit("per-user", key: "claims.sub", burst: 1), Self.limit("per-ip", key: "client.ip", burst: 50),
            ]
        }
        try await Self.waitForGeneration(gateway, 2)
        #expect(try await gateway.send(.get("/", token: alice)).status == 429)
        // Her own limit changes: a new bucket.
        try gateway.reload { config in
            config["rateLimits"] = [
                Self.limit("per-user", key: "claims.sub", burst: 2), Self.limit("per-ip", key: "client.ip", burst: 50),
            ]
        }
        try await Self.waitForGeneration(gateway, 3)
        #expect(try await gateway.send(.get("/", token: alice)).status == 200)
    }

    @Test func aKeysBurstHoldsAcrossEventLoops() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["eventLoopThreads"] = 4
            config["rateLimits"] = [Self.limit("per-user", key: "claims.sub", burst: 5)]
        }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "many-loops")
        // 24 connections at once: accepted round robin over the 4 loops.
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<24 {
                group.addTask { try await gateway.send(.get("/loop/\(index)", token: token)).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 200 }.count == 5, "\(statuses)")
        #expect(statuses.filter { $0 == 429 }.count == 19, "\(statuses)")
        #expect(gateway.backend.requestCount == 5)
    }

    @Test func aProfileKeyFetchesTheProfileAndGroupsItsUsers() async throws {
        let service = try await ProfileTests.userService()
        atTestEnd { await service.stop() }
        // Nothing else on the route reads the profile: the limit alone makes it fetched.
        let gateway = try await GatewayFixture.start { config in
            config["authService"] = [
                "url": .string(service.baseURL), "profile": ["path": "/v1/user", "authorization": "raw"],
            ]
            config["rateLimits"] = [Self.limit("per-role", key: "profile.super_admin", burst: 1)]
        }
        atTestEnd { await gateway.stop() }
        #expect(try await gateway.send(.get("/", token: TestKeys.token(subject: "admin-1"))).status == 200)
        // Another admin shares the bucket of super_admin = true; a non-admin has its own.
        let refused = try await gateway.send(.get("/", token: TestKeys.token(subject: "admin-2")))
        #expect(refused.status == 429)
        #expect(refused.header("ratelimit-policy") == #""per-role";q=1;w=100"#)
        #expect(try await gateway.send(.get("/", token: TestKeys.token(subject: "bob"))).status == 200)
        #expect(gateway.backend.requestCount == 2)
    }

    /// Limits are checked after authentication (docs/rate-limits.md): a request refused with 401 —
    /// no token, a forged one, an expired one — consumes nothing, neither from the limit on
    /// its claims nor from the address it would fall back to, and carries no `RateLimit`.
    @Test func aRequestRefusedWith401CountsNothing() async throws {
        let gateway = try await Self.start([
            Self.limit("per-ip", key: "client.ip", burst: 3), Self.limit("per-user", key: "claims.sub", burst: 2),
        ])
        atTestEnd { await gateway.stop() }
        // Five 401s, more than either burst, from the one address, three of them naming alice.
        let unauthenticated: [TestRequest] = [
            .get("/"), .get("/", token: TestKeys.token(signer: TestKeys.otherRSA, subject: "alice")),
            .get("/", token: TestKeys.token(subject: "alice", expiresIn: -60)),
            .get("/", token: TestKeys.token(subject: "alice", audience: "another-audience")), .get("/"),
        ]
        for request in unauthenticated {
            let response = try await gateway.send(request)
            #expect(response.status == 401)
            #expect(response.header("ratelimit") == nil)
        }
        #expect(gateway.backend.requestCount == 0)

        // Every bucket is whole: alice gets her burst of 2 (per-ip then has 1 of 3 left) …
        let alice = TestKeys.token(subject: "alice")
        let first = try await gateway.send(.get("/", token: alice))
        #expect(first.status == 200)
        Self.expectField(first.header("ratelimit"), "per-user", remaining: 1, reset: 1...100)
        #expect(try await gateway.send(.get("/", token: alice)).status == 200)
        let aliceRefused = try await gateway.send(.get("/", token: alice))
        #expect(aliceRefused.status == 429)
        #expect(aliceRefused.header("ratelimit-policy") == #""per-user";q=2;w=200"#)
        // … and the address still has one for bob, then none.
        let bob = TestKeys.token(subject: "bob")
        let bobFirst = try await gateway.send(.get("/", token: bob))
        #expect(bobFirst.status == 200)
        Self.expectField(bobFirst.header("ratelimit"), "per-ip", remaining: 0, reset: 201...300)
        let bobRefused = try await gateway.send(.get("/", token: bob))
        #expect(bobRefused.status == 429)
        #expect(bobRefused.header("ratelimit-policy") == #""per-ip";q=3;w=300"#)
        #expect(gateway.backend.requestCount == 3)
        let metrics = try await Self.metrics(gateway)
        #expect(
            metrics.contains("auth_gateway_rate_limited_total{limit=\"per-user\",route=\"default\"} 1\n"), "\(metrics)")
        #expect(
            metrics.contains("auth_gateway_rate_limited_total{limit=\"per-ip\",route=\"default\"} 1\n"), "\(metrics)")
    }

    /// `client.ip` behind a trusted proxy (docs/rate-limits.md), from `X-Forwarded-For` on the wire:
    /// the first hop from the right that is not a trusted proxy, whatever the client wrote to
    /// its left; without the header, the peer. The same over HTTP/2.
    @Test func clientIPBehindATrustedProxyIsTheFirstUntrustedForwardedHop() async throws {
        let gateway = try await GatewayFixture.start { config in
            // The gateway's peer (127.0.0.1) and an inner proxy (10.1.2.3) are trusted.
            config["trustedProxies"] = ["127.0.0.1/32", "10.0.0.0/8"]
            config["routes"] = [["name": "public", "pathPrefix": "/", "backend": "api", "auth": "none"]]
            config["rateLimits"] = [Self.limit("per-ip", key: "client.ip", burst: 1)]
        }
        atTestEnd { await gateway.stop() }
        func from(_ forwardedFor: String) -> TestRequest { .get("/", headers: [("X-Forwarded-For", forwardedFor)]) }

        // 203.0.113.7 through the inner proxy.
        #expect(try await gateway.send(from("203.0.113.7, 10.1.2.3")).status == 200)
        // The same client, with a made-up hop of its own to the left: the same bucket, empty.
        let refused = try await gateway.send(from("198.51.100.99, 203.0.113.7"))
        #expect(refused.status == 429)
        #expect(refused.header("ratelimit-policy") == #""per-ip";q=1;w=100"#)
        // Another client; and the made-up hop was not counted as one.
        #expect(try await gateway.send(from("203.0.113.8")).status == 200)
        #expect(try await gateway.send(from("198.51.100.99")).status == 200)
        // No X-Forwarded-For: the peer's own bucket.
        #expect(try await gateway.send(.get("/")).status == 200)
        #expect(try await gateway.send(.get("/")).status == 429)
        #expect(gateway.backend.requestCount == 4)

        // Over HTTP/2: 203.0.113.8 has used its request; 203.0.113.9 has not.
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        func overH2(_ forwardedFor: String) async throws -> Int? {
            let request = H2TestClient.request(path: "/h2", fields: [("x-forwarded-for", forwardedFor)])
            return try await client.exchange([.headers(.init(headers: request, endStream: true))]).status
        }
        #expect(try await overH2("203.0.113.8, 10.9.9.9") == 429)
        #expect(try await overH2("203.0.113.9") == 200)
        #expect(gateway.backend.requestCount == 5)
    }

    /// A peer that is not a trusted proxy: its `X-Forwarded-For` is not believed, every
    /// request counts under the peer's address.
    @Test func forwardedForFromAnUntrustedPeerIsNotBelieved() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["trustedProxies"] = ["10.0.0.0/8"]
            config["routes"] = [["name": "public", "pathPrefix": "/", "backend": "api", "auth": "none"]]
            config["rateLimits"] = [Self.limit("per-ip", key: "client.ip", burst: 1)]
        }
        atTestEnd { await gateway.stop() }
        #expect(try await gateway.send(.get("/", headers: [("X-Forwarded-For", "203.0.113.7")])).status == 200)
        #expect(try await gateway.send(.get("/", headers: [("X-Forwarded-For", "203.0.113.8")])).status == 429)
        #expect(try await gateway.send(.get("/")).status == 429)
        #expect(gateway.backend.requestCount == 1)
    }

    /// Reloads reach each loop asynchronously: waits (bounded) until requests see `generation`.
    static func waitForGeneration(_ gateway: GatewayFixture, _ generation: UInt64) async throws {
        for worker in gateway.application.workers {
            let reached = try await eventually {
                try await worker.eventLoop.submit { worker.value.snapshot.generation >= generation }.get()
            }
            #expect(reached, "the reload did not reach an event loop")
        }
    }
}
