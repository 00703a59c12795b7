import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// "A token is never logged" (docs/errors.md), checked on the real `serve` process at
/// `logging.level: debug` with the access log on: every access token, refresh token and
/// token the auth service issues passes through it — valid, expired, refreshed, refused,
/// in headers, cookies and the query string — and none of them, nor a distinctive part of
/// one, appears on standard output or standard error.
@Suite("Tokens are never logged (auth-gateway serve)", .serialized, .timeLimit(.minutes(5)), .awaitsCleanups)
struct TokenLoggingTests {
    /// A RainMaker-style auth service (json refresh protocol, profile endpoint) that records
    /// every token it hands out.
    final class RecordingAuthService: Sendable {
        let service: ScriptedAuthService
        private let issued: NIOLockedValueBox<[String]>
        static let refused = "rt-refused-7c5f0d2e9b"
        static let misissued = "rt-misissued-41aa83b6f1"

        private init(service: ScriptedAuthService, issued: NIOLockedValueBox<[String]>) {
            self.service = service
            self.issued = issued
        }

        /// Every access and refresh token handed out so far.
        var issuedTokens: [String] { self.issued.withLockedValue { $0 } }

        static func start() async throws -> RecordingAuthService {
            let issued = NIOLockedValueBox<[String]>([])
            let service = try await ScriptedAuthService.start { request in
                switch request.path {
                case "/v1/user":
                    return .json(.ok, ["user_id": 42, "user_name": "alice"])
                case "/v1/login":
                    let refreshToken = request.json?["refreshtoken"]?.stringValue ?? ""
                    if refreshToken == Self.refused {
                        return .json(.unauthorized, ["status": "failure", "description": "Invalid refresh token"])
                    }
                    // The misissued refresh gets an access token the gateway does not trust.
                    let signer = refreshToken == Self.misissued ? TestKeys.otherRSA : TestKeys.rsa
                    let access = TestKeys.token(
                        signer: signer, subject: "alice", extra: ["nonce": .string(UUID().uuidString)])
                    let rotated = "rt-rotated-" + UUID().uuidString.lowercased()
                    issued.withLockedValue { $0 += [access, rotated] }
                    return .json(
                        .ok, ["status": "success", "accesstoken": .string(access), "refreshtoken": .string(rotated)])
                default:
                    return SimpleResponse(status: .notFound)
                }
            }
            return RecordingAuthService(service: service, issued: issued)
        }
    }

