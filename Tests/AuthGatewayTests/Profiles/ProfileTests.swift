import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

@Suite("Profile cache (real sockets)", .awaitsCleanups)
struct ProfileTests {
    /// A RainMaker `GET /v1/user`: `super_admin` for subjects starting with "admin".
    static func userService(
        delayMilliseconds: Int64 = 0, status: NIOLockedValueBox<Int>? = nil, gate: ReplyGate = ReplyGate()
    ) async throws -> ScriptedAuthService {
        try await ScriptedAuthService.start { request, eventLoop in
            let forced = status?.withLockedValue { $0 } ?? 200
            let response: SimpleResponse
            if forced != 200 {
                response = .json(HTTPResponseStatus(statusCode: forced), ["status": "failure"])
            } else if let header = request.headers.first(name: "authorization"), !header.hasPrefix("Bearer "),
                let token = TokenExtractor.token(inHeaderValue: header[...], bearer: false, raw: true)?.value,
                let payload = token.split(separator: ".").dropFirst().first.flatMap({ Base64URL.decode($0) }),
                let claims = try? JSONValue(parsingBytes: payload), case .string(let subject)? = claims["sub"]
            {
                response = .json(
                    .ok,
                    [
                        "user_id": .string("id-\(subject)"), "user_name": .string("\(subject)@example.com"),
                        "super_admin": .bool(subject.hasPrefix("admin")), "groups": ["a", "b"],
                    ])
            } else {
                response = .json(.unauthorized, ["status": "failure"])
            }
            guard delayMilliseconds > 0 else { return gate.pass(response, on: eventLoop) }
            return eventLoop.scheduleTask(in: .milliseconds(delayMilliseconds)) { response }.futureResult
        }
    }

    static func gateway(
        service: ScriptedAuthService, clock: TestClock = TestClock(), ttl: Int = 60, stale: Int = 60,
        timeout: Int = 60_000
    ) async throws -> GatewayFixture {
        try await GatewayFixture.start(clock: clock) { config in
            config["eventLoopThreads"] = 2
            config["authService"] = [
                "url": .string(service.baseURL), "timeoutMilliseconds": .number(JSONNumber(timeout)),
                "profile": [
                    "path": "/v1/user", "authorization": "raw", "ttlSeconds": .number(JSONNumber(ttl)),
                    "staleSeconds": .number(JSONNumber(stale)),
                ],
            ]
            config["identityHeaders"] = [
                "X-User-Id": "profile.user_id", "X-User-Super-Admin": "profile.super_admin",
                "X-User-Groups": "profile.groups",
            ]
            config["routes"] = [
                ["name": "admin", "pathPrefix": "/admin/", "backend": "api", "require": ["profile.super_admin": true]],
                ["name": "default", "pathPrefix": "/", "backend": "api"],
            ]
        }
    }

