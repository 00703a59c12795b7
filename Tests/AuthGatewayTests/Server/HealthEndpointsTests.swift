import NIOEmbedded
import NIOHTTP1
import Testing

import AuthGatewayTesting

@testable import AuthGateway

/// `HealthEndpoints` on one embedded worker: which paths answer, and readiness's reasons.
@Suite("HealthEndpoints")
struct HealthEndpointsTests {
    private static func worker(_ configure: (inout JSONObject) -> Void = { _ in }) throws -> Worker {
        try GatewayApplication.makeWorker(
            configuration: try ApplicationTesting.configuration(configure), eventLoop: EmbeddedEventLoop(),
            clock: { 1_000 }, connector: SocketConnector()
        )
    }

    private static func answer(_ path: String, _ worker: Worker, method: HTTPMethod = .GET) -> LocalResponse? {
        HealthEndpoints.response(for: path, method: method, worker: worker, snapshot: worker.snapshot)
    }

    /// "ready", or why not.
    private static func readiness(_ worker: Worker) -> String {
        let (ready, reason) = HealthEndpoints.readiness(worker.shared)
        return ready ? "ready" : "not ready: \(reason)"
    }

    @Test func readinessSaysWhyItIsNotReady() throws {
        let worker = try Self.worker()
        #expect(Self.readiness(worker) == "not ready: starting")
        #expect(Self.answer("/readyz", worker)?.status == .serviceUnavailable)
        #expect(Self.answer("/readyz", worker)?.body.contains("starting") == true)

        worker.shared.health.markConfigActive()
        #expect(Self.readiness(worker) == "ready")
        #expect(Self.answer("/readyz", worker)?.status == .ok)

        worker.shared.health.startDraining()
        #expect(Self.readiness(worker) == "not ready: draining")
        #expect(Self.answer("/readyz", worker)?.status == .serviceUnavailable)
        // Liveness does not depend on readiness.
        #expect(Self.answer("/livez", worker)?.status == .ok)
    }

    @Test func remoteKeysNotYetFetchedKeepItUnready() throws {
        let worker = try Self.worker { document in
            document["tokens"] = [
                "issuers": [
                    [
                        "issuer": .string(TestKeys.issuer), "audiences": [.string(TestKeys.audience)],
                        "jwksURL": "http://127.0.0.1:9/jwks",
                    ]
                ]
            ]
        }
        worker.shared.health.markConfigActive()
        #expect(Self.readiness(worker).hasPrefix("not ready: "))
        #expect(Self.readiness(worker) != "not ready: starting")
    }

    @Test func onlyTheConfiguredPathsAndGETOrHEADAnswer() throws {
        let worker = try Self.worker { $0["health"] = ["path": "/h", "readyPath": "/r", "livePath": "/l"] }
        #expect(Self.answer("/l", worker)?.status == .ok)
        #expect(Self.answer("/l", worker, method: .HEAD)?.status == .ok)
        #expect(Self.answer("/h", worker) != nil)
        #expect(Self.answer("/r", worker) != nil)
        #expect(Self.answer("/livez", worker) == nil)
        #expect(Self.answer("/l", worker, method: .POST) == nil)
        #expect(Self.answer("/metrics", worker) == nil)
    }
}
