import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `credential-change` and `token-claims-change` (docs/streams.md, "Shared Signals"): the
/// subject's next request is decided afresh — on every event loop, whatever its own memo of
/// recent answers holds — and nobody else's is.
@Suite(
    "Shared Signals: a credential change reaches every cache (real sockets)", .awaitsCleanups,
    .timeLimit(.minutes(2)))
struct SignalCacheTests {
    static func set(_ event: SecurityEvent.Kind, subject: String, jti: String, now: Double) throws -> String {
        try TestKeys.rsa.sign(
            [
                "iss": .string(TestKeys.issuer), "aud": "gateway", "iat": .number(JSONNumber(Int(now))),
                "jti": .string(jti), "events": [event.uri: [:]],
                "sub_id": ["format": "iss_sub", "iss": .string(TestKeys.issuer), "sub": .string(subject)],
            ], header: ["typ": "secevent+jwt"])
    }

    static func deliver(_ set: String, to gateway: GatewayFixture) async throws -> TestResponse {
        try await gateway.send(
            TestRequest(
                .POST, "/.gateway/signals",
                headers: [("Content-Type", "application/secevent+jwt"), ("Accept", "application/json")], body: set))
    }

    /// An opaque token answered from the connection's loop memo is introspected again after a
    /// `credential-change` for its subject, and refused when the endpoint now says inactive;
    /// another subject's token stays answered without a call.
    @Test(arguments: [SecurityEvent.Kind.credentialChange, .tokenClaimsChange])
    func anIntrospectedTokenIsAskedAboutAgain(_ event: SecurityEvent.Kind) async throws {
        let endpoint = try await ScriptedIntrospection.start()
        atTestEnd { await endpoint.service.stop() }
        let clock = TestClock()
        let gateway = try await IntrospectionTests.gateway(endpoint, clock: clock) { config in
            config["signals"] = ["issuer": .string(TestKeys.issuer), "audience": "gateway"]
        }
        atTestEnd { await gateway.stop() }
        endpoint.set("opaque-alice", IntrospectionTests.activeAnswer(subject: "alice", clock: clock))
        endpoint.set("opaque-bob", IntrospectionTests.activeAnswer(subject: "bob", clock: clock))
        // One keep-alive connection: one loop, whose memo answers the repeats.
        let connection = try await TestConnection.connect(port: gateway.port)
        atTestEnd { await connection.close() }
        func status(_ token: String) async throws -> Int {
            try await connection.send(TestRequest(.GET, "/opaque", headers: [("Authorization", "Bearer \(token)")]))
                .status
        }
        for token in ["opaque-alice", "opaque-bob", "opaque-alice", "opaque-bob"] {
            #expect(try await status(token) == 200)
        }
        #expect(endpoint.calls == 2, "one call per token; the repeats were answered without one")

        endpoint.set("opaque-alice", ["active": false])
        let accepted = try await Self.deliver(
            try Self.set(event, subject: "alice", jti: "change-\(event.rawValue)", now: clock.now), to: gateway)
        #expect(accepted.status == 202, "\(accepted.text)")
        #expect(try await status("opaque-alice") == 401, "alice's token was decided afresh")
        #expect(endpoint.calls == 3)
        #expect(try await status("opaque-bob") == 200)
        #expect(endpoint.calls == 3, "bob's answer is still cached")
    }

    /// A token exchanged for a subject is not used again after a `credential-change` for it:
    /// the connection's loop, which held it, exchanges afresh (idpyoidc counts the calls).
    @Test func anExchangedTokenIsExchangedAgain() async throws {
        let server = try await ExchangeServer.start()
        atTestEnd { await server.tool.stop() }
        let gateway = try await GatewayFixture.start { config in
            ExchangeEndToEnd.configure(&config, server)
            // The signals' transmitter is the test issuer, beside idpyoidc.
            let testIssuer =
                GatewayFixture.baseConfiguration(backendURL: "http://127.0.0.1:9")["tokens"]?["issuers"]?.arrayValue?
                .first ?? .null
            config.set("tokens.issuers", .array((config["tokens"]?["issuers"]?.arrayValue ?? []) + [testIssuer]))
            config["signals"] = ["issuer": .string(TestKeys.issuer), "audience": "gateway"]
        }
        atTestEnd { await gateway.stop() }
        let caller = try await server.mint()
        let connection = try await TestConnection.connect(port: gateway.port)
        atTestEnd { await connection.close() }
        let first = try ExchangeEndToEnd.exchanged(
            try await connection.send(.get("/orders/1", token: caller.token)), caller: caller.token)
        let again = try ExchangeEndToEnd.exchanged(
            try await connection.send(.get("/orders/2", token: caller.token)), caller: caller.token)
        #expect(again == first)
        #expect(try await server.calls() == 1)

        let subject = try #require(try IdentityPeers.decode(first).claims["sub"]?.stringValue)
        let now = Date().timeIntervalSince1970
        let accepted = try await Self.deliver(
            try Self.set(.credentialChange, subject: subject, jti: "change-exchange", now: now), to: gateway)
        #expect(accepted.status == 202, "\(accepted.text)")
        let afresh = try ExchangeEndToEnd.exchanged(
            try await connection.send(.get("/orders/3", token: caller.token)), caller: caller.token)
        #expect(try await server.calls() == 2, "exchanged again after the credential change")
        #expect(!afresh.isEmpty)
    }
}
