import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

@Suite("Remote JWKS (real sockets)", .awaitsCleanups)
struct JWKSTests {
    /// A JWKS endpoint serving the public keys of `signers`, or failing with `status`.
    final class KeyEndpoint: Sendable {
        let service: ScriptedAuthService
        private let state = NIOLockedValueBox<(signers: [JWTSigner], status: Int)>(([], 200))
        /// When each request for the key set arrived.
        private let arrivals = NIOLockedValueBox<[ContinuousClock.Instant]>([])

        private init(service: ScriptedAuthService) { self.service = service }

        static func start(_ signers: [JWTSigner]) async throws -> KeyEndpoint {
            let holder = NIOLockedValueBox<KeyEndpoint?>(nil)
            let service = try await ScriptedAuthService.start { _ in
                guard let endpoint = holder.withLockedValue({ $0 }) else {
                    return SimpleResponse(status: .internalServerError)
                }
                endpoint.arrivals.withLockedValue { $0.append(.now) }
                let (signers, status) = endpoint.state.withLockedValue { ($0.signers, $0.status) }
                guard status == 200 else { return SimpleResponse(status: HTTPResponseStatus(statusCode: status)) }
                return .json(.ok, ["keys": .array(signers.map { try! $0.publicJWK() })])
            }
            let endpoint = KeyEndpoint(service: service)
            endpoint.serve(signers)
            holder.withLockedValue { $0 = endpoint }
            return endpoint
        }

        func serve(_ signers: [JWTSigner]) { self.state.withLockedValue { $0.signers = signers } }
        func fail(with status: Int) { self.state.withLockedValue { $0.status = status } }
        var fetches: Int { self.service.calls("/jwks.json") }
        var fetchTimes: [ContinuousClock.Instant] { self.arrivals.withLockedValue { $0 } }
        var url: String { self.service.baseURL + "/jwks.json" }
    }

    /// `callTimeoutMilliseconds`: `authService.timeoutMilliseconds`, which bounds each key fetch
    /// (the default 3 s when nil).
    static func gateway(
        endpoint: KeyEndpoint, minRefetch: Int = 10, refresh: Int = 300, waitUntilReady: Bool = true,
        callTimeoutMilliseconds: Int? = nil
    ) async throws -> GatewayFixture {
        try await GatewayFixture.start(waitUntilReady: waitUntilReady) { config in
            config["eventLoopThreads"] = 2
            // The key fetches' call timeout is the auth service's (3 s unless set): a loaded
            // 2-core machine once took longer to answer a fetch, so tests that do not time
            // a fetch out give it 20 s.
            config["authService"] = [
                "url": .string(endpoint.service.baseURL),
                "timeoutMilliseconds": .number(JSONNumber(callTimeoutMilliseconds ?? 20_000)),
            ]
            config["tokens"] = [
                "issuers": [
                    [
                        "issuer": .string(TestKeys.issuer), "audiences": [.string(TestKeys.audience)],
                        "jwksURL": .string(endpoint.url), "jwksMinRefetchSeconds": .number(JSONNumber(minRefetch)),
                        "jwksRefreshSeconds": .number(JSONNumber(refresh)), "leewaySeconds": 0,
                    ]
                ]
            ]
        }
    }

    static let first = try! JWTSigner.generateRS256(kid: "key-1")
    static let second = JWTSigner(key: .es256(P256.Signing.PrivateKey()), kid: "key-2")
    static let third = JWTSigner(key: .edDSA(Curve25519.Signing.PrivateKey()), kid: "key-3")

    /// docs/operations.md: start-up fetches each `jwksURL` once — the refresh service does not race
    /// the start-up fetch with a fetch of its own.
    @Test func startUpFetchesEachKeySetOnce() async throws {
        let endpoint = try await KeyEndpoint.start([Self.first])
        atTestEnd { await endpoint.service.stop() }
        let gateway = try await Self.gateway(endpoint: endpoint, refresh: 2, waitUntilReady: false)
        atTestEnd { await gateway.stop() }
        let refresher = Task { try await KeyRefreshService(application: gateway.application).run() }
        defer { refresher.cancel() }
        try await poll { gateway.application.isReady }
        // The periodic refresh happens; the second fetch is that refresh, a whole period
        // (2 s) after the start-up fetch — the old race fetched again 1 s after start-up.
        // Measured between the fetches' arrivals, so a late-resuming test cannot miss it.
        // The arrivals themselves: the service counts a call before its script records the
        // arrival, so `fetches` can read 2 while the second time is not written yet.
        try await poll { endpoint.fetchTimes.count >= 2 }
        let times = endpoint.fetchTimes
        try #require(times.count >= 2)
        #expect(times[1] - times[0] >= .milliseconds(1990), "fetched again \(times[1] - times[0]) after start-up")
    }

    @Test func keysAreFetchedBeforeReadinessAndRotationIsPickedUp() async throws {
        let endpoint = try await KeyEndpoint.start([Self.first])
        atTestEnd { await endpoint.service.stop() }
        let gateway = try await Self.gateway(endpoint: endpoint, minRefetch: 1)
        atTestEnd { await gateway.stop() }
        #expect(gateway.application.isReady)
        #expect(endpoint.fetches == 1)
        #expect(try await gateway.send(.get("/a", token: TestKeys.token(signer: Self.first))).status == 200)
        // The issuer rotates to an EC key and an Ed25519 key; a token with the new kid makes
        // the gateway refetch once, then verify.
        endpoint.serve([Self.second, Self.third])
        try await Task.sleep(for: .milliseconds(1100))
        #expect(try await gateway.send(.get("/b", token: TestKeys.token(signer: Self.second))).status == 200)
        #expect(try await gateway.send(.get("/c", token: TestKeys.token(signer: Self.third))).status == 200)
        #expect(endpoint.fetches == 2)
        // The removed key stops verifying at once, even for a token verified (and cached) before.
        #expect(try await gateway.send(.get("/d", token: TestKeys.token(signer: Self.first))).status == 401)
        let health = try await TestConnection.connect(port: gateway.adminPort).send(.get("/healthz"))
        #expect(health.json?["checks"]?["keys"]?[TestKeys.issuer]?["keys"]?.numberValue?.exactInt == 2)
    }

