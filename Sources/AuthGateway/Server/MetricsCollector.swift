import NIOCore
import NIOHTTP1

/// Gathers every event loop's metrics (each read on its own loop) plus the process-wide ones,
/// and renders them.
final class MetricsCollector: Sendable {
    private let workers: [NIOLoopBound<Worker>]
    private let shared: GatewayShared

    init(workers: [NIOLoopBound<Worker>], shared: GatewayShared) {
        self.workers = workers
        self.shared = shared
    }

    func collect(on eventLoop: EventLoop) -> EventLoopFuture<String> {
        let parts = self.workers.map { bound in bound.eventLoop.submit { bound.value.metrics.values } }
        let shared = self.shared
        return EventLoopFuture.whenAllSucceed(parts, on: eventLoop).map { snapshots in
            var merged = shared.processMetrics.snapshot
            for snapshot in snapshots { merged.merge(snapshot) }
            merged.gauges[MetricKey.verifiedCacheEntries] = Double(shared.authentication.verifiedTokens.count)
            merged.gauges[MetricKey.sessions] = Double(shared.authentication.sessions.count)
            merged.gauges.merge(shared.backendAvailabilities.upGauges(now: .now())) { $1 }
            for issuer in shared.keyStore.status {
                if let age = issuer.ageSeconds {
                    merged.gauges[MetricKey.keySetAge(issuer: issuer.issuer)] = age
                }
                if let age = issuer.discovery?.ageSeconds {
                    merged.gauges[MetricKey.discoveryAge(issuer: issuer.issuer)] = age
                }
            }
            return PrometheusText.render(merged)
        }
    }
}
