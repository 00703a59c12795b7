import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `signals.trustedPeers` (docs/streams.md): a transmitter outside the listed networks gets 403
/// before its body is read, and nothing is decided; one inside has its SET read (and here,
/// refused as no SET: 400 with RFC 8935's error document).
@Suite("Shared Signals: trusted peers (real sockets)", .awaitsCleanups, .timeLimit(.minutes(2)))
struct SignalsPeerTests {
    static func gateway(trustedPeers: [String]) async throws -> GatewayFixture {
        let gateway = try await GatewayFixture.start { config in
            config["signals"] = [
                "issuer": .string(TestKeys.issuer), "audience": "gateway",
                "trustedPeers": .array(trustedPeers.map { .string($0) }),
            ]
        }
        atTestEnd { await gateway.stop() }
        return gateway
    }

    static let delivery = TestRequest(
        .POST, "/.gateway/signals",
        headers: [("Content-Type", "application/secevent+jwt"), ("Accept", "application/json")], body: "not.a.set")

    @Test func aTransmitterOutsideTrustedPeersIs403AndOneInsideIsHeard() async throws {
        let outside = try await Self.gateway(trustedPeers: ["10.0.0.0/8", "::1/128"])
        let refused = try await outside.send(Self.delivery)
        #expect(refused.status == 403, "\(refused.text)")
        #expect(refused.json?["detail"]?.stringValue?.contains("signals.trustedPeers") == true, "\(refused.text)")
        #expect(refused.json?["err"] == nil, "the SET was never read")
        // The refusal is the signals endpoint's: the connection serves the next request.
        #expect(try await outside.send(.get("/x", token: TestKeys.token())).status == 200)

        let inside = try await Self.gateway(trustedPeers: ["127.0.0.0/8"])
        let heard = try await inside.send(Self.delivery)
        #expect(heard.status == 400, "\(heard.text)")
        #expect(heard.json?["err"]?.stringValue == "invalid_request", "\(heard.text)")
        #expect(outside.backend.requestCount == 1 && inside.backend.requestCount == 0)
    }
}
