import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Active health checks (docs/forwarding.md): one probe loop per process — not per event loop — for
/// every backend with `healthCheck`. Each round `GET`s the path on every URL with the
/// backend's own protocol and TLS, on a connection of its own (never a user's request, never
/// a user's token); 2xx/3xx within `timeoutMilliseconds` is a pass. The outcomes go to the
/// backend's `TargetAvailability`, whose `TargetHealth` applies the thresholds.
///
/// Runs as a background `Service` of the application (`GatewayApplication.backgroundServices`);
/// a reload hands it the new snapshot (`apply`).
final class HealthProber: Service, Sendable {
    private let shared: GatewayShared
    private let state = NIOLockedValueBox<(snapshot: RuntimeSnapshot?, eventLoop: EventLoop?)>((nil, nil))
    /// Probes still running (a timeout longer than the interval): the next round skips those
    /// URLs, so one URL never has two probes whose outcomes could arrive out of order.
    private let inFlight = NIOLockedValueBox<Set<ProbeKey>>([])

    private struct ProbeKey: Hashable {
        let availability: ObjectIdentifier
        let index: Int
    }

    init(shared: GatewayShared) {
        self.shared = shared
    }

    /// Where probes run (the first event loop) and what they probe.
    func attach(eventLoop: EventLoop) {
        self.state.withLockedValue { $0.eventLoop = eventLoop }
    }

    func apply(_ snapshot: RuntimeSnapshot) {
        self.state.withLockedValue { $0.snapshot = snapshot }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.probeUntilCancelled()
        }
    }

    private func probeUntilCancelled() async {
        // When each backend (by name) is next due.
        var due: [String: ContinuousClock.Instant] = [:]
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                self.startDueProbes(&due, in: &group)
                try? await Task.sleep(for: .milliseconds(100))
            }
            group.cancelAll()
        }
    }

    /// Starts the probes that are due under the snapshot in force. A call of its own: the
    /// snapshot is let go when it returns, before the sleep, so a reload's old one is not kept
    /// alive here (its memory is returned once every holder let go).
    private func startDueProbes(_ due: inout [String: ContinuousClock.Instant], in group: inout DiscardingTaskGroup) {
        let (snapshot, eventLoop) = self.state.withLockedValue { ($0.snapshot, $0.eventLoop) }
        guard let snapshot, let eventLoop else { return }
        let now = ContinuousClock.now
        for resolved in snapshot.backends {
            let backend = resolved.configuration
            guard let check = backend.healthCheck else {
                due.removeValue(forKey: backend.name)
                continue
            }
            if let next = due[backend.name], next > now { continue }
            due[backend.name] = now + .seconds(check.intervalSeconds)
            let availability = resolved.availability
            let tls = resolved.tls
            let connector = self.shared.connector
            for (index, url) in backend.urls.enumerated() {
                let key = ProbeKey(availability: ObjectIdentifier(availability), index: index)
                guard self.inFlight.withLockedValue({ $0.insert(key).inserted }) else { continue }
                group.addTask {
                    let passed = await Self.probe(
                        url, backend: backend, check: check, tls: tls, connector: connector, eventLoop: eventLoop)
                    availability.probed(index, passed: passed, now: .now())
                    self.inFlight.withLockedValue { _ = $0.remove(key) }
                }
            }
        }
    }

    /// One probe: a pool of its own for this one request (closed afterwards), so a probe
    /// shares nothing with users' traffic.
    static func probe(
        _ url: UpstreamURL, backend: BackendConfiguration, check: HealthCheckConfiguration, tls: UpstreamTLS?,
        connector: UpstreamConnector, eventLoop: EventLoop
    ) async -> Bool {
        let timeout = TimeAmount.milliseconds(Int64(check.timeoutMilliseconds))
        let future = eventLoop.flatSubmit { () -> EventLoopFuture<Bool> in
            let pool = UpstreamPool(
                name: "health check \(backend.name)", eventLoop: eventLoop, targets: [url], maxConnections: 1,
                connectTimeout: timeout, tls: tls,
                connector: connector, wireProtocol: backend.wireProtocol
            )
            let client = UpstreamClient(pool: pool, timeout: timeout, hostHeader: url.hostHeader)
            let request = UpstreamRequest(
                method: .GET, path: check.path, headers: ["User-Agent": "auth-gateway-health-check"], body: nil)
            return client.execute(request).assumeIsolated()
                .map { response -> Bool in
                    pool.shutdown()
                    return (200..<400).contains(Int(response.status.code))
                }
                .recover { _ in
                    pool.shutdown()
                    return false
                }
                .nonisolated()
        }
        return (try? await future.get()) ?? false
    }
}

/// Named, never reflected: see `GatewayService`'s description.
extension HealthProber: CustomStringConvertible, CustomReflectable {
    var description: String { "HealthProber" }
    var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}
