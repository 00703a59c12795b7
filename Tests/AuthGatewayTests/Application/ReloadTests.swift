import Foundation
import NIOConcurrencyHelpers
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// docs/operations.md: a reload keeps what the gateway has learned — refreshes in flight and their
/// grace outcomes, cached profiles while the profile section is unchanged.
@Suite("Configuration reload keeps learned state (real sockets)", .awaitsCleanups)
struct ReloadTests {
    /// The sign-out this prevents: with a rotating auth service, a second refresh of the old
    /// pair after a reload would be refused as reuse (401, cookies cleared).
    @Test func aReloadKeepsRefreshesInFlightAndTheirGraceOutcomes() async throws {
        let rainmaker = try await RotatingRainMaker.start(delayMilliseconds: 300)
        atTestEnd { await rainmaker.service.stop() }
        let gateway = try await RefreshTests.gateway(authService: rainmaker.service.baseURL, grace: 30)
        atTestEnd { await gateway.stop() }
        let headers = [
            ("Authorization", "Bearer \(TestKeys.token(subject: "frank", expiresIn: -60))"),
            ("X-Refresh-Token", rainmaker.issueRefreshToken()),
        ]

        // A refresh is in flight when the configuration is reloaded…
        async let first = gateway.send(TestRequest(.GET, "/before", headers: headers))
        try await poll { rainmaker.refreshCalls == 1 }
        try gateway.reload { config in config["identityHeaders"] = ["X-User-Name": "claims.email"] }
        // …a request with the same pair after the reload joins it instead of calling again.
        let joined = try await gateway.send(TestRequest(.GET, "/during", headers: headers))
        let original = try await first
        #expect(original.status == 200)
        #expect(joined.status == 200)
        #expect(joined.header("x-access-token") == original.header("x-access-token"))
        // The new configuration applies to it.
        #expect(joined.echoedHeader("x-user-name") == ["frank@example.com"])

        // After another reload, a late request with the old pair gets the remembered outcome.
        try gateway.reload { config in config["identityHeaders"] = ["X-User-Subject": "claims.sub"] }
        let late = try await gateway.send(TestRequest(.GET, "/late", headers: headers))
        #expect(late.status == 200)
        #expect(late.header("x-access-token") == original.header("x-access-token"))
        #expect(rainmaker.refreshCalls == 1)
    }

    @Test func aReloadKeepsCachedProfilesWhileTheProfileSectionIsUnchanged() async throws {
        let service = try await ProfileTests.userService()
        atTestEnd { await service.stop() }
        let gateway = try await ProfileTests.gateway(service: service)
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "gina")
        #expect(try await gateway.send(.get("/p", token: token)).echoedHeader("x-user-id") == ["id-gina"])
        #expect(service.calls("/v1/user") == 1)

        // Another part of the configuration changes: the profile is still cached.
        try gateway.reload { config in config["stripInboundHeaderPrefixes"] = ["X-User-", "X-Auth-", "X-Internal-"] }
        #expect(try await gateway.send(.get("/p", token: token)).echoedHeader("x-user-id") == ["id-gina"])
        #expect(service.calls("/v1/user") == 1)

        // The profile section changes: its cache starts afresh.
        try gateway.reload { config in config.set("authService.profile.ttlSeconds", 120) }
        #expect(try await gateway.send(.get("/p", token: token)).echoedHeader("x-user-id") == ["id-gina"])
        #expect(service.calls("/v1/user") == 2)
    }
}

extension ReloadTests {
    /// docs/operations.md: a reload keeps the open keep-alive connections of unchanged backends.
    /// The echo backend counts the connections it accepted: requests before and after two reloads
    /// (one changing the identity headers, one adding another backend and route) share the one
    /// pooled connection.
    @Test func aReloadKeepsKeepAliveConnectionsOfUnchangedBackends() async throws {
        let other = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await other.close() }
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "kim")
        #expect(try await gateway.send(.get("/before", token: token)).status == 200)
        #expect(gateway.backend.connectionCount == 1)

        try gateway.reload { config in config["identityHeaders"] = ["X-User-Subject": "claims.sub"] }
        let afterFirst = try await gateway.send(.get("/after-identity", token: token))
        #expect(afterFirst.status == 200)
        // The reload took effect…
        #expect(afterFirst.echoedHeader("x-user-subject") == ["kim"])
        // …on the same backend connection.
        #expect(gateway.backend.connectionCount == 1, "the reload dropped the idle backend connection")

        try gateway.reload { config in
            config["backends"] = [
                "api": ["urls": [.string(gateway.backend.baseURL)]], "other": ["urls": [.string(other.baseURL)]],
            ]
            config["routes"] = [
                ["name": "other", "pathPrefix": "/other/", "backend": "other"],
                ["name": "default", "pathPrefix": "/", "backend": "api"],
            ]
        }
        #expect(try await gateway.send(.get("/other/x", token: token)).status == 200)
        #expect(other.requestCount == 1, "the new route and backend are in use")
        #expect(try await gateway.send(.get("/after-backends", token: token)).status == 200)
        #expect(gateway.backend.requestCount == 3)
        #expect(gateway.backend.connectionCount == 1, "adding a backend dropped the unchanged one's connection")
    }
}
