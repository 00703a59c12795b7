import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// What the backend may never see, on every route kind (docs/authentication.md,
/// docs/forwarding.md): refresh tokens, and client-supplied values of identity headers — also those
/// no `stripInboundHeaderPrefixes` entry covers — including on WebSocket upgrades. Assertions are
/// on the headers the echo backend reports it received.
@Suite("Header stripping matrix (real sockets)", .awaitsCleanups)
struct HeaderStrippingTests {
    enum RouteKind: String, CaseIterable, Sendable {
        case required, optional, none
        var path: String { "/\(self.rawValue)/x" }
    }

    /// Identity headers: `X-Tenant` is outside the default prefixes (`X-User-`, `X-Auth-`), so
    /// only its being an `identityHeaders` name removes a forged value.
    static func gateway(authService: ScriptedAuthService) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["identityHeaders"] = ["X-Tenant": "claims.tenant", "X-User-Subject": "claims.sub"]
            config["authService"] = ["url": .string(authService.baseURL), "refresh": ["graceSeconds": 1]]
            config["routes"] = .array(
                RouteKind.allCases.map { kind in
                    [
                        "name": .string(kind.rawValue), "pathPrefix": .string("/\(kind.rawValue)/"), "backend": "api",
                        "auth": .string(kind.rawValue),
                    ]
                })
        }
    }

    static func refusingAuthService() async throws -> ScriptedAuthService {
        try await ScriptedAuthService.start { _ in .json(.internalServerError, ["error": "must not be called"]) }
    }

    @Test("a refresh token sent with a valid access token never reaches the backend", arguments: RouteKind.allCases)
    func refreshTokensAreNeverForwarded(_ kind: RouteKind) async throws {
        let service = try await Self.refusingAuthService()
        let gateway = try await Self.gateway(authService: service)
        atTestEnd {
            await gateway.stop()
            await service.stop()
        }
        let token = TestKeys.token(subject: "alice", extra: ["tenant": "acme"])
        let client = try await gateway.connect()
        // From the header source, with the access token in the Authorization header.
        let viaHeader = try await client.send(
            .get(kind.path, token: token, headers: [("X-Refresh-Token", "rt-secret-header")]))
        #expect(viaHeader.status == 200)
        #expect(viaHeader.echoedHeader("x-refresh-token").isEmpty)
        #expect(!viaHeader.text.contains("rt-secret-header"))
        #expect(viaHeader.echoedHeader("authorization") == ["Bearer \(token)"])

        // From the cookie source, the access token in its cookie: other cookies are kept.
        let viaCookie = try await client.send(
            TestRequest(
                .GET, kind.path,
                headers: [("Cookie", "theme=dark; refresh_token=rt-secret-cookie; access_token=\(token); lang=en")])
        )
        #expect(viaCookie.status == 200)
        #expect(viaCookie.echoedHeader("cookie") == ["theme=dark; access_token=\(token); lang=en"])
        #expect(!viaCookie.text.contains("rt-secret-cookie"))

        // Both sources at once, the access token in the header.
        let both = try await client.send(
            .get(
                kind.path, token: token,
                headers: [("X-Refresh-Token", "rt-secret-both"), ("Cookie", "refresh_token=rt-secret-both")])
        )
        #expect(both.status == 200)
        #expect(!both.text.contains("rt-secret-both"))
        #expect(both.echoedHeader("x-refresh-token").isEmpty)
        #expect(both.echoedHeader("cookie").allSatisfy { !$0.contains("refresh_token") })
        await client.close()
        #expect(service.requests.isEmpty)
        #expect(gateway.backend.requestCount == 3)
    }

    @Test(
        "a forged identity header outside the stripped prefixes is removed or replaced", arguments: RouteKind.allCases)
    func forgedIdentityHeadersAreStripped(_ kind: RouteKind) async throws {
        let service = try await Self.refusingAuthService()
        let gateway = try await Self.gateway(authService: service)
        atTestEnd {
            await gateway.stop()
            await service.stop()
        }
        let forged = [
            ("X-Tenant", "forged-tenant"), ("x-tenant", "forged-again"), ("X-User-Subject", "forged-subject"),
        ]
        let client = try await gateway.connect()

        // Without a token (refused on `required`).
        let anonymous = try await client.send(.get(kind.path, headers: forged))
        if kind == .required {
            #expect(anonymous.status == 401)
        } else {
            #expect(anonymous.status == 200)
            #expect(anonymous.echoedHeader("x-tenant").isEmpty)
            #expect(anonymous.echoedHeader("x-user-subject").isEmpty)
            #expect(!anonymous.text.contains("forged"))
        }

        // With a valid token carrying the claim: the verified value replaces the forged one
        // (on `none` nothing is verified, so nothing is added either).
        let withClaim = try await client.send(
            .get(kind.path, token: TestKeys.token(subject: "alice", extra: ["tenant": "acme"]), headers: forged))
        #expect(withClaim.status == 200)
        #expect(withClaim.echoedHeader("x-tenant") == (kind == .none ? [] : ["acme"]))
        #expect(withClaim.echoedHeader("x-user-subject") == (kind == .none ? [] : ["alice"]))
        #expect(!withClaim.text.contains("forged"))

        // With a valid token lacking the claim: the forged value is removed, not kept.
        let withoutClaim = try await client.send(
            .get(kind.path, token: TestKeys.token(subject: "bob"), headers: forged))
        #expect(withoutClaim.status == 200)
        #expect(withoutClaim.echoedHeader("x-tenant").isEmpty)
        #expect(!withoutClaim.text.contains("forged"))
        await client.close()
    }

    @Test(
        "forged identity headers and refresh tokens are stripped from a WebSocket upgrade",
        arguments: RouteKind.allCases)
    func webSocketUpgradesAreStrippedToo(_ kind: RouteKind) async throws {
        let service = try await Self.refusingAuthService()
        let gateway = try await Self.gateway(authService: service)
        atTestEnd {
            await gateway.stop()
            await service.stop()
        }
        let token = TestKeys.token(subject: "alice", extra: ["tenant": "acme"])
        let raw = try await gateway.raw()
        // The echo backend does not switch protocols: it answers 200 with what it received.
        try await raw.send(
            "GET \(kind.path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "X-Tenant: forged-tenant\r\nX-User-Subject: forged-subject\r\nX-Auth-Role: forged-role\r\n"
                + "X-Refresh-Token: rt-secret-ws\r\nCookie: refresh_token=rt-secret-ws; theme=dark\r\n\r\n"
        )
        #expect(await raw.waitFor { $0.contains("\"uri\"") && $0.hasSuffix("}") })
        #expect(raw.firstStatus == 200)
        let body = try #require(raw.received.range(of: "\r\n\r\n").map { String(raw.received[$0.upperBound...]) })
        let echoed = try #require(try JSONValue(parsing: body)["headers"]?.objectValue)
        func values(_ name: String) -> [String] { echoed[name]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        #expect(values("upgrade") == ["websocket"])
        #expect(values("x-tenant") == (kind == .none ? [] : ["acme"]))
        #expect(values("x-user-subject") == (kind == .none ? [] : ["alice"]))
        #expect(values("x-auth-role").isEmpty)
        #expect(values("x-refresh-token").isEmpty)
        #expect(values("cookie") == ["theme=dark"])
        #expect(!body.contains("forged") && !body.contains("rt-secret-ws"))
        await raw.close()
    }
}
