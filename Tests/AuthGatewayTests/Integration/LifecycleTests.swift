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

    /// Health probes (docs/operations.md) with several event loops: every loop answers them, on both
    /// listeners, from the one process-wide state. Not ready on any loop while the start-up
    /// key fetch is held, ready on every loop once it is done, not ready on every admin
    /// connection while draining; live throughout.
    @Test func healthProbesAnswerAlikeOnEveryEventLoop() async throws {
        let loops = 4
        let gate = ReplyGate(holding: true)
        let jwks = try await ScriptedAuthService.start { _, eventLoop in
            gate.pass(.json(.ok, ["keys": [try! TestKeys.rsa.publicJWK()]]), on: eventLoop)
        }
        atTestEnd {
            gate.release()
            await jwks.stop()
        }
        let gateway = try await GatewayFixture.start(waitUntilReady: false) { config in
            config["eventLoopThreads"] = .number(JSONNumber(loops))
            config.set("timeouts.drainSeconds", 60)
            // The key fetch's bound is the auth service's call timeout: longer than the hold.
            config["authService"] = ["url": .string(jwks.baseURL), "timeoutMilliseconds": 120_000]
            config["tokens"] = [
                "issuers": [
                    [
                        "issuer": .string(TestKeys.issuer), "audiences": [.string(TestKeys.audience)],
                        "jwksURL": .string(jwks.baseURL + "/jwks.json"),
                    ]
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        #expect(await eventually { gate.heldCount == 1 }, "the start-up key fetch never arrived")

        // Two keep-alive connections per loop on each listener: connections are handed to the
        // loops round robin, which the workers' connection counts confirm for the main one.
        var main: [TestConnection] = []
        var admin: [TestConnection] = []
        for _ in 0..<(2 * loops) { main.append(try await gateway.connect()) }
        for _ in 0..<(2 * loops) { admin.append(try await TestConnection.connect(port: gateway.adminPort)) }
        let all = main + admin
        atTestEnd { for connection in all { await connection.close() } }
        for worker in gateway.application.workers {
            let served = try await eventually {
                try await worker.eventLoop.submit { worker.value.connections.openCount > 0 }.get()
            }
            #expect(served, "an event loop holds no client connection")
        }

        // Keys not fetched yet: every loop says so, and is live.
        for connection in all {
            #expect(try await connection.send(.get("/livez")).status == 200)
            let ready = try await connection.send(.get("/readyz"))
            #expect(ready.status == 503)
            #expect(ready.json?["reason"]?.stringValue?.isEmpty == false)
            #expect(ready.json?["reason"]?.stringValue != "starting")
            let health = try await connection.send(.get("/healthz"))
            #expect(health.json?["checks"]?["keys"]?[TestKeys.issuer]?["status"]?.stringValue == "unavailable")
        }

        gate.release()
        #expect(await eventually { gateway.application.isReady })
        for connection in all {
            #expect(try await connection.send(.get("/readyz")).status == 200)
            let health = try await connection.send(.get("/healthz"))
            #expect(health.status == 200)
            #expect(health.json?["status"]?.stringValue == "ok", "\(health.text)")
            #expect(health.json?["checks"]?["keys"]?[TestKeys.issuer]?["keys"]?.numberValue?.exactInt == 1)
        }
        // A request with a token is served on every loop too.
        for connection in main {
            #expect(try await connection.send(.get("/ready", token: TestKeys.token())).status == 200)
        }

        // Draining: the main listener's idle connections are closed, and every admin
        // connection says not ready (draining) and still live.
        let drain = Task { await gateway.application.drain() }
        for connection in main { #expect(await connection.waitForClose(timeout: .seconds(30))) }
        for connection in admin {
            let ready = try await connection.send(.get("/readyz"))
            #expect(ready.status == 503)
            #expect(ready.json?["reason"]?.stringValue == "draining")
            #expect(try await connection.send(.get("/livez")).status == 200)
        }
        await drain.value
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
        // Refused requests count under the route they matched (docs/operations.md), not "-".
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
        let mainSockets = listeningSockets().filter { $0.port == gateway.port }
        #expect(!mainSockets.isEmpty)
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
        // This process's listening socket, not the port (a connection to a freed port reaches
        // whoever holds it next).
        #expect(await eventually { listeningSockets().isDisjoint(with: mainSockets) })
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
