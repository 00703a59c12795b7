import Foundation
import NIOHTTP2
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// `auth_gateway_open_connections` (docs/operations.md: open connections), read from a real scrape
/// of the admin listener's `/metrics` while clients connect and leave.
@Suite("Open connections gauge (real sockets, /metrics)", .awaitsCleanups)
struct OpenConnectionsMetricTests {
    /// The gauge's value in a fresh scrape (its connection closed again; the admin listener's
    /// connections are not client connections of the main listener).
    static func openConnections(_ gateway: GatewayFixture) async throws -> Int? {
        let admin = try await TestConnection.connect(port: gateway.adminPort)
        let text = try await withCleanup({ await admin.close() }) { () async throws in
            try await admin.send(.get("/metrics")).text
        }
        let prefix = "auth_gateway_open_connections "
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) }
    }

    @Test func theGaugeRisesAndFallsWithClientConnections() async throws {
        let gateway = try await GatewayFixture.start { config in config["eventLoopThreads"] = 2 }
        atTestEnd { await gateway.stop() }
        let initial = try await Self.openConnections(gateway)
        #expect(initial == 0, "no client connection yet: \(String(describing: initial))")

        // Three HTTP/1.1 clients and one HTTP/2 client, each served once (so each is
        // accepted), all kept open.
        var http1: [TestConnection] = []
        for index in 0..<3 {
            let connection = try await gateway.connect()
            atTestEnd { await connection.close() }
            #expect(try await connection.send(.get("/open/\(index)", token: TestKeys.token())).status == 200)
            http1.append(connection)
        }
        let h2 = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await h2.close() }
        let served = try await h2.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(
                        path: "/open/h2", fields: [("authorization", "Bearer \(TestKeys.token())")]), endStream: true))
        ])
        #expect(served.status == 200)
        #expect(try await eventually { try await Self.openConnections(gateway) == 4 })

        // Leaving one by one, the gauge follows.
        await http1[0].close()
        #expect(try await eventually { try await Self.openConnections(gateway) == 3 })
        await h2.close()
        #expect(try await eventually { try await Self.openConnections(gateway) == 2 })
        for connection in http1.dropFirst() { await connection.close() }
        #expect(try await eventually { try await Self.openConnections(gateway) == 0 })

        // A connection the gateway closes itself (a malformed request: 400 and close) is
        // counted out too.
        let raw = try await gateway.raw()
        atTestEnd { await raw.close() }
        try await raw.send("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
        #expect(await raw.waitForClose(timeout: .seconds(10)))
        #expect(raw.firstStatus == 400)
        #expect(try await eventually { try await Self.openConnections(gateway) == 0 })
    }
}
