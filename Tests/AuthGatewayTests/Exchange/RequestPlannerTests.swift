import Foundation
import NIOEmbedded
import NIOHTTP1
import Testing

import AuthGatewayTesting

@testable import AuthGateway

/// `RequestPlanner` on one embedded worker, without sockets: the order it decides in — route,
/// then authentication, then rate limits, then identity headers and the token's fate on the
/// way to the backend (docs/architecture.md). Every request here is decided synchronously (a
/// token of the test issuer's static keys, no auth service call).
@Suite("RequestPlanner")
struct RequestPlannerTests {
    let loop = EmbeddedEventLoop()
    let connection = ClientConnectionInfo(peerIP: "192.0.2.1", peerIsTrustedProxy: false, isTLS: false)

    /// The base test configuration (`GatewayFixture.baseConfiguration`), its routes replaced
    /// by `/api/` (auth required) and `/open/` (auth optional), then `configure`d.
    private func planner(_ configure: (inout JSONObject) -> Void = { _ in }) throws -> RequestPlanner {
        try self.worker(configure).planner
    }

    private func worker(
        _ configure: (inout JSONObject) -> Void = { _ in }
    ) throws -> (worker: Worker, planner: RequestPlanner) {
        let configuration = try ApplicationTesting.configuration { document in
            document["routes"] = [
                ["name": "api", "pathPrefix": "/api/", "backend": "api", "auth": "required"],
                ["name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "optional"],
            ]
            configure(&document)
        }
        let worker = try GatewayApplication.makeWorker(
            configuration: configuration, eventLoop: self.loop, clock: { Date().timeIntervalSince1970 },
            connector: SocketConnector())
        return (worker, RequestPlanner(environment: worker, snapshot: worker.snapshot, connection: self.connection))
    }

    /// The plan for a GET of `path` with `headers`; fails the test if it is not decided at once.
    private func plan(
        _ planner: RequestPlanner, _ path: String, _ headers: [(String, String)] = []
    ) throws -> RequestPlan {
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: path, headers: HTTPHeaders([("Host", "gw")] + headers))
        switch planner.plan(head: head, framing: .none, requestID: "req-1", now: Date().timeIntervalSince1970) {
        case .ready(let plan): return plan
        case .pending: throw PlannerTestFailure("the plan for \(path) was not decided at once")
        }
    }

    /// The plan for a GET of `path` that waits on a future (a refresh), once the embedded loop
    /// has run it.
    private func pendingPlan(
        _ planner: RequestPlanner, _ path: String, _ headers: [(String, String)]
    ) throws -> RequestPlan {
        let head = HTTPRequestHead(
            version: .http1_1, method: .GET, uri: path, headers: HTTPHeaders([("Host", "gw")] + headers))
        switch planner.plan(head: head, framing: .none, requestID: "req-1", now: Date().timeIntervalSince1970) {
        case .ready(let plan):
            return plan
        case .pending(let future, _):
            self.loop.run()
            var result: Result<RequestPlan, any Error>?
            future.whenComplete { result = $0 }
            self.loop.run()
            guard let result else { throw PlannerTestFailure("the plan for \(path) never completed") }
            return try result.get()
        }
    }

    private static func bearer(_ subject: String = "user-42") -> (String, String) {
        ("Authorization", "Bearer \(TestKeys.token(subject: subject))")
    }

    /// The status of a local answer, nil when the request is forwarded.
    private static func status(_ plan: RequestPlan) -> Int? {
        switch plan {
        case .respond(let response, _, _): return Int(response.status.code)
        case .forward: return nil
        }
    }

    /// The problem type of a local answer (`urn:auth-gateway:problem:<code>`).
    private static func problem(_ plan: RequestPlan) -> String? {
        guard case .respond(let response, _, _) = plan else { return nil }
        return (try? JSONValue(parsing: response.body))?["type"]?.stringValue
    }

    /// The head that goes to the backend.
    private static func upstream(_ plan: RequestPlan) throws -> HTTPRequestHead {
        guard case .forward(let forward) = plan else {
            throw PlannerTestFailure("not forwarded: \(Self.status(plan).map(String.init) ?? "?")")
        }
        return forward.head.httpRequestHead
    }

    // MARK: Order

    @Test func anUnroutedRequestIs404BeforeAuthentication() throws {
        let planner = try self.planner()
        // No token at all: still 404, not 401 — nothing is authenticated for a route that
        // does not exist.
        let plan = try self.plan(planner, "/nowhere")
        #expect(Self.status(plan) == 404)
        #expect(Self.problem(plan) == "urn:auth-gateway:problem:route.not_found")
        #expect(Self.status(try self.plan(planner, "/api/x")) == 401)
    }

