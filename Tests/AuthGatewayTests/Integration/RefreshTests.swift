import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// A RainMaker-style auth service that rotates refresh tokens and refuses any reuse — the
/// behaviour that signs users of racing gateways out.
final class RotatingRainMaker: Sendable {
    let service: ScriptedAuthService
    private let valid = NIOLockedValueBox<Set<String>>([])
    private let mode = NIOLockedValueBox<Mode>(.normal)
    private let signer = NIOLockedValueBox<JWTSigner>(TestKeys.rsa)
    /// Holds answers while the test parks requests on them.
    let gate = ReplyGate()

    enum Mode: Sendable {
        case normal
        case status(Int)
        case delayMilliseconds(Int64)
        case withoutAccessToken
    }

    private init(service: ScriptedAuthService) { self.service = service }

    static func start(delayMilliseconds: Int64 = 0) async throws -> RotatingRainMaker {
        let holder = NIOLockedValueBox<RotatingRainMaker?>(nil)
        let service = try await ScriptedAuthService.start { request, eventLoop in
            guard let self = holder.withLockedValue({ $0 }) else {
                return eventLoop.makeSucceededFuture(SimpleResponse(status: .internalServerError))
            }
            let response = self.answer(request)
            let mode = self.mode.withLockedValue { $0 }
            var delay = delayMilliseconds
            if case .delayMilliseconds(let extra) = mode { delay = extra }
            guard delay > 0 else { return self.gate.pass(response, on: eventLoop) }
            return eventLoop.scheduleTask(in: .milliseconds(delay)) { response }.futureResult
        }
        let rainmaker = RotatingRainMaker(service: service)
        holder.withLockedValue { $0 = rainmaker }
        return rainmaker
    }

    /// A new valid refresh token (as if the user had logged in).
    func issueRefreshToken() -> String {
        let token = "rt-" + UUID().uuidString.lowercased()
        self.valid.withLockedValue { _ = $0.insert(token) }
        return token
    }

    func set(_ mode: Mode) { self.mode.withLockedValue { $0 = mode } }

    /// Signs the access tokens it issues with `signer` from now on (a key rotation).
    func sign(with signer: JWTSigner) { self.signer.withLockedValue { $0 = signer } }

    var refreshCalls: Int { self.service.calls("/v1/login") }

    private func answer(_ request: SimpleRequest) -> SimpleResponse {
        if case .status(let code) = self.mode.withLockedValue({ $0 }) {
            return .json(HTTPResponseStatus(statusCode: code), ["status": "failure"])
        }
        guard request.path == "/v1/login", let body = request.json, case .string(let userName)? = body["user_name"],
            case .string(let refreshToken)? = body["refreshtoken"]
        else {
            return .json(.badRequest, ["status": "failure", "description": "bad request"])
        }
        let accepted = self.valid.withLockedValue { $0.remove(refreshToken) != nil }
        guard accepted else {
            return .json(.unauthorized, ["status": "failure", "description": "Invalid refresh token"])
        }
        let rotated = self.issueRefreshToken()
        if case .withoutAccessToken = self.mode.withLockedValue({ $0 }) {
            return .json(.ok, ["status": "success", "refreshtoken": .string(rotated)])
        }
        let subject = String(userName.split(separator: "@").first ?? "")
        let accessToken = TestKeys.token(signer: self.signer.withLockedValue { $0 }, subject: subject, expiresIn: 300)
        return .json(
            .ok,
            [
                "status": "success", "description": "Session extended", "accesstoken": .string(accessToken),
                "refreshtoken": .string(rotated),
            ])
    }
}

@Suite("Transparent session refresh (real sockets)", .awaitsCleanups)
struct RefreshTests {
    static func gateway(
        authService: String, clock: TestClock = TestClock(), threads: Int = 2, grace: Int = 2, timeout: Int = 10_000
    ) async throws -> GatewayFixture {
        try await GatewayFixture.start(clock: clock) { config in
            config["eventLoopThreads"] = .number(JSONNumber(threads))
            config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
            config["authService"] = [
                "url": .string(authService),
                "timeoutMilliseconds": .number(JSONNumber(timeout)),
                "refresh": ["graceSeconds": .number(JSONNumber(grace)), "maxExpiredSeconds": 3600],
            ]
        }
    }

