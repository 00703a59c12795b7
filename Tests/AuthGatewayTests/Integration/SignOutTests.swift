import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// What the auth service says to a transparent refresh, and what the client must see
/// (docs/authentication.md): a refusal signs the session out (401; a cookie session gets both
/// cookies cleared), an unavailable service keeps it (503 with `Retry-After`, nothing cleared).
@Suite("Transparent refresh: sign-out and unavailability (real sockets)", .awaitsCleanups)
struct SignOutTests {
    enum Answer: Sendable {
        case status(Int, JSONValue?)
        /// 200 with a JSON body lacking the access-token field.
        case successWithoutAccessToken
        /// 200 with an access token the gateway does not trust (signed by another key).
        case accessTokenSignedByAnotherKey
        /// No answer before the gateway's auth-service timeout.
        case hang
    }

    enum Verdict: Sendable {
        case signOut
        case unavailable
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let oauth2: Bool
        let answer: Answer
        let verdict: Verdict
        /// Whether the cookie session is part of the case (see
        /// `aRefreshedTokenTheGatewayRefusesSignsTheCookieSessionOut`).
        var cookieSession = true
        var testDescription: String { self.name }
    }

    static let cases: [Case] = [
        Case(
            name: "400 invalid_grant", oauth2: false, answer: .status(400, ["error": "invalid_grant"]),
            verdict: .signOut),
        Case(name: "401 without a body", oauth2: false, answer: .status(401, nil), verdict: .signOut),
        Case(name: "403", oauth2: false, answer: .status(403, ["status": "failure"]), verdict: .signOut),
        Case(
            name: "2xx without the access-token field", oauth2: false, answer: .successWithoutAccessToken,
            verdict: .signOut),
        Case(
            name: "oauth2: 400 invalid_grant", oauth2: true,
            answer: .status(400, ["error": "invalid_grant", "error_description": "expired"]), verdict: .signOut),
        Case(
            name: "oauth2: 2xx without access_token", oauth2: true, answer: .successWithoutAccessToken,
            verdict: .signOut),
        Case(
            name: "refreshed access token signed by another key", oauth2: false, answer: .accessTokenSignedByAnotherKey,
            verdict: .signOut, cookieSession: false),
        Case(
            name: "oauth2: refreshed access token signed by another key", oauth2: true,
            answer: .accessTokenSignedByAnotherKey, verdict: .signOut, cookieSession: false),
        Case(name: "500", oauth2: false, answer: .status(500, nil), verdict: .unavailable),
        Case(name: "502", oauth2: false, answer: .status(502, nil), verdict: .unavailable),
        Case(name: "429", oauth2: false, answer: .status(429, ["error": "slow_down"]), verdict: .unavailable),
        Case(name: "timeout", oauth2: false, answer: .hang, verdict: .unavailable),
        Case(name: "oauth2: 503", oauth2: true, answer: .status(503, nil), verdict: .unavailable),
        Case(name: "oauth2: timeout", oauth2: true, answer: .hang, verdict: .unavailable),
    ]

    /// An auth service that gives `answer` to every refresh; held answers are released by `stop`.
    final class Service: Sendable {
        let scripted: ScriptedAuthService
        private let hanging = NIOLockedValueBox<[EventLoopPromise<SimpleResponse>]>([])

        init(answer: Answer, oauth2: Bool) async throws {
            let hanging = self.hanging
            let field = oauth2 ? "access_token" : "accesstoken"
            // Signed here, not in the service's handler: the first use of `otherRSA` generates an
            // RSA key, which on a loaded machine held the service's event loop past the
            // gateway's auth-service timeout (a 503 instead of the sign-out, seen once).
            let untrusted = TestKeys.token(signer: TestKeys.otherRSA, subject: "mallory")
            self.scripted = try await ScriptedAuthService.start { _, eventLoop in
                switch answer {
                case .status(let code, let body):
                    let status = HTTPResponseStatus(statusCode: code)
                    return eventLoop.makeSucceededFuture(
                        body.map { .json(status, $0) } ?? SimpleResponse(status: status))
                case .successWithoutAccessToken:
                    return eventLoop.makeSucceededFuture(
                        .json(
                            .ok,
                            [
                                "status": "success", "refreshtoken": "rt-rotated", "refresh_token": "rt-rotated",
                                "token_type": "Bearer",
                            ]))
                case .accessTokenSignedByAnotherKey:
                    var body = JSONObject()
                    body[field] = .string(untrusted)
                    return eventLoop.makeSucceededFuture(.json(.ok, .object(body)))
                case .hang:
                    let promise = eventLoop.makePromise(of: SimpleResponse.self)
                    hanging.withLockedValue { $0.append(promise) }
                    return promise.futureResult
                }
            }
        }

        func stop() async {
            for promise in self.hanging.withLockedValue({ $0 }) {
                promise.succeed(SimpleResponse(status: .serviceUnavailable))
            }
            await self.scripted.stop()
        }
    }