    /// A limit of one request per key: a rejected request is not counted (authentication
    /// comes first), and the limit is keyed by who authenticated.
    @Test func rateLimitsComeAfterAuthentication() throws {
        let planner = try self.planner { document in
            document["rateLimits"] = [
                [
                    "name": "per-user", "key": "claims.sub",
                    "requestsPerSecond": .number(JSONNumber(text: "0.001", double: 0.001)),
                    "burst": 1, "routes": ["api"],
                ]
            ]
        }
        // Rejected by authentication: 401, however often — the limit never sees them.
        for _ in 0..<3 {
            #expect(Self.status(try self.plan(planner, "/api/x")) == 401)
            #expect(Self.status(try self.plan(planner, "/api/x", [("Authorization", "Bearer not-a-jwt")])) == 401)
        }
        // Each subject has its own bucket: the first request of each passes…
        #expect(Self.status(try self.plan(planner, "/api/x", [Self.bearer("alice")])) == nil)
        #expect(Self.status(try self.plan(planner, "/api/x", [Self.bearer("bob")])) == nil)
        // …and the second of the same subject is refused.
        let refused = try self.plan(planner, "/api/x", [Self.bearer("alice")])
        #expect(Self.status(refused) == 429)
        // Still authentication first: without a token 401, not 429.
        #expect(Self.status(try self.plan(planner, "/api/x")) == 401)
    }

    // MARK: Identity headers

    @Test func identityHeadersGoOnlyWithAnAuthenticatedRequest() throws {
        let planner = try self.planner { document in
            document["identityHeaders"] = ["X-User-Id": "claims.sub"]
        }
        let authenticated = try Self.upstream(try self.plan(planner, "/open/x", [Self.bearer("alice")]))
        #expect(authenticated.headers["X-User-Id"] == ["alice"])
        // Anonymous on an optional route: forwarded, without identity headers — and one the
        // client sent itself never gets through.
        let anonymous = try Self.upstream(try self.plan(planner, "/open/x", [("X-User-Id", "mallory")]))
        #expect(anonymous.headers["X-User-Id"].isEmpty)
    }

    // MARK: The token's fate

    @Test func refreshTokensAreRemovedFromEveryForwardedRequest() throws {
        let planner = try self.planner { document in
            document["authService"] = [
                "url": "http://127.0.0.1:9",
                "refresh": ["refreshTokenSources": [["header": "X-Refresh-Token"], ["cookie": "refresh_token"]]],
            ]
        }
        let cookie = ("Cookie", "refresh_token=rt-2; theme=dark")
        let authenticated = try Self.upstream(
            try self.plan(planner, "/api/x", [Self.bearer(), ("X-Refresh-Token", "rt-1"), cookie]))
        #expect(authenticated.headers["X-Refresh-Token"].isEmpty)
        #expect(authenticated.headers["Cookie"].joined().contains("refresh_token") == false)
        #expect(authenticated.headers["Cookie"].joined().contains("theme=dark"))
        // Anonymous requests too.
        let anonymous = try Self.upstream(try self.plan(planner, "/open/x", [("X-Refresh-Token", "rt-1"), cookie]))
        #expect(anonymous.headers["X-Refresh-Token"].isEmpty)
        #expect(anonymous.headers["Cookie"].joined().contains("refresh_token") == false)
    }