    @Test func oneFetchServesManySequentialRequests() async throws {
        let service = try await Self.userService()
        atTestEnd { await service.stop() }
        let gateway = try await Self.gateway(service: service)
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "erin")
        let client = try await gateway.connect()
        for index in 0..<100 {
            let response = try await client.send(.get("/p/\(index)", token: token))
            #expect(response.status == 200)
            #expect(response.echoedHeader("x-user-id") == ["id-erin"])
            #expect(response.echoedHeader("x-user-super-admin") == ["false"])
            #expect(response.echoedHeader("x-user-groups") == ["a,b"])
        }
        #expect(service.calls("/v1/user") == 1)
        await client.close()
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(metrics.contains("auth_gateway_profile_cache_total{result=\"miss\"} 1\n"))
        #expect(metrics.contains("auth_gateway_profile_cache_total{result=\"hit\"} 99\n"))
    }

    /// The profile reply is held until all 50 requests wait on the one fetch (1 miss + 49
    /// coalesced, read from `/metrics`), so none can come late and count as a hit.
    @Test func concurrentFirstRequestsShareOneFetch() async throws {
        let gate = ReplyGate(holding: true)
        let service = try await Self.userService(gate: gate)
        atTestEnd { await service.stop() }
        let gateway = try await Self.gateway(service: service, timeout: 120_000)
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "frank")
        let requests = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let client = try await gateway.connect()
                        return try await withCleanup({ await client.close() }) { () async throws in
                            return try await client.send(.get("/c/\(index)", token: token), timeout: .seconds(60))
                                .status
                        }
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        let coalesced = "auth_gateway_profile_cache_total{result=\"coalesced\"}"
        #expect(
            try await eventually(timeout: .seconds(30)) {
                try await RefreshTests.metric(coalesced, adminPort: gateway.adminPort) == 49
            })
        // The one fetch may still be on its way to the service.
        #expect(await eventually(timeout: .seconds(30)) { service.calls("/v1/user") == 1 })
        #expect(gateway.backend.requestCount == 0)
        gate.release()
        let statuses = try await requests.value
        #expect(statuses == Array(repeating: 200, count: 50))
        #expect(service.calls("/v1/user") == 1)
        #expect(try await RefreshTests.metric(coalesced, adminPort: gateway.adminPort) == 49)
    }

    /// `profile.maxEntries` (docs/authentication.md: an LRU of that many entries), seen from the
    /// auth service's call count: three users fit in a cache of three; a fourth evicts the least
    /// recently used one, and only that one is fetched again.
    @Test func maxEntriesBoundsTheCacheAndEvictsTheLeastRecentlyUsed() async throws {
        let service = try await Self.userService()
        atTestEnd { await service.stop() }
        let gateway = try await GatewayFixture.start { config in
            config["authService"] = [
                "url": .string(service.baseURL), "timeoutMilliseconds": 60_000,
                "profile": [
                    "path": "/v1/user", "authorization": "raw", "ttlSeconds": 300, "staleSeconds": 300, "maxEntries": 3,
                ],
            ]
            config["identityHeaders"] = ["X-User-Id": "profile.user_id"]
        }
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        atTestEnd { await client.close() }
        let tokens = Dictionary(
            uniqueKeysWithValues: ["u1", "u2", "u3", "u4"].map { ($0, TestKeys.token(subject: $0)) })
        func visit(_ user: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let response = try await client.send(.get("/lru/\(user)", token: tokens[user]))
            #expect(response.echoedHeader("x-user-id") == ["id-\(user)"], sourceLocation: sourceLocation)
        }
        for user in ["u1", "u2", "u3"] { try await visit(user) }
        #expect(service.calls("/v1/user") == 3)
        // All three are held: no fetch.
        for user in ["u1", "u2", "u3"] { try await visit(user) }
        #expect(service.calls("/v1/user") == 3, "a cache of 3 entries did not hold 3 users")
        // u1 used again: u2 is now the least recently used, and u4 evicts it.
        try await visit("u1")
        try await visit("u4")
        #expect(service.calls("/v1/user") == 4)
        try await visit("u1")
        try await visit("u3")
        try await visit("u4")
        #expect(service.calls("/v1/user") == 4, "evicted another user than the least recently used")
        try await visit("u2")
        #expect(service.calls("/v1/user") == 5, "u2 was not evicted")
    }

    @Test func requirementsOnProfileValues() async throws {
        let service = try await Self.userService()
        atTestEnd { await service.stop() }
        let gateway = try await Self.gateway(service: service)
        atTestEnd { await gateway.stop() }
        let refused = try await gateway.send(.get("/admin/users", token: TestKeys.token(subject: "erin")))
        #expect(refused.status == 403)
        #expect(refused.header("www-authenticate")?.contains("insufficient_scope") == true)
        let admitted = try await gateway.send(.get("/admin/users", token: TestKeys.token(subject: "admin-gina")))
        #expect(admitted.status == 200)
        #expect(admitted.echoedHeader("x-user-super-admin") == ["true"])
        #expect(gateway.backend.requestCount == 1)
    }

    @Test func expiryStaleServingAndOutages() async throws {
        let status = NIOLockedValueBox(200)
        let service = try await Self.userService(status: status)
        atTestEnd { await service.stop() }
        let clock = TestClock()
        let gateway = try await Self.gateway(service: service, clock: clock, ttl: 10, stale: 20)
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "hank", expiresIn: 3600)
        let client = try await gateway.connect()
        #expect(try await client.send(.get("/1", token: token)).status == 200)
        #expect(service.calls("/v1/user") == 1)

        // Past the TTL: served stale at once, refreshed in the background.
        clock.advance(by: 11)
        #expect(try await client.send(.get("/2", token: token)).status == 200)
        #expect(await eventually(timeout: .seconds(30)) { service.calls("/v1/user") == 2 })

        // The auth service goes down: the entry (refreshed at +11) is served stale…
        status.withLockedValue { $0 = 503 }
        clock.advance(by: 15)
        #expect(try await client.send(.get("/3", token: token)).status == 200)
        // …until staleSeconds after it went stale; then 503 with Retry-After.
        clock.advance(by: 30)
        let unavailable = try await client.send(.get("/4", token: token))
        #expect(unavailable.status == 503)
        #expect(unavailable.header("retry-after") != nil)
        await client.close()
    }

    @Test func profileEndpoint401RefusesTheRequest() async throws {
        let status = NIOLockedValueBox(401)
        let service = try await Self.userService(status: status)
        atTestEnd { await service.stop() }
        let gateway = try await Self.gateway(service: service)
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(.get("/x", token: TestKeys.token(subject: "ivan")))
        #expect(response.status == 401)
        #expect(response.header("www-authenticate")?.contains("invalid_token") == true)
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func routesThatNeedNoProfileNeverFetchOne() async throws {
        let service = try await Self.userService()
        atTestEnd { await service.stop() }
        let gateway = try await GatewayFixture.start { config in
            config["authService"] = ["url": .string(service.baseURL), "profile": ["path": "/v1/user"]]
            config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
        }
        atTestEnd { await gateway.stop() }
        #expect(try await gateway.send(.get("/x", token: TestKeys.token())).status == 200)
        #expect(service.calls("/v1/user") == 0)
    }
}
