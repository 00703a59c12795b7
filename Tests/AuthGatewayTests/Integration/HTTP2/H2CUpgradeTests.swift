import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// `Upgrade: h2c` on an HTTP/1.1 request (docs/http2.md): what `curl --http2` and Java's
/// HttpClient send on http:// URLs. The gateway ignores the upgrade (RFC 9110 §7.8): it
/// answers over HTTP/1.1 and never forwards `Upgrade`, `HTTP2-Settings` or the `Connection`
/// tokens naming them.
@Suite("Upgrade: h2c is ignored (real sockets)", .timeLimit(.minutes(2)), .awaitsCleanups)
struct H2CUpgradeTests {
    @Test func curlHTTP2OnAnHTTPURLIsServedOverHTTP1AndTheUpgradeIsNotForwarded() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "upgrade-user")
        // curl sends `Connection: Upgrade, HTTP2-Settings`, `Upgrade: h2c` and `HTTP2-Settings`.
        let result = try await HTTP2ClientTests.curl([
            "--http2", "--include", "-H", "Authorization: Bearer \(token)",
            "http://127.0.0.1:\(gateway.port)/items?q=1",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let response = HTTP2ClientTests.parse(result.stdout)
        #expect(response.version == "HTTP/1.1")
        #expect(response.status == 200)
        let echoed = try #require(try JSONValue(parsing: response.body).objectValue)
        #expect(echoed["uri"]?.stringValue == "/items?q=1")
        let headers = try #require(echoed["headers"]?.objectValue)
        #expect(headers["upgrade"] == nil)
        #expect(headers["http2-settings"] == nil)
        #expect(headers["connection"] == nil)
        #expect(headers["authorization"]?.arrayValue?.first?.stringValue == "Bearer \(token)")
    }

    /// The same by hand, with an `HTTP2-Settings` the client forgot to name in `Connection`;
    /// the connection stays usable for a second request.
    @Test func anH2CUpgradeIsAnOrdinaryKeepAliveRequest() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let raw = try await gateway.raw()
        atTestEnd { await raw.close() }
        let token = TestKeys.token()
        try await raw.send(
            "GET /first HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nConnection: keep-alive, Upgrade\r\n"
                + "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
        )
        #expect(await raw.waitFor { $0.contains("first\"") })
        #expect(raw.firstStatus == 200)
        #expect(!raw.received.contains("101 Switching"))
        try await raw.send("GET /second HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
        #expect(await raw.waitFor { $0.contains("second\"") })
        #expect(!raw.isClosed)
        #expect(!raw.received.lowercased().contains("\"upgrade\""))
        #expect(!raw.received.lowercased().contains("http2-settings"))
        #expect(gateway.backend.requestCount == 2)
    }
}