    /// The metric line `name` of the admin listener's `/metrics`, as a number (nil if absent).
    static func metric(_ name: String, adminPort: Int) async throws -> Double? {
        let text = try await TestConnection.connect(port: adminPort).send(.get("/metrics")).text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }) else { return nil }
        return Double(line.dropFirst(name.count + 1))
    }

    /// Deterministic single flight: the auth service holds its answer until all 100 requests
    /// are parked (the one that called plus 99 joiners, read from `/metrics`), so none can
    /// arrive after the outcome and pass as a grace hit or a second call.
    @Test func concurrentRequestsWithOneExpiredPairCauseExactlyOneRefresh() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        let clock = TestClock()
        // A generous auth-service timeout: the answer is held while 100 clients connect. A grace
        // period longer than a loaded machine takes to collect the 100 responses (the clock
        // runs in real time; the test moves it past the grace period below).
        let gateway = try await Self.gateway(
            authService: rainmaker.service.baseURL, clock: clock, grace: 300, timeout: 120_000)
        atTestEnd { await gateway.stop() }
        let expired = TestKeys.token(subject: "alice", expiresIn: -60)
        let refreshToken = rainmaker.issueRefreshToken()
        let headers = [("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", refreshToken)]
        let joins = "auth_gateway_refresh_single_flight_joins_total"
        rainmaker.gate.hold()
        let requests = Task {
            try await withThrowingTaskGroup(of: TestResponse.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        let client = try await gateway.connect()
                        return try await withCleanup({ await client.close() }) { () async throws in
                            return try await client.send(
                                TestRequest(.GET, "/r/\(index)", headers: headers), timeout: .seconds(180))
                        }
                    }
                }
                return try await group.reduce(into: [TestResponse]()) { $0.append($1) }
            }
        }
        let parked = try await eventually(timeout: .seconds(60)) {
            try await Self.metric(joins, adminPort: gateway.adminPort) == 99
        }
        let joinedWhileHeld = try await Self.metric(joins, adminPort: gateway.adminPort)
        #expect(parked, "joins while the answer was held: \(String(describing: joinedWhileHeld))")
        // The one call may still be on its way to the service.
        #expect(await eventually(timeout: .seconds(30)) { rainmaker.refreshCalls == 1 })
        #expect(gateway.backend.requestCount == 0)
        rainmaker.gate.release()
        let responses = try await requests.value
        #expect(responses.filter { $0.status == 200 }.count == 100)
        #expect(rainmaker.refreshCalls == 1)
        #expect(try await Self.metric(joins, adminPort: gateway.adminPort) == 99)
        let newTokens = Set(responses.compactMap { $0.header("x-access-token") })
        #expect(newTokens.count == 1)
        let newToken = try #require(newTokens.first)
        #expect(newToken != expired)
        // The backend got the new token in place of the old, never the refresh token.
        #expect(responses.allSatisfy { $0.echoedHeader("authorization") == ["Bearer \(newToken)"] })
        #expect(responses.allSatisfy { $0.echoedHeader("x-refresh-token").isEmpty })
        #expect(responses.allSatisfy { $0.echoedHeader("x-user-subject") == ["alice"] })
        let rotated = Set(responses.compactMap { $0.header("x-refresh-token") })
        #expect(rotated.count == 1 && rotated.first != refreshToken)

        // A straggler with the old pair inside graceSeconds: success, no new call.
        let late = try await gateway.send(TestRequest(.GET, "/late", headers: headers))
        #expect(late.status == 200)
        #expect(late.header("x-access-token") == newToken)
        #expect(rainmaker.refreshCalls == 1)

        // After the grace period the old refresh token is redeemed again, and the rotating
        // service refuses its reuse: 401.
        clock.advance(by: 301)
        let tooLate = try await gateway.send(TestRequest(.GET, "/too-late", headers: headers))
        #expect(tooLate.status == 401)
        #expect(tooLate.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.refresh_rejected")
        #expect(rainmaker.refreshCalls == 2)

        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(metrics.contains("auth_gateway_refreshes_total{outcome=\"refreshed\"} 1\n"))
        #expect(metrics.contains("auth_gateway_refreshes_total{outcome=\"rejected\"} 1\n"))
        #expect(metrics.contains("auth_gateway_refresh_single_flight_joins_total 99\n"))
        #expect(metrics.contains("auth_gateway_refresh_grace_hits_total 1\n"))
    }

    /// The provider rotated its signing key, and a refreshed token is the first signed with
    /// the new one: the gateway refetches the JWKS and accepts it, instead of signing the
    /// user out for its own stale key set.
    @Test func aRefreshedTokenSignedWithARotatedKeyIsAcceptedAfterARefetch() async throws {
        let endpoint = try await JWKSTests.KeyEndpoint.start([JWKSTests.first])
        atTestEnd { await endpoint.service.stop() }
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        let clock = TestClock()
        let gateway = try await GatewayFixture.start(clock: clock) { config in
            config["tokens"] = [
                "issuers": [
                    [
                        "issuer": .string(TestKeys.issuer), "audiences": [.string(TestKeys.audience)],
                        "leewaySeconds": 0,
                        "jwksURL": .string(endpoint.url), "jwksMinRefetchSeconds": 1,
                    ]
                ]
            ]
            config["authService"] = ["url": .string(rainmaker.service.baseURL), "refresh": ["maxExpiredSeconds": 3600]]
        }
        atTestEnd { await gateway.stop() }
        #expect(endpoint.fetches == 1)
        endpoint.serve([JWKSTests.first, JWKSTests.second])
        rainmaker.sign(with: JWKSTests.second)
        // Past the refetch cooldown since the start-up fetch.
        clock.advance(by: 2)
        let expired = TestKeys.token(signer: JWKSTests.first, subject: "alice", expiresIn: -60)
        let response = try await gateway.send(
            TestRequest(
                .GET, "/rotated",
                headers: [("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", rainmaker.issueRefreshToken())])
        )
        #expect(response.status == 200)
        let newToken = try #require(response.header("x-access-token"))
        #expect(response.echoedHeader("authorization") == ["Bearer \(newToken)"])
        #expect(endpoint.fetches == 2)
        #expect(rainmaker.refreshCalls == 1)
    }

    @Test func cookieSessionsAreRefreshedAndSignedOutWithCookies() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        let gateway = try await Self.gateway(authService: rainmaker.service.baseURL)
        atTestEnd { await gateway.stop() }
        let expired = TestKeys.token(subject: "carol", expiresIn: -60)
        let refreshToken = rainmaker.issueRefreshToken()
        let response = try await gateway.send(
            TestRequest(
                .GET, "/c", headers: [("Cookie", "theme=dark; access_token=\(expired); refresh_token=\(refreshToken)")])
        )
        #expect(response.status == 200)
        let cookies = response.headers["set-cookie"]
        #expect(cookies.count == 2)
        let access = try #require(cookies.first { $0.hasPrefix("access_token=") })
        #expect(access.contains("; Path=/") && access.contains("; HttpOnly") && access.contains("; SameSite=Lax"))
        #expect(!access.contains("Secure"))
        #expect(
            cookies.contains { $0.hasPrefix("refresh_token=rt-") && !$0.hasPrefix("refresh_token=\(refreshToken)") })
        #expect(response.header("x-access-token") == nil)
        let newAccess = String(access.dropFirst("access_token=".count).prefix { $0 != ";" })
        #expect(response.echoedHeader("cookie") == ["theme=dark; access_token=\(newAccess)"])

        // A refresh token the service refuses: 401 and cookies cleared (sign-out).
        let refused = try await gateway.send(
            TestRequest(.GET, "/c", headers: [("Cookie", "access_token=\(expired); refresh_token=rt-unknown")]))
        #expect(refused.status == 401)
        let cleared = refused.headers["set-cookie"]
        #expect(cleared.contains { $0.hasPrefix("access_token=;") && $0.contains("Max-Age=0") })
        #expect(cleared.contains { $0.hasPrefix("refresh_token=;") && $0.contains("Max-Age=0") })
    }

    @Test(arguments: ["down", "503", "429", "slow"])
    func unavailableAuthServiceMeans503AndNothingCleared(_ failure: String) async throws {
        let rainmaker = try await RotatingRainMaker.start()
        // "down" is a port that refuses connections: a stopped server's port could be bound
        // meanwhile by another test's auth service, which would answer.
        let dead = try RefusingPort()
        defer { withExtendedLifetime(dead) {} }
        let gateway = try await Self.gateway(
            authService: failure == "down" ? dead.url : rainmaker.service.baseURL, timeout: 300)
        atTestEnd { await gateway.stop() }
        switch failure {
        case "down": break
        case "503": rainmaker.set(.status(503))
        case "429": rainmaker.set(.status(429))
        default: rainmaker.set(.delayMilliseconds(1500))
        }
        let expired = TestKeys.token(expiresIn: -60)
        let response = try await gateway.send(
            TestRequest(
                .GET, "/u",
                headers: [("Cookie", "access_token=\(expired); refresh_token=\(rainmaker.issueRefreshToken())")]))
        #expect(response.status == 503)
        #expect(response.header("retry-after") != nil)
        #expect(response.headers["set-cookie"].isEmpty)
        #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:auth_service.unavailable")
        #expect(gateway.backend.requestCount == 0)
        await rainmaker.service.stop()
    }

    @Test func noRefreshForForgedExpiredOrTooOldTokens() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        let gateway = try await Self.gateway(authService: rainmaker.service.baseURL)
        atTestEnd { await gateway.stop() }
        let refreshToken = rainmaker.issueRefreshToken()
        // Expired and signed by a key the gateway does not trust.
        let forged = TestKeys.token(signer: TestKeys.otherRSA, expiresIn: -60)
        let forgedResponse = try await gateway.send(
            TestRequest(
                .GET, "/f", headers: [("Authorization", "Bearer \(forged)"), ("X-Refresh-Token", refreshToken)]))
        #expect(forgedResponse.status == 401)
        #expect(forgedResponse.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.bad_signature")
        // Expired longer ago than maxExpiredSeconds (3600).
        let ancient = TestKeys.token(expiresIn: -7200)
        let ancientResponse = try await gateway.send(
            TestRequest(
                .GET, "/f", headers: [("Authorization", "Bearer \(ancient)"), ("X-Refresh-Token", refreshToken)]))
        #expect(ancientResponse.status == 401)
        #expect(ancientResponse.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.expired")
        // Expired without a refresh token.
        #expect(try await gateway.send(.get("/f", token: TestKeys.token(expiresIn: -60))).status == 401)
        #expect(rainmaker.refreshCalls == 0)
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func aSuccessWithoutAnAccessTokenIsARejection() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        rainmaker.set(.withoutAccessToken)
        let gateway = try await Self.gateway(authService: rainmaker.service.baseURL)
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(
            TestRequest(
                .GET, "/w",
                headers: [
                    ("Authorization", "Bearer \(TestKeys.token(expiresIn: -60))"),
                    ("X-Refresh-Token", rainmaker.issueRefreshToken()),
                ]))
        #expect(response.status == 401)
        #expect(rainmaker.refreshCalls == 1)
    }

    @Test func oauth2RefreshSendsTheRFC6749FormWithBasicClientAuthentication() async throws {
        let service = try await ScriptedAuthService.start { request in
            guard request.path == "/oauth2/token" else { return SimpleResponse(status: .notFound) }
            let form = Dictionary(
                uniqueKeysWithValues: request.bodyText.split(separator: "&").map { pair -> (String, String) in
                    let parts = pair.split(separator: "=", maxSplits: 1).map {
                        String($0).removingPercentEncoding ?? ""
                    }
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                })
            guard form["grant_type"] == "refresh_token", form["refresh_token"] == "rt/with+special",
                request.headers.first(name: "authorization") == "Basic "
                    + Data("gateway%3A1:s%C3%A9cret%2B".utf8).base64EncodedString(),
                request.headers.first(name: "content-type") == "application/x-www-form-urlencoded"
            else {
                return .json(.badRequest, ["error": "invalid_grant"])
            }
            return .json(
                .ok,
                ["access_token": .string(TestKeys.token(subject: "dave")), "token_type": "Bearer", "expires_in": 300])
        }
        atTestEnd { await service.stop() }
        let gateway = try await GatewayFixture.start { config in
            config["authService"] = [
                "url": .string(service.baseURL),
                "refresh": [
                    "protocol": "oauth2", "clientId": "gateway:1", "clientSecret": "sécret+",
                    "refreshTokenSources": [["header": "X-Refresh-Token"]],
                ],
            ]
        }
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(
            TestRequest(
                .GET, "/o",
                headers: [
                    ("Authorization", "Bearer \(TestKeys.token(expiresIn: -60))"),
                    ("X-Refresh-Token", "rt/with+special"),
                ]))
        #expect(response.status == 200)
        #expect(response.header("x-access-token") != nil)
        // Not rotated: no new refresh token header.
        #expect(response.header("x-refresh-token") == nil)
        #expect(service.calls("/oauth2/token") == 1)

        let refused = try await gateway.send(
            TestRequest(
                .GET, "/o",
                headers: [("Authorization", "Bearer \(TestKeys.token(expiresIn: -60))"), ("X-Refresh-Token", "other")]))
        #expect(refused.status == 401)
    }

    /// `exp` at the extremes (see the `exp-huge-*` vectors): a finite double far in the
    /// future is valid, a huge negative one is expired so long ago that no `maxExpiredSeconds`
    /// covers it — no refresh call, no overflow, the gateway keeps serving.
    @Test(arguments: [3600, Int(Int32.max)])
    func extremeExpiryValuesAreHandledAndBoundTheRefreshWindow(_ maxExpiredSeconds: Int) async throws {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        let gateway = try await GatewayFixture.start { config in
            config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
            config["authService"] = [
                "url": .string(rainmaker.service.baseURL),
                "timeoutMilliseconds": 10_000,
                "refresh": ["maxExpiredSeconds": .number(JSONNumber(maxExpiredSeconds))],
            ]
        }
        atTestEnd { await gateway.stop() }
        func token(exp literal: String, subject: String) -> String {
            TestKeys.token(
                subject: subject, extra: ["exp": .number(JSONNumber(text: literal, double: Double(literal)!))])
        }
        let client = try await gateway.connect()
        // Far future: valid, with or without a refresh token, and no refresh.
        for literal in ["1e300", "18446744073709551617", "9223372036854775808"] {
            let response = try await client.send(
                TestRequest(
                    .GET, "/far",
                    headers: [
                        ("Authorization", "Bearer \(token(exp: literal, subject: "far"))"),
                        ("X-Refresh-Token", rainmaker.issueRefreshToken()),
                    ])
            )
            #expect(response.status == 200, "exp \(literal)")
            #expect(response.echoedHeader("x-user-subject") == ["far"])
            #expect(response.header("x-access-token") == nil)
        }
        // Absurdly long ago: expired beyond any refresh window; the refresh token is not redeemed.
        for literal in ["-1e300", "-18446744073709551617", "-9223372036854775809"] {
            let response = try await client.send(
                TestRequest(
                    .GET, "/past",
                    headers: [
                        ("Authorization", "Bearer \(token(exp: literal, subject: "past"))"),
                        ("X-Refresh-Token", rainmaker.issueRefreshToken()),
                    ])
            )
            #expect(response.status == 401, "exp \(literal)")
            #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.expired")
        }
        #expect(rainmaker.refreshCalls == 0)
        // The window itself still works at both ends: exp 0 (1970) is refreshed only when the
        // window reaches back that far (Int32.max seconds, ~68 years).
        let epoch = try await client.send(
            TestRequest(
                .GET, "/epoch",
                headers: [
                    ("Authorization", "Bearer \(token(exp: "0", subject: "epoch"))"),
                    ("X-Refresh-Token", rainmaker.issueRefreshToken()),
                ])
        )
        let reachesEpoch = maxExpiredSeconds == Int(Int32.max)
        #expect(epoch.status == (reachesEpoch ? 200 : 401))
        #expect(rainmaker.refreshCalls == (reachesEpoch ? 1 : 0))
        #expect(gateway.backend.requestCount == 3 + (reachesEpoch ? 1 : 0))
        await client.close()
    }
}
