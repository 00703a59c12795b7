import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// A scripted RFC 7662 endpoint: answers from a table of tokens, or fails as told.
final class ScriptedIntrospection: Sendable {
    let service: ScriptedAuthService
    let gate = ReplyGate()
    private let answers = NIOLockedValueBox<[String: JSONValue]>([:])
    private let mode = NIOLockedValueBox<Mode>(.normal)

    enum Mode: Sendable {
        case normal
        case status(Int)
        case notJSON
    }

    private init(service: ScriptedAuthService) { self.service = service }

    static func start() async throws -> ScriptedIntrospection {
        let holder = NIOLockedValueBox<ScriptedIntrospection?>(nil)
        let service = try await ScriptedAuthService.start { request, eventLoop in
            guard let self = holder.withLockedValue({ $0 }) else {
                return eventLoop.makeSucceededFuture(SimpleResponse(status: .internalServerError))
            }
            switch self.mode.withLockedValue({ $0 }) {
            case .status(let code):
                return eventLoop.makeSucceededFuture(
                    .json(HTTPResponseStatus(statusCode: code), ["error": "server_error"]))
            case .notJSON:
                return eventLoop.makeSucceededFuture(
                    SimpleResponse(status: .ok, body: ByteBuffer(string: "<html>maintenance</html>")))
            case .normal:
                return self.gate.pass(self.answer(request), on: eventLoop)
            }
        }
        let introspection = ScriptedIntrospection(service: service)
        holder.withLockedValue { $0 = introspection }
        return introspection
    }

    func set(_ token: String, _ answer: JSONValue) { self.answers.withLockedValue { $0[token] = answer } }
    func set(_ mode: Mode) { self.mode.withLockedValue { $0 = mode } }
    var calls: Int { self.service.calls("/oauth2/introspect") }

    private func answer(_ request: SimpleRequest) -> SimpleResponse {
        let form = Dictionary(
            request.bodyText.split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).removingPercentEncoding ?? String($0)
                }
                return (parts[0], parts.count > 1 ? parts[1] : "")
            },
            uniquingKeysWith: { first, _ in first }
        )
        let answer = form["token"].flatMap { token in self.answers.withLockedValue { $0[token] } } ?? ["active": false]
        return .json(.ok, answer)
    }
}

