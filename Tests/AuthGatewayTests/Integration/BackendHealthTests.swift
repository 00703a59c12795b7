import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// A backend URL whose answers the test sets: `status` for traffic, `healthStatus` for the
/// health path; counts both.
final class ScriptedURL: Sendable {
    let server: SimpleHTTPServer
    private let counters: Counters

    private final class Counters: Sendable {
        let status = Atomic<Int>(200)
        let healthStatus = Atomic<Int>(200)
        let requests = Atomic<Int>(0)
        let probes = Atomic<Int>(0)
        let probeAuthorization = Atomic<Bool>(false)
        /// Milliseconds the health path waits before answering.
        let healthDelay = Atomic<Int>(0)
    }

    private init(server: SimpleHTTPServer, counters: Counters) {
        self.server = server
        self.counters = counters
    }

    static func start(status: Int = 200, healthPath: String = "/health") async throws -> ScriptedURL {
        let counters = Counters()
        counters.status.store(status, ordering: .relaxed)
        let server = try await SimpleHTTPServer.start(group: TestGroup.shared) { request, eventLoop in
            if request.path == healthPath {
                counters.probes.wrappingAdd(1, ordering: .relaxed)
                if request.headers.contains(name: "authorization") {
                    counters.probeAuthorization.store(true, ordering: .relaxed)
                }
                let response = SimpleResponse(
                    status: HTTPResponseStatus(statusCode: counters.healthStatus.load(ordering: .relaxed)))
                let delay = counters.healthDelay.load(ordering: .relaxed)
                guard delay > 0 else { return eventLoop.makeSucceededFuture(response) }
                return eventLoop.scheduleTask(in: .milliseconds(Int64(delay))) { response }.futureResult
            }
            counters.requests.wrappingAdd(1, ordering: .relaxed)
            return eventLoop.makeSucceededFuture(
                .json(
                    HTTPResponseStatus(statusCode: counters.status.load(ordering: .relaxed)),
                    ["path": .string(request.path)]))
        }
        return ScriptedURL(server: server, counters: counters)
    }

    var url: String { self.server.baseURL }
    var requests: Int { self.counters.requests.load(ordering: .relaxed) }
    var probes: Int { self.counters.probes.load(ordering: .relaxed) }
    var probesCarriedAuthorization: Bool { self.counters.probeAuthorization.load(ordering: .relaxed) }
    func answer(_ status: Int) { self.counters.status.store(status, ordering: .relaxed) }
    func answerHealth(_ status: Int) { self.counters.healthStatus.store(status, ordering: .relaxed) }
    /// Health answers come `milliseconds` late (0: at once).
    func delayHealth(milliseconds: Int) { self.counters.healthDelay.store(milliseconds, ordering: .relaxed) }
    func close() async { await self.server.close() }
}