    static func gateway(service: Service, answer: Answer, oauth2: Bool) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            var refresh: JSONObject = ["graceSeconds": 1, "maxExpiredSeconds": 3600]
            if oauth2 {
                refresh["protocol"] = "oauth2"
                refresh["clientId"] = "gateway"
                refresh["clientSecret"] = "secret"
            }
            // A short timeout only where the answer never comes; elsewhere a generous one, so a
            // busy machine cannot turn a definite answer into a timeout.
            let timeout = if case .hang = answer { 300 } else { 10_000 }
            config["authService"] = [
                "url": .string(service.scripted.baseURL), "timeoutMilliseconds": .number(JSONNumber(timeout)),
                "refresh": .object(refresh),
            ]
        }
    }

    @Test(arguments: Self.cases)
    func refreshAnswer(_ testCase: Case) async throws {
        let service = try await Service(answer: testCase.answer, oauth2: testCase.oauth2)
        let gateway = try await Self.gateway(service: service, answer: testCase.answer, oauth2: testCase.oauth2)
        atTestEnd {
            await gateway.stop()
            await service.stop()
        }
        let expired = TestKeys.token(expiresIn: -60)
        let refreshPath = testCase.oauth2 ? "/oauth2/token" : "/v1/login"

        var calls = 0
        // A cookie session.
        if testCase.cookieSession {
            let cookieSession = try await gateway.send(
                TestRequest(
                    .GET, "/c",
                    headers: [("Cookie", "theme=dark; access_token=\(expired); refresh_token=rt-cookie-session")]))
            Self.check(cookieSession, testCase: testCase, cookies: true)
            calls += 1
            if case .hang = testCase.answer {} else { #expect(service.scripted.calls(refreshPath) == calls) }
        }

        // A header session: the same status, and never a Set-Cookie.
        let headerSession = try await gateway.send(
            TestRequest(
                .GET, "/h", headers: [("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", "rt-header-session")])
        )
        Self.check(headerSession, testCase: testCase, cookies: false)
        calls += 1
        if case .hang = testCase.answer {
            // A call can time out before it even reaches the service.
            #expect(service.scripted.calls(refreshPath) <= calls)
        } else {
            #expect(service.scripted.calls(refreshPath) == calls)
        }
        #expect(gateway.backend.requestCount == 0)
    }

    /// docs/authentication.md: an access token from the auth service that fails verification is a
    /// 401 (logged as a misconfiguration). The refresh token was spent on it, so the session is
    /// over: a cookie session must be signed out like after any other refusal.
    @Test(arguments: [false, true])
    func aRefreshedTokenTheGatewayRefusesSignsTheCookieSessionOut(_ oauth2: Bool) async throws {
        let testCase = Case(
            name: "refreshed access token signed by another key", oauth2: oauth2,
            answer: .accessTokenSignedByAnotherKey, verdict: .signOut)
        let service = try await Service(answer: testCase.answer, oauth2: oauth2)
        let gateway = try await Self.gateway(service: service, answer: testCase.answer, oauth2: oauth2)
        atTestEnd {
            await gateway.stop()
            await service.stop()
        }
        let expired = TestKeys.token(expiresIn: -60)
        let response = try await gateway.send(
            TestRequest(.GET, "/c", headers: [("Cookie", "access_token=\(expired); refresh_token=rt-cookie-session")]))
        Self.check(response, testCase: testCase, cookies: true)
        #expect(service.scripted.calls(oauth2 ? "/oauth2/token" : "/v1/login") == 1)
        #expect(gateway.backend.requestCount == 0)
    }

    static func check(
        _ response: TestResponse, testCase: Case, cookies: Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let setCookies = response.headers["set-cookie"]
        #expect(response.header("x-access-token") == nil, sourceLocation: sourceLocation)
        #expect(response.header("x-refresh-token") == nil, sourceLocation: sourceLocation)
        switch testCase.verdict {
        case .signOut:
            #expect(response.status == 401, sourceLocation: sourceLocation)
            #expect(
                response.json?["type"]?.stringValue == "urn:auth-gateway:problem:token.refresh_rejected",
                sourceLocation: sourceLocation)
            #expect(
                response.header("www-authenticate")?.hasPrefix("Bearer realm=\"auth-gateway\"") == true,
                sourceLocation: sourceLocation)
            #expect(response.header("retry-after") == nil, sourceLocation: sourceLocation)
            if cookies {
                #expect(setCookies.count == 2, "\(setCookies)", sourceLocation: sourceLocation)
                for name in ["access_token", "refresh_token"] {
                    let clearing = setCookies.first { $0.hasPrefix("\(name)=;") }
                    #expect(
                        clearing?.contains("Max-Age=0") == true, "\(name) not cleared: \(setCookies)",
                        sourceLocation: sourceLocation)
                    #expect(clearing?.contains("Path=/") == true, sourceLocation: sourceLocation)
                }
            } else {
                #expect(setCookies.isEmpty, "\(setCookies)", sourceLocation: sourceLocation)
            }
        case .unavailable:
            #expect(response.status == 503, sourceLocation: sourceLocation)
            #expect(
                response.json?["type"]?.stringValue == "urn:auth-gateway:problem:auth_service.unavailable",
                sourceLocation: sourceLocation)
            #expect(
                response.header("retry-after").flatMap { Int($0) }.map { $0 > 0 } == true,
                sourceLocation: sourceLocation)
            #expect(setCookies.isEmpty, "nothing may be cleared: \(setCookies)", sourceLocation: sourceLocation)
        }
    }
}
