import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// A request whose decision waits on the auth service (a refresh) while a reload replaces the
/// configuration (docs/operations.md, SIGHUP): it goes to the backend of the same name in the
/// configuration now in force, or gets 502 when the reload removed that name — never the pool
/// of another backend, never a crash.
@Suite("Reload while a decision waits (real sockets)", .timeLimit(.minutes(3)), .awaitsCleanups)
struct ReloadWhileDecidingTests {
    /// Parks one request on a held refresh, reloads with `reloaded`, proves the loop applied it
    /// (a route only the new configuration has answers), then lets the refresh answer.
    private func parkedAcrossAReload(
        probeBackend: String, _ reloaded: @escaping (inout JSONObject, String) -> Void
    ) async throws -> (response: TestResponse, gateway: GatewayFixture, backendRequestsBefore: Int) {
        let rainmaker = try await RotatingRainMaker.start()
        atTestEnd { await rainmaker.service.stop() }
        // A generous auth-service timeout: the refresh is held while the reload is applied and probed.
        let gateway = try await RefreshTests.gateway(
            authService: rainmaker.service.baseURL, threads: 1, timeout: 120_000)
        let expired = TestKeys.token(subject: "alice", expiresIn: -60)
        let headers = [("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", rainmaker.issueRefreshToken())]
        rainmaker.gate.hold()
        let parked = Task { try await gateway.send(TestRequest(.GET, "/parked", headers: headers)) }
        #expect(await eventually(timeout: .seconds(60)) { rainmaker.refreshCalls == 1 })
        let backendURL = gateway.backend.baseURL
        try gateway.reload { config in
            reloaded(&config, backendURL)
            var routes = config["routes"]?.arrayValue ?? []
            routes.insert(
                ["name": "probe", "path": "/reloaded-probe", "backend": .string(probeBackend), "auth": "none"], at: 0)
            config["routes"] = .array(routes)
        }
        let applied = await eventually(timeout: .seconds(60)) {
            (try? await gateway.send(TestRequest(.GET, "/reloaded-probe")))?.status == 200
        }
        #expect(applied)
        let before = gateway.backend.requestCount
        rainmaker.gate.release()
        return (try await parked.value, gateway, before)
    }

    @Test("the backend's settings changed: the request goes to the backend of that name now")
    func changedBackend() async throws {
        let (response, gateway, before) = try await self.parkedAcrossAReload(probeBackend: "api") { config, url in
            config["backends"] = ["api": ["urls": [.string(url)], "maxConnectionsPerThread": 7]]
        }
        atTestEnd { await gateway.stop() }
        #expect(response.status == 200, "\(response.text)")
        #expect(response.echoedHeader("x-user-subject") == ["alice"])
        #expect(gateway.backend.requestCount == before + 1)
    }

    @Test("the backend was removed: 502, nothing sent to another backend")
    func removedBackend() async throws {
        let (response, gateway, before) = try await self.parkedAcrossAReload(probeBackend: "moved") { config, url in
            config["backends"] = ["moved": ["urls": [.string(url)]]]
            config["routes"] = [["name": "default", "pathPrefix": "/", "backend": "moved"]]
        }
        atTestEnd { await gateway.stop() }
        #expect(response.status == 502, "\(response.text)")
        #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:upstream.unreachable")
        #expect(gateway.backend.requestCount == before)
    }
}
