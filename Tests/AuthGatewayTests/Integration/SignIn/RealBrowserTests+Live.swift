import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// The demo's live page in a real browser (docs/streams.md, "The demo"): the page's own script
/// opens the WebSocket with the browser's session cookie, and the page's sign-out link (a new
/// tab) makes the gateway close it with 1008, which the page shows.
extension RealBrowserTests {
    @Test("the demo's live page: its WebSocket ticks, and its sign-out link closes it with 1008")
    func demoLivePage() async throws {
        let (gateway, base, _) = try await DemoLivePageTests.startDemo()
        let report = try await HeadlessBrowser.run(
            flow: "live", gateway: base, arguments: ["--page", base + DemoRunner.livePath])
        #expect(report["login"]?["query"]?["client_id"] == "gateway", "\(report)")
        #expect((report["ticks"]?.int ?? 0) > 0, "the page showed the backend's ticks: \(report)")
        #expect(report["code"]?.stringValue == "1008", "\(report)")
        #expect(report["status"]?.stringValue?.contains("session ended") == true, "\(report)")
        // At once (as DemoLivePageTests): 10 s, not 2, for Chromium on a loaded 2-core machine; the
        // tunnel's other ends (the token's expiry, the page's timeout) are minutes away.
        #expect((report["closedAfterSeconds"]?.numberValue?.double ?? .infinity) <= 10, "\(report)")
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"sign_out\"} 1"), "\(metrics)")
    }
}