    @Test func theKeySetIsRefreshedPeriodically() async throws {
        let endpoint = try await KeyEndpoint.start([Self.first])
        atTestEnd { await endpoint.service.stop() }
        // A long refetch cooldown: only the periodic refresh can bring the new key in.
        let gateway = try await Self.gateway(endpoint: endpoint, minRefetch: 3600, refresh: 1)
        atTestEnd { await gateway.stop() }
        let refresher = Task { try await KeyRefreshService(application: gateway.application).run() }
        defer { refresher.cancel() }
        #expect(endpoint.fetches == 1)
        endpoint.serve([Self.second])
        // Polled: the new key verifies once the periodic fetch has reached every event loop.
        #expect(
            try await eventually {
                try await gateway.send(.get("/new", token: TestKeys.token(signer: Self.second))).status == 200
            })
        #expect(endpoint.fetches >= 2)
        #expect(try await gateway.send(.get("/old", token: TestKeys.token(signer: Self.first))).status == 401)
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(metrics.contains("auth_gateway_jwks_fetches_total{issuer=\"\(TestKeys.issuer)\",result=\"updated\"}"))
        #expect(metrics.contains("auth_gateway_jwks_key_age_seconds{issuer=\"\(TestKeys.issuer)\"}"))
    }

    @Test func aFloodOfUnknownKidsCostsTheKeyEndpointAtMostOneFetch() async throws {
        let endpoint = try await KeyEndpoint.start([Self.first])
        atTestEnd { await endpoint.service.stop() }
        // 60 requests at once on a loaded machine: the one refetch they wait for must not time
        // out (a timed-out refetch is a 503, rightly, but not what this test is about).
        let gateway = try await Self.gateway(endpoint: endpoint, minRefetch: 60, callTimeoutMilliseconds: 20_000)
        atTestEnd { await gateway.stop() }
        #expect(endpoint.fetches == 1)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<60 {
                group.addTask {
                    let forger = JWTSigner(key: .es256(P256.Signing.PrivateKey()), kid: "forged-\(index)")
                    return try await gateway.send(.get("/f", token: TestKeys.token(signer: forger))).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 401 })
        #expect(endpoint.fetches == 2)
        #expect(gateway.backend.requestCount == 0)
        // And valid tokens keep working throughout.
        #expect(try await gateway.send(.get("/ok", token: TestKeys.token(signer: Self.first))).status == 200)
    }

    @Test func lastGoodKeysSurviveAnEndpointOutage() async throws {
        let endpoint = try await KeyEndpoint.start([Self.first])
        atTestEnd { await endpoint.service.stop() }
        let gateway = try await Self.gateway(endpoint: endpoint, minRefetch: 1)
        atTestEnd { await gateway.stop() }
        endpoint.fail(with: 503)
        try await Task.sleep(for: .milliseconds(1100))
        // An unknown kid makes the gateway try the endpoint, which fails: the gateway could not
        // check, so 503; the known key still verifies.
        let unknown = try await gateway.send(.get("/u", token: TestKeys.token(signer: Self.second)))
        #expect(unknown.status == 503)
        #expect(endpoint.fetches == 2)
        #expect(try await gateway.send(.get("/k", token: TestKeys.token(signer: Self.first))).status == 200)
        let health = try await TestConnection.connect(port: gateway.adminPort).send(.get("/healthz"))
        #expect(health.json?["status"]?.stringValue == "degraded")
        #expect(health.json?["checks"]?["keys"]?[TestKeys.issuer]?["lastError"]?.stringValue == "HTTP 503")
    }

    @Test func notReadyUntilTheFirstFetchSucceeds() async throws {
        let endpoint = try await KeyEndpoint.start([Self.first])
        atTestEnd { await endpoint.service.stop() }
        endpoint.fail(with: 500)
        let gateway = try await Self.gateway(endpoint: endpoint, minRefetch: 1, waitUntilReady: false)
        atTestEnd { await gateway.stop() }
        // The first fetch has been tried (and failed): ordered by the endpoint's count, not by
        // a sleep.
        try await poll { endpoint.fetches >= 1 }
        #expect(!gateway.application.isReady)
        let admin = try await TestConnection.connect(port: gateway.adminPort)
        #expect(try await admin.send(.get("/readyz")).status == 503)
        #expect(try await admin.send(.get("/healthz")).status == 503)
        // Requests meanwhile: 503 (keys unavailable), not 401.
        let early = try await gateway.send(.get("/e", token: TestKeys.token(signer: Self.first)))
        #expect(early.status == 503)
        #expect(early.json?["type"]?.stringValue == "urn:auth-gateway:problem:keys.unavailable")
        endpoint.fail(with: 200)
        // Past jwksMinRefetchSeconds (a real bound: the fixture runs no KeyRefreshService, so the
        // request's unknown-issuer wait makes the fetch), then ready once it has succeeded.
        try await Task.sleep(for: .milliseconds(1100))
        #expect(try await gateway.send(.get("/l", token: TestKeys.token(signer: Self.first))).status == 200)
        #expect(gateway.application.isReady)
        #expect(try await admin.send(.get("/readyz")).status == 200)
        await admin.close()
    }
}