/// Passive outlier detection and active health checks over real sockets (docs/forwarding.md), and
/// what operators see of them: `/healthz`, metrics.
@Suite("Backend health (real sockets)", .awaitsCleanups)
struct BackendHealthTests {
    static func gateway(_ urls: [ScriptedURL], extra: JSONObject) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            var backend: JSONObject = ["urls": .array(urls.map { .string($0.url) })]
            for entry in extra.entries { backend[entry.key] = entry.value }
            config["backends"] = ["api": .object(backend)]
        }
    }

    static func get(_ gateway: GatewayFixture, _ path: String) async throws -> TestResponse {
        try await gateway.send(.get(path, token: TestKeys.token()))
    }

    /// `checks.backends.api` of `/healthz`.
    static func health(_ gateway: GatewayFixture) async throws -> (status: String?, backend: JSONValue?) {
        let document = try await gateway.send(.get("/healthz")).json
        return (document?["status"]?.stringValue, document?["checks"]?["backends"]?["api"])
    }

    static func state(_ gateway: GatewayFixture, _ url: ScriptedURL) async throws -> String? {
        try await Self.state(gateway, url.url)
    }

    static func state(_ gateway: GatewayFixture, _ url: String) async throws -> String? {
        try await Self.health(gateway).backend?["urls"]?[url]?["state"]?.stringValue
    }

    static func metrics(_ gateway: GatewayFixture) async throws -> String {
        let connection = try await TestConnection.connect(port: gateway.adminPort)
        return try await withCleanup({ await connection.close() }) { try await connection.send(.get("/metrics")).text }
    }

    // MARK: Outlier detection

    /// A long ejection (60 s), so that "no traffic while ejected" holds however slow the
    /// machine is; the expiry is the next test's.
    @Test func aURLAnswering502IsEjectedAfterConsecutiveFailures() async throws {
        let good = try await ScriptedURL.start()
        let bad = try await ScriptedURL.start(status: 502)
        atTestEnd {
            await good.close(); await bad.close()
        }
        let gateway = try await Self.gateway(
            [good, bad],
            extra: [
                "outlierDetection": ["consecutiveFailures": 3, "baseEjectionSeconds": 60, "maxEjectionPercent": 50]
            ])
        atTestEnd { await gateway.stop() }

        // Round robin: the bad URL sees every other request until its third 502 ejects it.
        var statuses: [Int] = []
        for index in 0..<6 { statuses.append(try await Self.get(gateway, "/warm/\(index)").status) }
        #expect(bad.requests == 3)
        #expect(statuses.filter { $0 == 502 }.count == 3)
        #expect(try await Self.state(gateway, bad) == "ejected")
        let until = try await Self.health(gateway).backend?["urls"]?[bad.url]?["untilSeconds"]?.numberValue?.exactInt
        #expect(until.map { (30...60).contains($0) } == true)
        #expect(try await Self.state(gateway, good) == "healthy")
        // Only some URLs out: the gateway is still ok.
        #expect(try await Self.health(gateway).status == "ok")
        let metrics = try await Self.metrics(gateway)
        #expect(
            metrics.contains("auth_gateway_backend_ejections_total{backend=\"api\",url=\"\(bad.url)\"} 1"), "\(metrics)"
        )
        #expect(metrics.contains("auth_gateway_backend_up{backend=\"api\",url=\"\(bad.url)\"} 0"))
        #expect(metrics.contains("auth_gateway_backend_up{backend=\"api\",url=\"\(good.url)\"} 1"))

        // While ejected, everything goes to the good URL.
        for index in 0..<6 { #expect(try await Self.get(gateway, "/ejected/\(index)").status == 200) }
        #expect(bad.requests == 3)
    }

    /// The ejection (1 s) expires: the URL gets traffic again, and recovers once it answers.
    @Test func anEjectionExpires() async throws {
        let good = try await ScriptedURL.start()
        let bad = try await ScriptedURL.start(status: 502)
        atTestEnd {
            await good.close(); await bad.close()
        }
        let gateway = try await Self.gateway(
            [good, bad],
            extra: ["outlierDetection": ["consecutiveFailures": 3, "baseEjectionSeconds": 1, "maxEjectionPercent": 50]])
        atTestEnd { await gateway.stop() }
        // Ejected: read from the counter, not from the state — on a loaded machine the 1 s
        // ejection can be over before a look at `/healthz` (which then says "healthy").
        let ejections = "auth_gateway_backend_ejections_total{backend=\"api\",url=\"\(bad.url)\"} "
        #expect(
            await eventually(timeout: .seconds(60)) {
                _ = try? await Self.get(gateway, "/warm")
                return (try? await Self.metrics(gateway))?.split(separator: "\n").contains {
                    $0.hasPrefix(ejections) && !$0.hasSuffix(" 0")
                } == true
            })
        let seen = bad.requests
        #expect(seen >= 3)
        #expect(
            await eventually(timeout: .seconds(60)) {
                _ = try? await Self.get(gateway, "/after")
                return bad.requests > seen
            })
        bad.answer(200)
        #expect(await eventually(timeout: .seconds(60)) { (try? await Self.state(gateway, bad)) == "healthy" })
    }

    @Test func atMostMaxEjectionPercentOfTheURLsAreEjected() async throws {
        let urls = [
            try await ScriptedURL.start(status: 503), try await ScriptedURL.start(status: 503),
            try await ScriptedURL.start(status: 503),
        ]
        atTestEnd { for url in urls { await url.close() } }
        // 50 % of 3 rounds down to 1.
        let gateway = try await Self.gateway(
            urls,
            extra: [
                "outlierDetection": ["consecutiveFailures": 1, "baseEjectionSeconds": 60, "maxEjectionPercent": 50]
            ])
        atTestEnd { await gateway.stop() }
        for index in 0..<12 { #expect(try await Self.get(gateway, "/fail/\(index)").status == 503) }
        var ejected = 0
        for url in urls where try await Self.state(gateway, url) == "ejected" { ejected += 1 }
        #expect(ejected == 1)
        // The two left in rotation share the traffic.
        #expect(urls.filter { $0.requests > 1 }.count >= 2)
    }

    /// Response timeouts count (the proxy tells the lease it gave up for a timeout); one URL
    /// can always be ejected, and a backend whose only URL is out is in panic routing.
    @Test func responseTimeoutsCountAndASingleURLCanBeEjected() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        let gateway = try await GatewayFixture.start(backend: backend) { config in
            config["backends"] = [
                "api": [
                    // Long enough for the last, ordinary request on a loaded machine.
                    "urls": [.string(backend.baseURL)], "responseTimeoutMilliseconds": 6000,
                    "outlierDetection": ["consecutiveFailures": 2, "baseEjectionSeconds": 30],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        #expect(try await Self.get(gateway, "/delay/15000").status == 504)
        #expect(try await Self.state(gateway, backend.baseURL) == "healthy")
        #expect(try await Self.get(gateway, "/delay/15000").status == 504)
        #expect(try await Self.state(gateway, backend.baseURL) == "ejected")
        let health = try await Self.health(gateway)
        #expect(health.status == "degraded")
        #expect(health.backend?["panicRouting"] == .bool(true))
        // Panic routing: the only URL still gets the traffic.
        #expect(try await Self.get(gateway, "/still-served").status == 200)
    }

    /// docs/forwarding.md: some URLs out leave the gateway `ok`; the backend's entry says which.
    @Test func aURLRefusingConnectionsLeavesTheGatewayOk() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let good = try await ScriptedURL.start()
        atTestEnd { await good.close() }
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = ["api": ["urls": [.string(refusing.url), .string(good.url)]]]
        }
        atTestEnd { await gateway.stop() }
        for index in 0..<3 { #expect(try await Self.get(gateway, "/r/\(index)").status == 200) }
        let health = try await Self.health(gateway)
        #expect(health.status == "ok")
        #expect(health.backend?["status"]?.stringValue == "degraded")
        #expect(health.backend?["urls"]?[refusing.url]?["status"]?.stringValue == "failing")
        #expect(health.backend?["panicRouting"] == nil)
    }

    /// Connect failures count: a refusing URL is ejected (beyond its 2 s sit-out).
    @Test func aURLRefusingConnectionsIsEjected() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let good = try await ScriptedURL.start()
        atTestEnd { await good.close() }
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = [
                "api": [
                    "urls": [.string(refusing.url), .string(good.url)],
                    "outlierDetection": ["consecutiveFailures": 1, "baseEjectionSeconds": 300],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        // The first request tries the refusing URL first, then the good one.
        #expect(try await Self.get(gateway, "/first").status == 200)
        #expect(try await Self.state(gateway, refusing.url) == "ejected")
        let until =
            try await Self.health(gateway).backend?["urls"]?[refusing.url]?["untilSeconds"]?.numberValue?.exactInt ?? 0
        // A 300 s ejection (the longest there is), read back while the clock runs: far above the
        // 2 s sit-out even after a loaded machine's delay (one took 62 s with a 60 s ejection).
        #expect(until > 30)
    }

    /// Resets count: a URL that accepts, reads the request and closes without answering.
    @Test func aURLThatResetsEveryExchangeIsEjected() async throws {
        let resetting = try await ServerBootstrap(group: TestGroup.shared)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(CloseOnRead()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        atTestEnd { try? await resetting.close() }
        let url = "http://127.0.0.1:\(resetting.localAddress?.port ?? 0)"
        let gateway = try await GatewayFixture.start { config in
            // POST: not retried on another connection, so each request is one reset.
            config["backends"] = [
                "api": [
                    "urls": [.string(url)], "outlierDetection": ["consecutiveFailures": 2, "baseEjectionSeconds": 30],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        for index in 0..<2 {
            let response = try await gateway.send(
                TestRequest(
                    .POST, "/reset/\(index)", headers: [("Authorization", "Bearer \(TestKeys.token())")], body: "x"))
            #expect(response.status == 502)
        }
        #expect(try await Self.state(gateway, url) == "ejected")
    }

    /// HTTP/2 backends count too: each stream's status reaches outlier detection.
    @Test func anH2cURLAnswering503IsEjected() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared, http2: true)
        let gateway = try await GatewayFixture.start(backend: backend) { config in
            config["backends"] = [
                "api": [
                    "urls": [.string(backend.baseURL)], "protocol": "h2c",
                    "outlierDetection": ["consecutiveFailures": 2],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        #expect(try await Self.get(gateway, "/status/503").status == 503)
        #expect(try await Self.get(gateway, "/status/200").status == 200)
        #expect(try await Self.get(gateway, "/status/503").status == 503)
        // The 200 in between ended the first streak.
        #expect(try await Self.state(gateway, backend.baseURL) == "healthy")
        #expect(try await Self.get(gateway, "/status/504").status == 504)
        #expect(try await Self.state(gateway, backend.baseURL) == "ejected")
    }

    // MARK: Health checks

    /// Probes speak the backend's protocol and TLS: an h2 backend behind mutual TLS stays
    /// healthy only if the probes present the client certificate and trust its CA.
    @Test func probesUseTheBackendsProtocolAndTLS() async throws {
        let pki = try await TestPKI.shared()
        let backend = try await EchoBackend.start(
            group: TestGroup.shared, http2: true,
            tls: try pki.serverContext(requireClientCertificate: true, alpn: ["h2"])
        )
        let gateway = try await GatewayFixture.start(backend: backend) { config in
            config["backends"] = [
                "api": [
                    "urls": [.string("https://localhost:\(backend.port)")], "protocol": "h2",
                    "tls": [
                        "caCertificatePEMFile": .string(pki.caCertificate),
                        "certificatePEMFile": .string(pki.clientCertificate),
                        "privateKeyPEMFile": .string(pki.clientKey),
                    ],
                    // Flake-proof: with `unhealthyThreshold: 1` one slow probe would make the URL
                    // unhealthy, and a TLS handshake on a loaded machine once took seconds. A
                    // 60 s timeout cannot be missed within this test's own 30 s bounds, so a
                    // probe fails only for what is tested: a wrong protocol, CA or certificate
                    // fails at once, whatever the timeout.
                    "healthCheck": [
                        "path": "/health", "intervalSeconds": 1, "timeoutMilliseconds": 60_000,
                        "unhealthyThreshold": 1, "healthyThreshold": 1,
                    ],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        // Two probe rounds reached the backend (no traffic was sent), and it is still healthy.
        #expect(await eventually { backend.requestCount >= 2 })
        #expect(try await Self.state(gateway, "https://localhost:\(backend.port)") == "healthy")
        #expect(try await Self.health(gateway).status == "ok")
    }

    /// Why this once failed (1 run in 3 of a fresh clone on a loaded 2-core machine:
    /// `flaky.requests → 1 == before → 0`): with `unhealthyThreshold: 1`, a single probe of the
    /// *steady* URL that missed its 3 s timeout made it unhealthy until the next probe, a
    /// second later. With both URLs unhealthy the gateway routes in panic mode (docs/forwarding.md)
    /// and one of the six requests went to the flaky URL; the next probe made the steady URL
    /// healthy again before the test looked at it. (Nothing else sends a request to an
    /// unhealthy URL: `TargetSelector` skips it unless every URL is out, a retry leases anew,
    /// and one URL never has two probes whose outcomes could arrive out of order.)
    /// `aProbeAnsweredAfterItsTimeoutFails` shows that mechanism on purpose.
    ///
    /// The fix is a timeout that cannot be missed: 60 s, twice the longest wait of this test.
    /// A probe of the steady URL can then fail only if its server stops answering, which it
    /// never does; the flaky URL's probes fail by their 503, at once.
    @Test func aURLFailingItsHealthCheckGetsNoTrafficAndGetsItBackAfterRecovering() async throws {
        let steady = try await ScriptedURL.start()
        let flaky = try await ScriptedURL.start()
        atTestEnd {
            await steady.close(); await flaky.close()
        }
        let gateway = try await Self.gateway(
            [steady, flaky],
            extra: [
                "healthCheck": [
                    "path": "/health", "intervalSeconds": 1, "timeoutMilliseconds": 60_000, "unhealthyThreshold": 1,
                    "healthyThreshold": 1,
                ]
            ]
        )
        atTestEnd { await gateway.stop() }
        #expect(try await Self.state(gateway, flaky) == "healthy")
        #expect(await eventually { flaky.probes > 0 && steady.probes > 0 })

        flaky.answerHealth(503)
        // Out of rotation after its next probe (one interval on a quiet machine; the bound is
        // generous: a fresh-clone CI run on a loaded 2-core machine once took over 2.5 s).
        #expect(await eventually(timeout: .seconds(20)) { (try? await Self.state(gateway, flaky)) == "unhealthy" })
        let before = flaky.requests
        for index in 0..<6 { #expect(try await Self.get(gateway, "/sick/\(index)").status == 200) }
        #expect(flaky.requests == before)
        #expect(try await Self.state(gateway, steady) == "healthy")
        let metrics = try await Self.metrics(gateway)
        #expect(metrics.contains("auth_gateway_backend_up{backend=\"api\",url=\"\(flaky.url)\"} 0"))

        flaky.answerHealth(200)
        #expect(await eventually(timeout: .seconds(20)) { (try? await Self.state(gateway, flaky)) == "healthy" })
        for index in 0..<4 { #expect(try await Self.get(gateway, "/well/\(index)").status == 200) }
        #expect(flaky.requests > before)
        // Probes never carry a user's token.
        #expect(!flaky.probesCarriedAuthorization && !steady.probesCarriedAuthorization)
    }

    /// A probe answered after `timeoutMilliseconds` is a failure, however good its answer
    /// (docs/forwarding.md: a pass is 2xx/3xx within the timeout), and with `unhealthyThreshold: 1`
    /// one is enough. When that leaves no URL in rotation, an unhealthy URL gets traffic
    /// (panic routing): the way a loaded machine once sent a request to the flaky URL above.
    ///
    /// Deterministic: while the slow URL answers 5 s late every probe of it fails (a 1 s
    /// timeout), and every probe of the sick one fails (503); no timing can make either healthy.
    /// Only the recovery needs a probe answered within 1 s, and it polls for one.
    @Test func aProbeAnsweredAfterItsTimeoutFails() async throws {
        let slow = try await ScriptedURL.start()
        let sick = try await ScriptedURL.start()
        atTestEnd {
            await slow.close(); await sick.close()
        }
        slow.delayHealth(milliseconds: 5000)
        sick.answerHealth(503)
        let gateway = try await Self.gateway(
            [slow, sick],
            extra: [
                "healthCheck": [
                    "path": "/health", "intervalSeconds": 1, "timeoutMilliseconds": 1000, "unhealthyThreshold": 1,
                    "healthyThreshold": 1,
                ]
            ]
        )
        atTestEnd { await gateway.stop() }
        // A 200 that came too late: unhealthy.
        #expect(await eventually { (try? await Self.state(gateway, slow)) == "unhealthy" })
        #expect(await eventually { (try? await Self.state(gateway, sick)) == "unhealthy" })
        let health = try await Self.health(gateway)
        #expect(health.status == "degraded")
        #expect(health.backend?["panicRouting"] == .bool(true))
        // Panic routing: the sick URL gets traffic too.
        for index in 0..<4 { #expect(try await Self.get(gateway, "/panic/\(index)").status == 200) }
        #expect(sick.requests > 0 && slow.requests > 0)

        slow.delayHealth(milliseconds: 0)
        #expect(await eventually { (try? await Self.state(gateway, slow)) == "healthy" })
    }

    /// Safe with `unhealthyThreshold: 1` and a 500 ms timeout: every probe here is meant to
    /// fail (the URLs answer 500), and a probe that misses its timeout fails too, so no timing
    /// can make a URL healthy again; "degraded" and panic routing, once reached, stay.
    @Test func whenEveryURLIsUnhealthyTrafficStillFlowsAndHealthzSaysDegraded() async throws {
        let urls = [try await ScriptedURL.start(), try await ScriptedURL.start()]
        atTestEnd { for url in urls { await url.close() } }
        for url in urls { url.answerHealth(500) }
        let gateway = try await Self.gateway(
            urls,
            extra: [
                "healthCheck": [
                    "path": "/health", "intervalSeconds": 1, "timeoutMilliseconds": 500, "unhealthyThreshold": 1,
                    "healthyThreshold": 1,
                ]
            ]
        )
        atTestEnd { await gateway.stop() }
        #expect(await eventually(timeout: .seconds(20)) { (try? await Self.health(gateway).status) == "degraded" })
        let health = try await Self.health(gateway)
        #expect(health.backend?["panicRouting"] == .bool(true))
        for url in urls { #expect(health.backend?["urls"]?[url.url]?["state"]?.stringValue == "unhealthy") }
        // Panic routing: requests go to all of them.
        for index in 0..<4 { #expect(try await Self.get(gateway, "/panic/\(index)").status == 200) }
        #expect(urls.allSatisfy { $0.requests > 0 })
    }

    @Test func checkReadsHealthCheckAndOutlierDetectionWithPathsInErrors() throws {
        func issues(_ extra: String) -> [String] {
            let text = """
                {"listener":{},"backends":{"api":{"urls":["http://127.0.0.1:1"], \(extra)}},
                 "routes":[{"name":"r","pathPrefix":"/","backend":"api","auth":"none"}]}
                """
            do {
                _ = try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
                return []
            } catch {
                return error.issues.map(\.description)
            }
        }
        #expect(
            issues(#""healthCheck": {"path": "health", "intervalSeconds": 0}"#) == [
                "backends.api.healthCheck.path: must be a path starting with \"/\"",
                "backends.api.healthCheck.intervalSeconds: must be between 1 and 3600, found 0",
            ])
        #expect(
            issues(#""outlierDetection": {"maxEjectionPercent": 101, "consecutive": 1}"#) == [
                "backends.api.outlierDetection.maxEjectionPercent: must be between 1 and 100, found 101",
                "backends.api.outlierDetection.consecutive: unknown key",
            ])
        let configuration = try ConfigurationLoader(environment: [:]).load(
            text:
                #"{"listener":{},"backends":{"api":{"urls":["http://127.0.0.1:1"],"healthCheck":{},"outlierDetection":{}}},"routes":[{"name":"r","pathPrefix":"/","backend":"api","auth":"none"}]}"#,
            baseDirectory: "/"
        )
        #expect(configuration.backend(named: "api")?.healthCheck == HealthCheckConfiguration())
        #expect(configuration.backend(named: "api")?.outlierDetection?.consecutiveFailures == 5)
    }
}

/// Closes the connection as soon as anything arrives (a backend that resets every exchange).
private final class CloseOnRead: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.close(promise: nil)
    }
}
