import Foundation
import NIOCore
import NIOPosix
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

@Suite("Health, metrics and drain (real sockets)", .awaitsCleanups)
struct LifecycleTests {
    @Test func healthEndpointsOnBothListeners() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        for port in [gateway.port, gateway.adminPort] {
            let client = try await TestConnection.connect(port: port)
            let live = try await client.send(.get("/livez"))
            #expect(live.status == 200)
            let ready = try await client.send(.get("/readyz"))
            #expect(ready.status == 200)
            let health = try await client.send(.get("/healthz"))
            #expect(health.status == 200)
            #expect(health.json?["status"]?.stringValue == "ok")
            #expect(health.json?["checks"]?["keys"]?["https://issuer.test"]?["keys"]?.numberValue?.exactInt == 1)
            await client.close()
        }
        // Health paths never reach the backend, and need no token.
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func metricsCountRequestsByRouteStatusClassAndFailureReason() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        let token = TestKeys.token()
        for _ in 0..<3 { _ = try await client.send(.get("/ok", token: token)) }
        _ = try await client.send(.get("/no-token"))
        _ = try await client.send(.get("/expired", token: TestKeys.token(expiresIn: -60)))
        await client.close()
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics"))
        #expect(metrics.status == 200)
        #expect(metrics.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = metrics.text
        #expect(
            text.contains(
                "auth_gateway_requests_total{route=\"default\",status_class=\"2xx\",protocol=\"http/1.1\"} 3\n"))
        // Refused requests count under the route they matched (SPEC §4.6), not "-".
        #expect(
            text.contains(
                "auth_gateway_requests_total{route=\"default\",status_class=\"4xx\",protocol=\"http/1.1\"} 2\n"))
        #expect(text.contains("auth_gateway_auth_failures_total{reason=\"missing\"} 1\n"))
        #expect(text.contains("auth_gateway_auth_failures_total{reason=\"expired\"} 1\n"))
        #expect(text.contains("auth_gateway_upstream_duration_seconds_count{backend=\"api\"} 3\n"))
        #expect(text.contains("# TYPE auth_gateway_upstream_duration_seconds histogram"))
        // One valid token used three times, plus the expired one (its signature verified; only
        // the clock refuses it, on every use).
        #expect(text.contains("auth_gateway_verified_token_cache_entries 2\n"))
    }

    @Test func drainFinishesInFlightRequestsAndStopsAccepting() async throws {
        // The in-flight request is held by the backend until the checks below are done (they
        // poll for the draining state, however slowly a loaded machine gets there); the drain
        // timeout is far longer, so the drain ending soon after the release shows that it
        // waited for the request, not for the timeout.
        let gate = ReplyGate()
        let backend = try await ScriptedAuthService.start { request, eventLoop in
            let response = SimpleResponse.json(.ok, ["path": .string(request.path)])
            return request.path == "/held"
                ? gate.pass(response, on: eventLoop) : eventLoop.makeSucceededFuture(response)
        }
        atTestEnd { await backend.stop() }
        let gateway = try await GatewayFixture.start { config in
            config.set("timeouts.drainSeconds", 60)
            config["backends"] = ["api": ["urls": [.string(backend.baseURL)]]]
        }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        let idle = try await gateway.connect()
        #expect(try await idle.send(.get("/warm", token: token)).status == 200)
        gate.hold()
        let busy = try await gateway.connect()
        let inFlight = Task { try await busy.send(.get("/held", token: token)) }
        #expect(await eventually { gate.heldCount == 1 })
        let drain = Task { await gateway.application.drain() }
        // Readiness turns 503 on the admin listener; the main listener accepts no more.
        #expect(
            await eventually {
                (try? await TestConnection.connect(port: gateway.adminPort).send(.get("/readyz")).status) == 503
            })
        #expect(await eventually { !(await acceptsConnections(port: gateway.port)) })
        // The idle keep-alive connection is closed while the busy one's request is still in
        // flight (held: it cannot have finished).
        #expect(await idle.waitForClose(timeout: .seconds(10)))
        #expect(gate.heldCount == 1)
        // The busy one finishes its request, told to close.
        let released = ContinuousClock.now
        gate.release()
        let response = try await inFlight.value
        #expect(response.status == 200)
        #expect(response.json?["path"]?.stringValue == "/held")
        #expect(response.header("connection") == "close")
        await drain.value
        #expect(ContinuousClock.now - released < .seconds(20), "the drain waited for its 60 s timeout")
        #expect(backend.calls("/held") == 1)
    }
}