/// Opaque access tokens checked by RFC 7662 introspection (docs/authentication.md), against a
/// scripted endpoint on real sockets.
@Suite("Introspection of opaque tokens (real sockets)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct IntrospectionTests {
    static let clientSecret = "s3cret:with/special+chars"

    /// An endpoint and a gateway with `forJWTs` on (plus `configure`), both stopped when the
    /// test ends.
    static func forJWTsGateway(
        configure: (inout JSONObject) -> Void = { _ in }
    ) async throws -> (ScriptedIntrospection, TestClock, GatewayFixture) {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let clock = TestClock()
        let gateway = try await Self.gateway(endpoint, clock: clock) { config in
            config.set("tokens.introspection.forJWTs", true)
            configure(&config)
        }
        atTestEnd { await gateway.stop() }
        return (endpoint, clock, gateway)
    }

    static func gateway(
        _ endpoint: ScriptedIntrospection, clock: TestClock = TestClock(),
        configure: (inout JSONObject) -> Void = { _ in }
    ) async throws -> GatewayFixture {
        try await GatewayFixture.start(clock: clock) { config in
            config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Scope": "claims.scope"]
            let introspection: JSONObject = [
                "url": .string(endpoint.service.baseURL + "/oauth2/introspect"),
                "clientId": "gateway", "clientSecret": .string(Self.clientSecret),
                // Generous: a loaded machine must not turn an answer into a timeout, and a call
                // held at the endpoint (`gate`) must outlast the waits for the requests that
                // join it (the slow case sets its own).
                "cacheSeconds": 60, "negativeCacheSeconds": 5, "timeoutMilliseconds": 120_000,
                "issuer": "https://idp.test",
            ]
            if case .object(var tokens)? = config["tokens"] {
                tokens["introspection"] = .object(introspection)
                config["tokens"] = .object(tokens)
            }
            configure(&config)
        }
    }

    static func get(_ gateway: GatewayFixture, _ token: String, path: String = "/opaque") async throws -> TestResponse {
        try await gateway.send(TestRequest(.GET, path, headers: [("Authorization", "Bearer \(token)")]))
    }

    static func activeAnswer(subject: String, expiresIn: Double = 3600, clock: TestClock) -> JSONValue {
        [
            "active": true, "sub": .string(subject), "scope": "read write", "client_id": "app",
            "iss": "https://idp.test",
            "exp": .number(JSONNumber(Int(clock.now + expiresIn))),
        ]
    }

    @Test func anActiveOpaqueTokenIsForwardedWithItsClaimsAfterAnExactlyFormedCall() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let clock = TestClock()
        let gateway = try await Self.gateway(endpoint, clock: clock)
        atTestEnd { await gateway.stop() }
        endpoint.set("opaque-alice", Self.activeAnswer(subject: "alice", clock: clock))
        let response = try await Self.get(gateway, "opaque-alice")
        #expect(response.status == 200)
        let echoed = try JSONValue(parsing: response.text)
        #expect(echoed["headers"]?["x-user-subject"]?.arrayValue?.first?.stringValue == "alice")
        #expect(echoed["headers"]?["x-user-scope"]?.arrayValue?.first?.stringValue == "read write")
        // RFC 7662 §2.1 form, RFC 6749 §2.3.1 Basic with both parts form-encoded first.
        let call = try #require(endpoint.service.requests.first)
        #expect(call.method == .POST)
        #expect(call.bodyText == "token=opaque-alice&token_type_hint=access_token")
        #expect(call.headers.first(name: "content-type") == "application/x-www-form-urlencoded")
        let expected = "gateway:" + "s3cret%3Awith%2Fspecial%2Bchars"
        #expect(call.headers.first(name: "authorization") == "Basic \(Data(expected.utf8).base64EncodedString())")
    }

    @Test func formClientAuthenticationPutsTheCredentialsInTheBody() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let clock = TestClock()
        let gateway = try await Self.gateway(endpoint, clock: clock) { config in
            config.set("tokens.introspection.clientAuthentication", "form")
        }
        atTestEnd { await gateway.stop() }
        endpoint.set("opaque-form", Self.activeAnswer(subject: "bob", clock: clock))
        #expect(try await Self.get(gateway, "opaque-form").status == 200)
        let call = try #require(endpoint.service.requests.first)
        #expect(
            call.bodyText
                == "token=opaque-form&token_type_hint=access_token&client_id=gateway&client_secret=s3cret%3Awith%2Fspecial%2Bchars"
        )
        #expect(call.headers.first(name: "authorization") == nil)
    }

    @Test func anInactiveTokenIs401AndNeverForwarded() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let gateway = try await Self.gateway(endpoint)
        atTestEnd { await gateway.stop() }
        endpoint.set("revoked", ["active": false])
        let response = try await Self.get(gateway, "revoked")
        #expect(response.status == 401)
        #expect(response.header("www-authenticate")?.contains("error=\"invalid_token\"") == true)
        #expect(try JSONValue(parsing: response.text)["type"]?.stringValue == "urn:auth-gateway:problem:token.inactive")
        // Claims that do not match the configuration count as inactive too.
        endpoint.set("other-issuer", ["active": true, "sub": "x", "iss": "https://elsewhere.test"])
        #expect(try await Self.get(gateway, "other-issuer").status == 401)
        #expect(gateway.backend.requestCount == 0)
    }

    /// Twenty concurrent requests with one unknown token: one call. The endpoint holds its
    /// answer until all twenty are provably waiting (the joins are counted in `/metrics`).
    @Test func concurrentRequestsWithOneTokenMakeOneCall() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let clock = TestClock()
        let gateway = try await Self.gateway(endpoint, clock: clock) { config in config["eventLoopThreads"] = 2 }
        atTestEnd { await gateway.stop() }
        endpoint.set("shared-token", Self.activeAnswer(subject: "carol", clock: clock))
        endpoint.gate.hold()
        atTestEnd { endpoint.gate.release() }
        let requests = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await Self.get(gateway, "shared-token").status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        let coalesced = "auth_gateway_introspections_total{outcome=\"coalesced\"}"
        #expect(
            try await eventually(timeout: .seconds(30)) {
                try await RefreshTests.metric(coalesced, adminPort: gateway.adminPort) == 19
            })
        // The one call may still be on its way to the endpoint.
        #expect(await eventually(timeout: .seconds(30)) { endpoint.calls == 1 })
        endpoint.gate.release()
        let statuses = try await requests.value
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(endpoint.calls == 1)
    }

    /// Active answers are kept for `min(cacheSeconds, exp − now)`, inactive ones for
    /// `negativeCacheSeconds` (the test clock moves; nothing sleeps).
    @Test func cacheLifetimesFollowCacheSecondsExpAndNegativeCacheSeconds() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let clock = TestClock(fixed: 1_800_000_000)
        let gateway = try await Self.gateway(endpoint, clock: clock)
        atTestEnd { await gateway.stop() }
        endpoint.set("long", Self.activeAnswer(subject: "dave", expiresIn: 3600, clock: clock))
        endpoint.set("short", Self.activeAnswer(subject: "erin", expiresIn: 10, clock: clock))
        #expect(try await Self.get(gateway, "long").status == 200)
        #expect(try await Self.get(gateway, "short").status == 200)
        #expect(try await Self.get(gateway, "long").status == 200)
        #expect(endpoint.calls == 2)
        clock.advance(by: 11)  // past "short"'s exp, within cacheSeconds
        endpoint.set("short", ["active": false])
        #expect(try await Self.get(gateway, "short").status == 401)
        #expect(try await Self.get(gateway, "long").status == 200)
        #expect(endpoint.calls == 3)
        // The negative answer is kept for negativeCacheSeconds (5 s), not longer.
        endpoint.set("short", Self.activeAnswer(subject: "erin", expiresIn: 3600, clock: clock))
        #expect(try await Self.get(gateway, "short").status == 401)
        #expect(endpoint.calls == 3)
        clock.advance(by: 6)  // 17 s
        #expect(try await Self.get(gateway, "short").status == 200)
        #expect(endpoint.calls == 4)
        clock.advance(by: 44)  // 61 s: past cacheSeconds for "long"
        #expect(try await Self.get(gateway, "long").status == 200)
        #expect(endpoint.calls == 5)
    }

    /// Down, failing, slow or not JSON: 503 with Retry-After, nothing forwarded, nothing kept.
    @Test(arguments: ["500", "401", "notJSON", "slow"])
    func anUnusableEndpointIs503AndFailuresAreNotCached(_ failure: String) async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let clock = TestClock()
        // "slow": the endpoint holds its answer past the timeout (released afterwards); the
        // timeout leaves the follow-up call room on a loaded machine.
        let gateway = try await Self.gateway(endpoint, clock: clock) { config in
            if failure == "slow" { config.set("tokens.introspection.timeoutMilliseconds", 5000) }
        }
        atTestEnd { await gateway.stop() }
        endpoint.set("opaque", Self.activeAnswer(subject: "frank", clock: clock))
        switch failure {
        case "500": endpoint.set(.status(500))
        case "401": endpoint.set(.status(401))
        case "notJSON": endpoint.set(.notJSON)
        default:
            endpoint.gate.hold()
            atTestEnd { endpoint.gate.release() }
        }
        let response = try await Self.get(gateway, "opaque")
        #expect(response.status == 503)
        #expect(response.header("retry-after") == "5")
        #expect(
            try JSONValue(parsing: response.text)["type"]?.stringValue
                == "urn:auth-gateway:problem:introspection.unavailable")
        #expect(gateway.backend.requestCount == 0)
        let health = try await TestConnection.connect(port: gateway.adminPort).send(.get("/healthz"))
        #expect(try JSONValue(parsing: health.text)["checks"]?["introspection"]?["status"]?.stringValue == "failing")
        endpoint.gate.release()
        endpoint.set(.normal)
        let calls = endpoint.calls
        #expect(try await Self.get(gateway, "opaque").status == 200)
        #expect(endpoint.calls == calls + 1)
    }

    @Test func aDeadEndpointIs503() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let refusing = try RefusingPort()
        let gateway = try await Self.gateway(endpoint) { config in
            config.set("tokens.introspection.url", .string("http://127.0.0.1:\(refusing.port)/oauth2/introspect"))
        }
        atTestEnd { await gateway.stop() }
        let response = try await Self.get(gateway, "opaque")
        #expect(response.status == 503)
        #expect(gateway.backend.requestCount == 0)
    }

    /// A JWS-shaped token is verified as a JWT, and a bad one refused, without a call.
    @Test func aJWSShapedTokenIsNeverIntrospected() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let gateway = try await Self.gateway(endpoint)
        atTestEnd { await gateway.stop() }
        #expect(try await Self.get(gateway, TestKeys.token(signer: TestKeys.otherRSA)).status == 401)
        #expect(try await Self.get(gateway, "aaa.bbb.ccc").status == 401)
        #expect(try await Self.get(gateway, TestKeys.token(subject: "jwt-user")).status == 200)
        #expect(endpoint.calls == 0)
    }

    /// `forJWTs`: a valid JWT that the provider revoked is refused, and never reaches the
    /// backend; an active one goes on with the JWT's own claims, not the answer's.
    @Test func forJWTsRefusesARevokedJWT() async throws {
        let (endpoint, clock, gateway) = try await Self.forJWTsGateway()
        let revoked = TestKeys.token(subject: "mallory")
        let good = TestKeys.token(subject: "grace")
        // The answer names another subject and scope: the signed JWT's claims win.
        var answer = try #require(Self.activeAnswer(subject: "not-grace", clock: clock).objectValue)
        answer["scope"] = "admin"
        endpoint.set(good, .object(answer))
        let refused = try await Self.get(gateway, revoked)
        #expect(refused.status == 401)
        #expect(try JSONValue(parsing: refused.text)["type"]?.stringValue == "urn:auth-gateway:problem:token.inactive")
        #expect(refused.header("www-authenticate")?.contains("invalid_token") == true)
        #expect(gateway.backend.requestCount == 0)
        let response = try await Self.get(gateway, good)
        #expect(response.status == 200)
        #expect(response.echoedHeader("x-user-subject") == ["grace"])
        #expect(response.echoedHeader("x-user-scope") == [])
        #expect(endpoint.calls == 2)
        // The exact form: the JWT itself is the token.
        #expect(endpoint.service.requests.last?.bodyText == "token=\(good)&token_type_hint=access_token")
    }

    /// `forJWTs`: one call per token while its answer lasts (N requests, 1 call), then asked
    /// again; concurrent first requests share one call.
    @Test func forJWTsAnswersAreCachedAndShared() async throws {
        let (endpoint, clock, gateway) = try await Self.forJWTsGateway { config in config["eventLoopThreads"] = 2 }
        let token = TestKeys.token(subject: "heidi", expiresIn: 3600)
        endpoint.set(token, Self.activeAnswer(subject: "heidi", clock: clock))
        endpoint.gate.hold()
        atTestEnd { endpoint.gate.release() }
        let first = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<10 { group.addTask { try await Self.get(gateway, token).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        #expect(await eventually(timeout: .seconds(30)) { endpoint.calls == 1 })
        let coalesced = "auth_gateway_introspections_total{outcome=\"coalesced\"}"
        #expect(
            try await eventually(timeout: .seconds(30)) {
                try await RefreshTests.metric(coalesced, adminPort: gateway.adminPort) == 9
            })
        endpoint.gate.release()
        #expect(try await first.value == Array(repeating: 200, count: 10))
        for _ in 0..<10 { #expect(try await Self.get(gateway, token).status == 200) }
        #expect(endpoint.calls == 1)
        #expect(gateway.backend.requestCount == 20)
        // Past cacheSeconds (60 s): asked again, and now it is revoked.
        clock.advance(by: 61)
        endpoint.set(token, ["active": false])
        #expect(try await Self.get(gateway, token).status == 401)
        #expect(endpoint.calls == 2)
        #expect(gateway.backend.requestCount == 20)
    }

    /// `forJWTs` and DPoP: a `cnf.jkt` in the answer binds an unbound JWT (sent as Bearer it
    /// is then refused as `dpop.required`); an answer naming another key than the JWT's own
    /// binding is refused. Neither reaches the backend.
    @Test func forJWTsAnAnswersBindingOnlyTightens() async throws {
        let (endpoint, clock, gateway) = try await Self.forJWTsGateway()
        let unbound = TestKeys.token(subject: "judy")
        var binding = try #require(Self.activeAnswer(subject: "judy", clock: clock).objectValue)
        binding["cnf"] = ["jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"]
        endpoint.set(unbound, .object(binding))
        let required = try await Self.get(gateway, unbound)
        #expect(required.status == 401)
        #expect(try JSONValue(parsing: required.text)["type"]?.stringValue == "urn:auth-gateway:problem:dpop.required")

        let bound = TestKeys.token(subject: "judy", extra: ["cnf": ["jkt": "bound-to-this-key"]])
        endpoint.set(bound, .object(binding))
        let contradicted = try await Self.get(gateway, bound)
        #expect(contradicted.status == 401)
        #expect(contradicted.header("www-authenticate")?.contains("invalid_token") == true)
        #expect(gateway.backend.requestCount == 0)
        #expect(endpoint.calls == 2)
    }

    /// `forJWTs` fails closed: an endpoint that is down gives 503 with Retry-After for a JWT
    /// that verified, and nothing is forwarded.
    @Test func forJWTsFailsClosedWhenTheEndpointIsDown() async throws {
        let (endpoint, _, gateway) = try await Self.forJWTsGateway()
        endpoint.set(.status(500))
        let response = try await Self.get(gateway, TestKeys.token(subject: "ivan"))
        #expect(response.status == 503)
        #expect(response.header("retry-after") != nil)
        #expect(
            try JSONValue(parsing: response.text)["type"]?.stringValue
                == "urn:auth-gateway:problem:introspection.unavailable")
        #expect(gateway.backend.requestCount == 0)
        endpoint.set(.notJSON)
        #expect(try await Self.get(gateway, TestKeys.token(subject: "ivan")).status == 503)
        #expect(gateway.backend.requestCount == 0)
        // A JWT that does not verify is refused before any call.
        let calls = endpoint.calls
        #expect(try await Self.get(gateway, TestKeys.token(signer: TestKeys.otherRSA)).status == 401)
        #expect(endpoint.calls == calls)
    }
}
