import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// An introspected token's answer is the request's claims (docs/authentication.md): `require`, rate
/// limits and profiles use them as they use a JWT's, on real sockets against a scripted
/// RFC 7662 endpoint and a scripted profile endpoint that knows the opaque tokens.
@Suite("Introspected claims as identity (real sockets)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct IntrospectionIdentityTests {
    /// Opaque tokens and who they are.
    static let writer = "opaque-writer-2f9c41"
    static let writerAgain = "opaque-writer-second-77d0a3"
    static let reader = "opaque-reader-c81e55"
    static let admin = "opaque-admin-0b6a19"

    /// Profiles by the token the gateway presents (`authorization: raw`): what a userinfo
    /// endpoint knows from the token alone.
    static func profileService() async throws -> ScriptedAuthService {
        try await ScriptedAuthService.start { request in
            let subject: String
            switch request.headers.first(name: "authorization") ?? "" {
            case Self.writer, Self.writerAgain: subject = "writer-1"
            case Self.reader: subject = "reader-1"
            case Self.admin: subject = "admin-1"
            default: return .json(.unauthorized, ["status": "failure"])
            }
            return .json(
                .ok,
                [
                    "user_id": .string("id-\(subject)"), "user_name": .string("\(subject)@example.com"),
                    "super_admin": .bool(subject == "admin-1"),
                ])
        }
    }

    @Test func introspectedClaimsFeedRequireRateLimitsAndProfiles() async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let profiles = try await Self.profileService()
        atTestEnd { await profiles.stop() }
        // A clock that stands still: the answers stay cached (60 s) however long a loaded
        // machine takes, so "one introspection per token" is exact.
        let clock = TestClock(fixed: Date().timeIntervalSince1970)
        let gateway = try await IntrospectionTests.gateway(endpoint, clock: clock) { config in
            config["authService"] = [
                "url": .string(profiles.baseURL), "profile": ["path": "/v1/user", "authorization": "raw"],
            ]
            config["identityHeaders"] = [
                "X-User-Subject": "claims.sub", "X-User-Client": "claims.client_id", "X-User-Name": "profile.user_name",
            ]
            config["routes"] = [
                ["name": "writers", "pathPrefix": "/write/", "backend": "api", "require": ["claims.scope": "write"]],
                [
                    "name": "admins", "pathPrefix": "/admin/", "backend": "api",
                    "require": ["profile.super_admin": true],
                ],
                ["name": "default", "pathPrefix": "/", "backend": "api"],
            ]
            config["rateLimits"] = [
                RateLimitIntegrationTests.limit("per-user", key: "claims.sub", burst: 2, routes: ["default"])
            ]
        }
        atTestEnd { await gateway.stop() }
        func answer(subject: String, scope: String, client: String) -> JSONValue {
            [
                "active": true, "sub": .string(subject), "scope": .string(scope), "client_id": .string(client),
                "iss": "https://idp.test", "exp": .number(JSONNumber(Int(clock.now + 3600))),
            ]
        }
        endpoint.set(Self.writer, answer(subject: "writer-1", scope: "read write", client: "app-a"))
        endpoint.set(Self.writerAgain, answer(subject: "writer-1", scope: "read write", client: "app-b"))
        endpoint.set(Self.reader, answer(subject: "reader-1", scope: "read", client: "app-a"))
        endpoint.set(Self.admin, answer(subject: "admin-1", scope: "read", client: "app-a"))
        func get(_ path: String, _ token: String) async throws -> TestResponse {
            try await IntrospectionTests.get(gateway, token, path: path)
        }

        // `require` on an introspected claim: `scope` is a space-separated list.
        let written = try await get("/write/doc", Self.writer)
        #expect(written.status == 200)
        #expect(written.echoedHeader("x-user-subject") == ["writer-1"])
        #expect(written.echoedHeader("x-user-client") == ["app-a"])
        let denied = try await get("/write/doc", Self.reader)
        #expect(denied.status == 403)
        #expect(denied.header("www-authenticate")?.contains("error=\"insufficient_scope\"") == true)
        #expect(denied.json?["detail"]?.stringValue?.contains("claims.scope") == true)

        // `require` on the profile of the introspected subject, fetched with the opaque token.
        let administered = try await get("/admin/panel", Self.admin)
        #expect(administered.status == 200)
        #expect(administered.echoedHeader("x-user-name") == ["admin-1@example.com"])
        #expect(try await get("/admin/panel", Self.reader).status == 403)
        let fetches = profiles.requests.map { $0.headers.first(name: "authorization") }
        #expect(fetches.contains(Self.admin) && fetches.contains(Self.reader))

        // Rate limits keyed by introspected claims: the subject's bucket holds across its two
        // tokens; another subject has its own.
        let first = try await get("/r/1", Self.writer)
        #expect(first.status == 200)
        #expect(first.echoedHeader("x-user-name") == ["writer-1@example.com"])
        RateLimitIntegrationTests.expectField(first.header("ratelimit"), "per-user", remaining: 1, reset: 1...100)
        #expect(try await get("/r/2", Self.writerAgain).status == 200)
        let refused = try await get("/r/3", Self.writer)
        #expect(refused.status == 429)
        #expect(refused.header("ratelimit-policy") == #""per-user";q=2;w=200"#)
        #expect(try await get("/r/4", Self.reader).status == 200)
        let readerAgain = try await get("/r/5", Self.reader)
        #expect(readerAgain.status == 200)
        RateLimitIntegrationTests.expectField(
            readerAgain.header("ratelimit"), "per-user", remaining: 0, reset: 101...200)
        #expect(endpoint.calls == 4, "one introspection per token")
    }
}
