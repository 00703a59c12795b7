import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// Identity for backends in authorizer mode (docs/authorizer.md, docs/assertions.md,
/// docs/token-exchange.md): through a real nginx and a real Caddy configured with the
/// snippets of docs/authorizer.md (`FrontProxy`), and through grpcio's `Check` (what Envoy
/// then sends upstream), the application receives the gateway's assertion — verified by
/// joserfc against the gateway's JWKS — and the token idpyoidc exchanged the caller's for,
/// never the caller's own token nor a client's assertion. A route without them keeps the
/// client's token and gets no assertion.
@Suite(
    "Authorizer: assertion and exchanged token through nginx, Caddy and gRPC Check", .serialized,
    .awaitsCleanups, .timeLimit(.minutes(4)))
struct IdentityFrontProxyTests {
    /// A gateway in authorizer mode: `/api/` signs for `orders-api` and exchanges at `server`;
    /// the rest does neither.
    static func gateway(_ server: ExchangeServer) async throws -> GatewayFixture {
        let keys = try IdentityPeers.KeysFile()
        try keys.write([try IdentityPeers.entry("k1", "current")])
        let gateway = try await GatewayFixture.start { config in
            config["authorizer"] = [:]
            config.set("tokens.issuers", [ExchangeEndToEnd.issuer(server)])
            config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Email": "claims.email"]
            config["identityAssertion"] = IdentityPeers.section(keys)
            config["routes"] = [
                [
                    "name": "api", "pathPrefix": "/api/", "backend": "api",
                    "assertion": ["audience": "orders-api"], "exchange": ExchangeEndToEnd.exchange(server),
                ],
                ["name": "other", "pathPrefix": "/", "backend": "api"],
            ]
        }
        atTestEnd { await gateway.stop() }
        return gateway
    }

    static let forged = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."

    /// Through `kind`: the application's view of `/api/orders` and of `/other`.
    func throughProxy(_ kind: FrontProxy.Kind) async throws {
        let server = try await ExchangeServer.start()
        atTestEnd { await server.tool.stop() }
        let gateway = try await Self.gateway(server)
        let proxy = try await FrontProxy.start(kind, gatewayPort: gateway.port, backendPort: gateway.backend.port)
        atTestEnd { await proxy.stop() }
        let caller = try await server.mint()

        let response = try await proxy.send(
            .get("/api/orders?id=7", token: caller.token, headers: [("X-Gateway-Assertion", Self.forged)]))
        #expect(response.status == 200, "\(kind): \(response.text) \(proxy.log.suffix(1500))")
        let exchanged = try ExchangeEndToEnd.exchanged(response, caller: caller.token)
        #expect(try IdentityPeers.decode(exchanged).claims["aud"] == ["orders-api"])
        let assertion = try IdentityPeers.assertion(response)
        #expect(assertion != Self.forged)
        let verdict = try await IdentityPeers.verify(
            jwks: try await IdentityPeers.jwks(port: gateway.port), [.init(token: assertion, audience: "orders-api")])
        #expect(verdict[0]["ok"] == true, "\(kind): \(verdict)")
        #expect(verdict[0]["claims"]?["auth"] == "jwt")
        #expect(try await server.calls() == 1)

        // Another route: the client's own token, no assertion (neither the client's nor a placeholder).
        let other = try await proxy.send(
            .get("/other", token: caller.token, headers: [("X-Gateway-Assertion", Self.forged)]))
        #expect(other.status == 200, "\(kind): \(other.text)")
        #expect(other.echoedHeader("authorization") == ["Bearer \(caller.token)"], "\(kind)")
        #expect(other.echoedHeader("x-gateway-assertion") == [], "\(kind)")
        #expect(gateway.backend.requestCount == 2)
    }

    @Test func nginxAuthRequest() async throws { try await self.throughProxy(.nginx) }

    @Test func caddyForwardAuth() async throws { try await self.throughProxy(.caddy) }

    /// Envoy's HTTP `ext_authz` copies the answer's headers named in `allowed_upstream_headers`
    /// and leaves a client's own in place when the answer lacks one: on a route that signs no
    /// assertion the answer carries the assertion header empty, as it does an identity header
    /// without a value, so a client's forged assertion is overwritten.
    @Test("Envoy over HTTP: every allow answers the assertion header, empty where the route signs none")
    func envoyExtAuthzAnswersTheAssertionHeader() async throws {
        let server = try await ExchangeServer.start()
        atTestEnd { await server.tool.stop() }
        let gateway = try await Self.gateway(server)
        let caller = try await server.mint()
        let other = try await gateway.send(
            TestRequest(
                .GET, "/.gateway/authz/ext-authz/other",
                headers: [("Authorization", "Bearer \(caller.token)"), ("X-Gateway-Assertion", Self.forged)]))
        #expect(other.status == 200, "\(other.text)")
        #expect(other.header("X-Gateway-Assertion") == "", "answered, empty")
        let signed = try await gateway.send(
            TestRequest(
                .GET, "/.gateway/authz/ext-authz/api/orders",
                headers: [("Authorization", "Bearer \(caller.token)"), ("X-Gateway-Assertion", Self.forged)]))
        #expect(signed.status == 200, "\(signed.text)")
        let assertion = try #require(signed.header("X-Gateway-Assertion"))
        #expect(!assertion.isEmpty && assertion != Self.forged)
        #expect(gateway.backend.requestCount == 0)
    }

    @Test("gRPC Check (grpcio): Envoy sends the application the exchanged token and the assertion, not the client's")
    func grpcCheck() async throws {
        let server = try await ExchangeServer.start()
        atTestEnd { await server.tool.stop() }
        let gateway = try await Self.gateway(server)
        let caller = try await server.mint()
        let python = try ExternalTool.require("python3", package: "python3")
        let run = try await ExternalTool.run(
            python, [AuthorizerCheckTests.script, String(gateway.port), caller.token, "identity"],
            timeout: .seconds(90))
        try #require(run.status == 0, "check_client.py exited \(run.status): \(run.stderr)")
        let outcome = try #require(try JSONValue(parsing: run.stdout)["identity"])
        #expect(outcome["which"] == "ok_response", "\(outcome)")
        let headers = try #require(outcome["headers"])
        let authorization = try #require(headers["authorization"]?.stringValue, "\(outcome)")
        #expect(authorization.hasPrefix("Bearer ") && !authorization.contains(caller.token))
        #expect(outcome["append"]?["authorization"] == "OVERWRITE_IF_EXISTS_OR_ADD")
        // What Envoy then sends upstream (set, then remove): the gateway's values, never the client's.
        let upstream = try #require(outcome["upstream"], "\(outcome)")
        #expect(upstream["authorization"]?.stringValue == authorization, "\(outcome)")
        let assertion = try #require(upstream["x-gateway-assertion"]?.stringValue, "\(outcome)")
        #expect(assertion == headers["x-gateway-assertion"]?.stringValue)
        // And the identity header the gateway set over the client's forged one.
        let subject = try #require(headers["x-user-subject"]?.stringValue)
        #expect(subject != "forged")
        #expect(upstream["x-user-subject"]?.stringValue == subject, "\(outcome)")
        #expect(!run.stdout.contains(caller.token), "the caller's token is nowhere in the answer")
        let verdict = try await IdentityPeers.verify(
            jwks: try await IdentityPeers.jwks(port: gateway.port), [.init(token: assertion, audience: "orders-api")])
        #expect(verdict[0]["ok"] == true, "\(verdict)")
        #expect(try await server.calls() == 1)
        #expect(gateway.backend.requestCount == 0)
    }
}
