import Foundation
import NIOHTTP2
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// `trustedProxies` end to end (docs/forwarding.md), on a real socket whose peer is 127.0.0.1: a
/// client's own `X-Forwarded-*` are honoured (For appended to, Proto and Host kept) only when
/// the peer address is in the list; otherwise they are replaced by the connection's facts.
@Suite("trustedProxies (real sockets)", .awaitsCleanups)
struct TrustedProxiesTests {
    static let forwarded = [
        ("X-Forwarded-For", "203.0.113.7, 198.51.100.2"), ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "app.example"),
    ]

    @Test func forwardedHeadersFromATrustedPeerAreKeptAndAppendedTo() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["trustedProxies"] = ["10.0.0.0/8", "127.0.0.1/32"]
        }
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(.get("/trusted", token: TestKeys.token(), headers: Self.forwarded))
        #expect(response.status == 200)
        #expect(response.echoedHeader("x-forwarded-for") == ["203.0.113.7, 198.51.100.2, 127.0.0.1"])
        #expect(response.echoedHeader("x-forwarded-proto") == ["https"])
        #expect(response.echoedHeader("x-forwarded-host") == ["app.example"])

        // Over HTTP/2 the same (the peer is the same proxy).
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        let fields =
            [("authorization", "Bearer \(TestKeys.token())")] + Self.forwarded.map { ($0.0.lowercased(), $0.1) }
        let overH2 = try await client.exchange([
            .headers(.init(headers: H2TestClient.request(path: "/trusted-h2", fields: fields), endStream: true))
        ])
        #expect(overH2.status == 200)
        let headers = (try? JSONValue(parsing: String(buffer: overH2.body)))?["headers"]
        #expect(
            headers?["x-forwarded-for"]?.arrayValue?.compactMap(\.stringValue) == [
                "203.0.113.7, 198.51.100.2, 127.0.0.1"
            ])
        #expect(headers?["x-forwarded-proto"]?.arrayValue?.compactMap(\.stringValue) == ["https"])
        #expect(headers?["x-forwarded-host"]?.arrayValue?.compactMap(\.stringValue) == ["app.example"])
    }

    /// A list that does not hold the peer (10.0.0.0/8 and ::1, not 127.0.0.1): the client's
    /// values are dropped.
    @Test func forwardedHeadersFromAnUntrustedPeerAreReplaced() async throws {
        let gateway = try await GatewayFixture.start { config in config["trustedProxies"] = ["10.0.0.0/8", "::1/128"] }
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(.get("/untrusted", token: TestKeys.token(), headers: Self.forwarded))
        #expect(response.status == 200)
        #expect(response.echoedHeader("x-forwarded-for") == ["127.0.0.1"])
        #expect(response.echoedHeader("x-forwarded-proto") == ["http"])
        #expect(response.echoedHeader("x-forwarded-host") == ["127.0.0.1"])
    }
}