    /// The strings that must never be logged for `token`: the whole token, each part only
    /// this token has (payload and signature; every test token shares its header), and
    /// 16-character windows of them, so that a shortened or truncated token is caught too.
    static func secrets(of token: String) -> [String] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { return [token] + Self.windows(of: token) }
        return [token, parts[1], parts[2]] + Self.windows(of: parts[2]) + [String(parts[1].suffix(16))]
    }

    /// The first, middle and last 16 characters.
    static func windows(of text: String) -> [String] {
        guard text.count > 16 else { return [text] }
        let middle = text.index(text.startIndex, offsetBy: (text.count - 16) / 2)
        return [String(text.prefix(16)), String(text[middle...].prefix(16)), String(text.suffix(16))]
    }

    /// Waits until every request of `ids` reached the access log (flushed at least every
    /// second), then stops the process so that everything it buffered is out; checks that the
    /// capture works (the ids on standard output) and that the level is debug (a debug line of
    /// the application log on standard error). Its standard output and error.
    static func stopAfterLogging(
        _ gateway: RunningGateway, ids: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (stdout: String, stderr: String) {
        #expect(
            try await gateway.waitForOutput(timeout: .seconds(30)) { output in
                ids.allSatisfy { output.contains("\"requestId\":\"\($0)\"") }
            }, sourceLocation: sourceLocation)
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(30)) == 0, sourceLocation: sourceLocation)
        let (stdout, stderr) = (gateway.standardOutput, gateway.standardError)
        #expect(ids.allSatisfy { stdout.contains("\"requestId\":\"\($0)\"") }, sourceLocation: sourceLocation)
        #expect(stderr.contains(" debug "), "no debug line on stderr:\n\(stderr)", sourceLocation: sourceLocation)
        return (stdout, stderr)
    }

    /// None of `secrets` on standard output or standard error.
    static func expectNone(
        of secrets: [String], in output: (stdout: String, stderr: String),
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let onStandardOutput = Set(secrets).filter { output.stdout.contains($0) }
        let onStandardError = Set(secrets).filter { output.stderr.contains($0) }
        #expect(
            onStandardOutput.isEmpty, "token parts on stdout: \(onStandardOutput.map { $0.prefix(12) + "…" })",
            sourceLocation: sourceLocation)
        #expect(
            onStandardError.isEmpty, "token parts on stderr: \(onStandardError.map { $0.prefix(12) + "…" })",
            sourceLocation: sourceLocation)
    }

    /// A `serve` at debug level with identity headers, refresh and profiles against `auth`:
    /// every path that could print a token is taken.
    static func configuration(backend: EchoBackend, auth: RecordingAuthService) -> JSONObject {
        var configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1, level: "debug")
        configuration["identityHeaders"] = ["X-User-Name": "profile.user_name", "X-User-Subject": "claims.sub"]
        configuration["authService"] = [
            "url": .string(auth.service.baseURL),
            "timeoutMilliseconds": 10_000,
            "refresh": ["protocol": "json", "maxExpiredSeconds": 3600],
            "profile": ["ttlSeconds": 1],
        ]
        return configuration
    }

    @Test func noTokenOnStandardOutputOrStandardError() async throws {
        let auth = try await RecordingAuthService.start()
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await backend.close()
            await auth.service.stop()
        }
        let gateway = try RunningGateway(configuration: Self.configuration(backend: backend, auth: auth))
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()

        let valid = TestKeys.token(subject: "alice", extra: ["nonce": "valid"])
        let validInCookie = TestKeys.token(subject: "alice", extra: ["nonce": "cookie"])
        let validRaw = TestKeys.token(subject: "alice", extra: ["nonce": "raw"])
        let validInQuery = TestKeys.token(subject: "alice", extra: ["nonce": "query"])
        let expiredForHeader = TestKeys.token(subject: "alice", expiresIn: -60, extra: ["nonce": "expired-header"])
        let expiredForCookie = TestKeys.token(subject: "alice", expiresIn: -60, extra: ["nonce": "expired-cookie"])
        let expiredRefused = TestKeys.token(subject: "alice", expiresIn: -60, extra: ["nonce": "expired-refused"])
        let expiredMisissued = TestKeys.token(subject: "alice", expiresIn: -60, extra: ["nonce": "expired-misissued"])
        let expiredAlone = TestKeys.token(subject: "alice", expiresIn: -60, extra: ["nonce": "expired-alone"])
        let forged = TestKeys.token(signer: TestKeys.otherRSA, subject: "alice", extra: ["nonce": "forged"])
        let other = TestKeys.token(subject: "bob", extra: ["nonce": "ambiguous"])
        let refreshHeader = "rt-header-" + UUID().uuidString.lowercased()
        let refreshCookie = "rt-cookie-" + UUID().uuidString.lowercased()

        struct Sent {
            let id: String
            let request: TestRequest
            let status: Int
        }
        let sent: [Sent] = [
            Sent(id: "log-valid-bearer", request: .get("/a", token: valid), status: 200),
            Sent(id: "log-valid-raw", request: .get("/b", headers: [("Authorization", validRaw)]), status: 200),
            Sent(
                id: "log-valid-cookie",
                request: .get("/c", headers: [("Cookie", "theme=dark; access_token=\(validInCookie)")]), status: 200),
            Sent(
                id: "log-query",
                request: .get("/d?access_token=\(validInQuery)&refresh_token=\(refreshHeader)x", token: valid),
                status: 200),
            Sent(
                id: "log-refresh-header",
                request: .get("/e", token: expiredForHeader, headers: [("X-Refresh-Token", refreshHeader)]), status: 200
            ),
            Sent(
                id: "log-refresh-cookie",
                request: .get(
                    "/f", headers: [("Cookie", "access_token=\(expiredForCookie); refresh_token=\(refreshCookie)")]),
                status: 200),
            Sent(
                id: "log-refresh-refused",
                request: .get(
                    "/g", token: expiredRefused, headers: [("X-Refresh-Token", RecordingAuthService.refused)]),
                status: 401),
            Sent(
                id: "log-refresh-misissued",
                request: .get(
                    "/h", token: expiredMisissued, headers: [("X-Refresh-Token", RecordingAuthService.misissued)]),
                status: 401),
            Sent(id: "log-expired", request: .get("/i", token: expiredAlone), status: 401),
            Sent(id: "log-forged", request: .get("/j", token: forged), status: 401),
            Sent(
                id: "log-ambiguous", request: .get("/k", token: valid, headers: [("Cookie", "access_token=\(other)")]),
                status: 400),
        ]
        var responses: [TestResponse] = []
        for item in sent {
            var request = item.request
            request.headers.append(("X-Request-Id", item.id))
            let client = try await TestConnection.connect(port: port)
            let response = try await client.send(request, timeout: .seconds(30))
            await client.close()
            #expect(response.status == item.status, "\(item.id)")
            responses.append(response)
        }
        // The refreshed sessions: the new access token works in turn.
        let refreshedAccess = try #require(responses[4].header("x-access-token"))
        let reused = try await TestConnection.connect(port: port).send(
            .get("/l", token: refreshedAccess, headers: [("X-Request-Id", "log-refreshed-reuse")]),
            timeout: .seconds(30))
        #expect(reused.status == 200)
        #expect(responses[5].headers["set-cookie"].count == 2)
        #expect(auth.service.calls("/v1/login") == 4)
        #expect(auth.service.calls("/v1/user") >= 1)

        #expect(try await gateway.waitForOutput(timeout: .seconds(30)) { $0.contains("refresh.token_not_accepted") })
        let output = try await Self.stopAfterLogging(gateway, ids: sent.map(\.id) + ["log-refreshed-reuse"])
        #expect(output.stderr.contains("refresh.token_not_accepted"))

        var secrets = [
            valid, validInCookie, validRaw, validInQuery, expiredForHeader, expiredForCookie, expiredRefused,
            expiredMisissued, expiredAlone, forged, other,
        ]
        .flatMap(Self.secrets(of:))
        secrets += [refreshHeader, refreshCookie, RecordingAuthService.refused, RecordingAuthService.misissued].flatMap(
            Self.secrets(of:))
        secrets += auth.issuedTokens.flatMap(Self.secrets(of:))
        secrets += responses.compactMap { $0.header("x-access-token") }.flatMap(Self.secrets(of:))
        secrets += responses.compactMap { $0.header("x-refresh-token") }.flatMap(Self.secrets(of:))
        #expect(auth.issuedTokens.count == 6)
        Self.expectNone(of: secrets, in: output)
    }

    /// Opaque tokens (docs/authentication.md: "The token is never logged"), on the real `serve` process at
    /// debug level with the access log on: tokens the endpoint calls active (in a header, a
    /// cookie, the query string, with a profile fetched with it), inactive, unknown, refused
    /// while the endpoint fails (503), and one that joins an introspected JWT (`forJWTs`). None
    /// of them, nor a distinctive part of one, nor the client secret, appears on standard
    /// output or standard error.
    @Test func noOpaqueTokenOnStandardOutputOrStandardError() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        let profiles = try await ScriptedAuthService.start { _ in .json(.ok, ["user_name": "opaque-user"]) }
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await backend.close()
            await profiles.stop()
            await endpoint.service.stop()
        }
        func opaque(_ name: String) -> String { "opq-\(name)-" + UUID().uuidString.lowercased() + UUID().uuidString }
        let active = opaque("active")
        let inCookie = opaque("cookie")
        let inQuery = opaque("query")
        let inactive = opaque("inactive")
        let unknown = opaque("unknown")
        let duringOutage = opaque("outage")
        let secret = "introspection-secret-" + UUID().uuidString
        let clock = TestClock()
        for token in [active, inCookie, inQuery, duringOutage] {
            endpoint.set(token, IntrospectionTests.activeAnswer(subject: "opaque-user", clock: clock))
        }
        endpoint.set(inactive, ["active": false])
        let jwt = TestKeys.token(subject: "jwt-user", extra: ["nonce": "opaque-logging"])
        endpoint.set(jwt, IntrospectionTests.activeAnswer(subject: "jwt-user", clock: clock))

        var configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1, level: "debug")
        configuration["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Name": "profile.user_name"]
        configuration["authService"] = [
            "url": .string(profiles.baseURL), "timeoutMilliseconds": 10_000,
            "profile": ["path": "/v1/user", "authorization": "raw"],
        ]
        configuration.set(
            "tokens.introspection",
            [
                "url": .string(endpoint.service.baseURL + "/oauth2/introspect"), "clientId": "gateway",
                "clientSecret": .string(secret), "timeoutMilliseconds": 10_000, "issuer": "https://idp.test",
                "forJWTs": true,
            ])
        let gateway = try RunningGateway(configuration: configuration)
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()

        let sent: [(id: String, request: TestRequest, status: Int)] = [
            ("opaque-active", .get("/a", token: active), 200),
            ("opaque-raw", .get("/b", headers: [("Authorization", active)]), 200),
            ("opaque-cookie", .get("/c", headers: [("Cookie", "theme=dark; access_token=\(inCookie)")]), 200),
            ("opaque-query", .get("/d?access_token=\(inQuery)", token: inQuery), 200),
            ("opaque-inactive", .get("/e", token: inactive), 401),
            ("opaque-unknown", .get("/f", token: unknown), 401),
            ("opaque-jwt", .get("/g", token: jwt), 200),
        ]
        func send(_ id: String, _ request: TestRequest) async throws -> TestResponse {
            var request = request
            request.headers.append(("X-Request-Id", id))
            let client = try await TestConnection.connect(port: port)
            return try await withCleanup({ await client.close() }) {
                try await client.send(request, timeout: .seconds(30))
            }
        }
        for item in sent {
            let response = try await send(item.id, item.request)
            #expect(response.status == item.status, "\(item.id): \(response.text)")
        }
        // The endpoint fails: a new token is refused with 503, and the failure is logged.
        endpoint.set(.status(500))
        let outage = try await send("opaque-outage", .get("/h", token: duringOutage))
        #expect(outage.status == 503)
        #expect(endpoint.calls >= 7)
        #expect(profiles.calls("/v1/user") >= 1)

        let output = try await Self.stopAfterLogging(gateway, ids: sent.map(\.id) + ["opaque-outage"])
        Self.expectNone(
            of: [active, inCookie, inQuery, inactive, unknown, duringOutage, jwt, secret].flatMap(Self.secrets(of:)),
            in: output)
    }

    /// Token exchange (docs/token-exchange.md, "Metrics and logs"): neither the caller's subject
    /// token nor the token idpyoidc issued for the backend, nor the client secret, is printed —
    /// exchanged, answered from the cache, refused (`invalid_grant`).
    @Test func noExchangedTokenOnStandardOutputOrStandardError() async throws {
        let server = try await ExchangeServer.start()
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await backend.close()
            await server.tool.stop()
        }
        var configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1, level: "debug")
        ExchangeEndToEnd.configure(&configuration, server)
        let gateway = try RunningGateway(configuration: configuration)
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let caller = try await server.mint().token

        func send(_ id: String, _ path: String) async throws -> TestResponse {
            let client = try await TestConnection.connect(port: port)
            return try await withCleanup({ await client.close() }) {
                try await client.send(.get(path, token: caller, headers: [("X-Request-Id", id)]), timeout: .seconds(60))
            }
        }
        let exchanged = try ExchangeEndToEnd.exchanged(try await send("exchange-call", "/orders/1"), caller: caller)
        #expect(
            try ExchangeEndToEnd.exchanged(try await send("exchange-cached", "/orders/2"), caller: caller) == exchanged)
        #expect(try await send("exchange-refused", "/refused/1").status == 403)
        #expect(try await server.calls() == 2)

        let output = try await Self.stopAfterLogging(
            gateway, ids: ["exchange-call", "exchange-cached", "exchange-refused"])
        Self.expectNone(
            of: Self.secrets(of: caller) + Self.secrets(of: exchanged) + ["gateway-secret"], in: output)
    }
}
