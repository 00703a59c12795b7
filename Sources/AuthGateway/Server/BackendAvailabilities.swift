import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Each backend's `TargetAvailability` (docs/forwarding.md): one per process, shared by every event
/// loop's pool for the backend and by the health prober. A reload keeps a backend's (and what
/// it learned: streaks, ejections, health) while its URLs, `healthCheck` and
/// `outlierDetection` are unchanged; a TLS change rebuilds the pools but not this.
final class BackendAvailabilities: Sendable {
    private let current = NIOLockedValueBox<[String: TargetAvailability]>([:])
    private let logger: Logger
    private let metrics: ProcessMetrics

    init(logger: Logger, metrics: ProcessMetrics) {
        self.logger = logger
        self.metrics = metrics
    }

    /// The availabilities for `configuration`'s backends, in their order (made once per
    /// (re)load, before the loops build their pools from the snapshot that carries them).
    func update(for configuration: GatewayConfiguration) -> [TargetAvailability] {
        let metrics = self.metrics
        return self.current.withLockedValue { current in
            var next: [String: TargetAvailability] = [:]
            var ordered: [TargetAvailability] = []
            for backend in configuration.backends {
                let availability: TargetAvailability
                if let existing = current[backend.name], existing.matches(backend) {
                    availability = existing
                } else {
                    availability = TargetAvailability(
                        name: backend.name, urls: backend.urls, outlier: backend.outlierDetection,
                        healthCheck: backend.healthCheck, logger: self.logger
                    ) { change, availability in
                        if case .ejected(let index, _) = change {
                            metrics.increment(
                                .backendEjection(backend: availability.name, url: availability.urls[index].description))
                        }
                    }
                }
                next[backend.name] = availability
                ordered.append(availability)
            }
            current = next
            return ordered
        }
    }

    var all: [String: TargetAvailability] { self.current.withLockedValue { $0 } }

    /// `auth_gateway_backend_up{backend,url}`: 1 when healthy and not ejected.
    func upGauges(now: NIODeadline) -> [MetricKey: Double] {
        var gauges: [MetricKey: Double] = [:]
        for (name, availability) in self.all {
            let (states, _) = availability.states(now: now)
            for (index, state) in states.enumerated() {
                gauges[MetricKey.backendUp(backend: name, url: availability.urls[index].description)] =
                    state == .healthy ? 1 : 0
            }
        }
        return gauges
    }
}