    /// An expired token refreshed: the backend gets the new access token where the old one
    /// was, and the client gets it in the response headers. The auth service is never
    /// called: its answer for the refresh token is already in the refresh store's grace table.
    @Test func aRefreshedAccessTokenReplacesTheExpiredOneUpstream() throws {
        let (worker, planner) = try self.worker { document in
            document["authService"] = [
                "url": "http://127.0.0.1:9",
                "refresh": ["maxExpiredSeconds": 3600, "refreshTokenSources": [["header": "X-Refresh-Token"]]],
            ]
        }
        let fresh = TestKeys.token(subject: "alice")
        let remembered = worker.shared.authentication.refreshStore.outcome(
            for: TokenDigest(of: "rt-1"[...]), graceSeconds: 30, callTimeoutMilliseconds: 1000,
            now: Date().timeIntervalSince1970, eventLoop: self.loop, joined: {}
        ) { self.loop.makeSucceededFuture(.refreshed(accessToken: fresh, refreshToken: "rt-2")) }
        self.loop.run()
        #expect(try remembered.wait().0 == .refreshed(accessToken: fresh, refreshToken: "rt-2"))

        let expired = TestKeys.token(subject: "alice", expiresIn: -60)
        let plan = try self.pendingPlan(
            planner, "/api/x", [("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", "rt-1")])
        guard case .forward(let forward) = plan else {
            Issue.record("not forwarded: \(Self.status(plan).map(String.init) ?? "?") \(Self.problem(plan) ?? "")")
            return
        }
        #expect(forward.head.httpRequestHead.headers["Authorization"] == ["Bearer \(fresh)"])
        #expect(forward.head.httpRequestHead.headers["X-Refresh-Token"].isEmpty)
        #expect(forward.responseHeaders.contains { $0.name == "X-Access-Token" && $0.value == fresh })
    }

    /// A browser session's access token reaches the backend as `Authorization: Bearer`, and
    /// the session cookie does not.
    @Test func aSessionsAccessTokenBecomesABearerToken() throws {
        let (worker, planner) = try self.worker { document in
            // The provider's issuer (discovered, never fetched here); the session's token is the
            // test issuer's, verified with its static keys.
            let testIssuer = document["tokens"]?["issuers"]?.arrayValue?.first ?? nil
            document["tokens"] = [
                "issuers": [
                    testIssuer, ["issuer": "https://idp.example.com", "discovery": true, "audiences": ["gateway"]],
                ]
            ]
            document["browserSignIn"] = [
                "issuer": "https://idp.example.com", "clientId": "gateway", "clientSecret": "s",
                "publicBaseURL": "http://127.0.0.1:8080",
            ]
            document["routes"] = [["name": "app", "pathPrefix": "/", "backend": "api", "signIn": true]]
        }
        let handle = SessionHandle.generate()
        let token = TestKeys.token(subject: "alice")
        let now = Date().timeIntervalSince1970
        worker.shared.authentication.sessions.create(
            handle.digest,
            SessionRecord(
                subject: "alice", providerSessionID: nil, idToken: "id", accessToken: token, refreshToken: nil,
                createdAt: now, lastUsedAt: now))
        let plan = try self.pendingPlan(planner, "/app", [("Cookie", "gateway-session=\(handle.value); theme=dark")])
        guard case .forward(let forward) = plan else {
            Issue.record("not forwarded: \(Self.status(plan).map(String.init) ?? "?") \(Self.problem(plan) ?? "")")
            return
        }
        #expect(forward.head.httpRequestHead.headers["Authorization"] == ["Bearer \(token)"])
        #expect(forward.head.httpRequestHead.headers["Cookie"].joined().contains("gateway-session") == false)
        #expect(forward.head.httpRequestHead.headers["Cookie"].joined().contains("theme=dark"))
        // The same decision answered to another proxy (authorizer mode) names the same field.
        let input = DecisionInput(
            method: .GET, target: RequestTarget(path: "/app", query: nil, host: CanonicalHost(name: "gw", port: nil)),
            headers: HTTPHeaders([("Host", "gw"), ("Cookie", "gateway-session=\(handle.value)")]),
            connection: ClientConnectionInfo(peerIP: "127.0.0.1", peerIsTrustedProxy: false, isTLS: false), now: now)
        guard case .ready(.allowed(let allowed)) = planner.decide(input, requestID: "req-2") else {
            Issue.record("the session's decision was not an immediate allow")
            return
        }
        #expect(
            AuthorizerEndpoints.upstreamTokenHeaders(allowed.tokenEdits).map { "\($0.name): \($0.value)" } == [
                "Authorization: Bearer \(token)"
            ])
    }

    @Test func theAccessTokenIsForwardedUnlessTheRouteSaysNot() throws {
        let planner = try self.planner { document in
            document["routes"] = [
                ["name": "api", "pathPrefix": "/api/", "backend": "api"],
                ["name": "private", "pathPrefix": "/private/", "backend": "api", "forwardAccessToken": false],
            ]
        }
        let token = Self.bearer()
        let forwarded = try Self.upstream(try self.plan(planner, "/api/x", [token]))
        #expect(forwarded.headers["Authorization"] == [token.1])
        let withheld = try Self.upstream(try self.plan(planner, "/private/x", [token]))
        #expect(withheld.headers["Authorization"].isEmpty)
    }
}

struct PlannerTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
