import Logging
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// The process-wide shell of one upstream's `TargetHealth`: every event loop's pool for a
/// backend shares it (docs/forwarding.md: counting is per process, not per event loop), and the
/// health prober feeds it.
///
/// The request path reads it without a lock: `outOfRotation(now:)` is one or two relaxed
/// atomic loads, and a success takes the lock only when its URL has a failure streak to end.
/// Failures, probes and expiries — rare — take a short lock, update the machine and publish
/// the new mask. Each change is logged once and reaches the metrics (`onChange`).
final class TargetAvailability: Sendable {
    let name: String
    let urls: [UpstreamURL]
    private let machine: NIOLockedValueBox<TargetHealth>
    /// Bit `i`: URL `i` out of rotation.
    private let excluded = Atomic<UInt64>(0)
    /// Bit `i`: URL `i` has a failure streak.
    private let streaks = Atomic<UInt64>(0)
    /// Uptime nanoseconds of the next sit-out or ejection end (`UInt64.max`: none).
    private let nextExpiry = Atomic<UInt64>(UInt64.max)
    private let logger: Logger?
    private let onChange: (@Sendable (TargetHealth.Change, TargetAvailability) -> Void)?

    init(
        name: String, urls: [UpstreamURL], outlier: OutlierDetectionConfiguration? = nil,
        healthCheck: HealthCheckConfiguration? = nil,
        cooldown: TimeAmount = .seconds(2), logger: Logger? = nil,
        onChange: (@Sendable (TargetHealth.Change, TargetAvailability) -> Void)? = nil
    ) {
        self.name = name
        self.urls = urls
        self.machine = NIOLockedValueBox(
            TargetHealth(count: urls.count, cooldown: cooldown, outlier: outlier, healthCheck: healthCheck))
        self.logger = logger
        self.onChange = onChange
    }

    /// The settings it was made for: a reload keeps it (and what it learned) while they hold.
    func matches(_ backend: BackendConfiguration) -> Bool {
        self.machine.withLockedValue { machine in
            self.urls == backend.urls && machine.outlier == backend.outlierDetection
                && machine.healthCheck == backend.healthCheck
        }
    }

    // MARK: The request path

    /// URLs out of rotation at `now` (bit `i` for URL `i`).
    func outOfRotation(now: NIODeadline) -> UInt64 {
        if now.uptimeNanoseconds >= self.nextExpiry.load(ordering: .relaxed) {
            self.update(now: now) { machine in machine.expire(now: now) }
        }
        return self.excluded.load(ordering: .relaxed)
    }

    /// An answer that is not a failure.
    func succeeded(_ index: Int) {
        guard index < 64, self.streaks.load(ordering: .relaxed) & (1 << UInt64(index)) != 0 else { return }
        self.update(now: .now()) { machine in
            machine.succeeded(index)
            return []
        }
    }

    func failed(_ index: Int, _ failure: TargetHealth.Failure, now: NIODeadline) {
        self.update(now: now) { machine in machine.failed(index, failure, now: now) }
    }

    func connectFailed(_ index: Int, now: NIODeadline) {
        self.update(now: now) { machine in machine.connectFailed(index, now: now) }
    }

    func connectSucceeded(_ index: Int) {
        guard index < 64, self.excluded.load(ordering: .relaxed) & (1 << UInt64(index)) != 0 else { return }
        self.update(now: .now()) { machine in
            machine.connectSucceeded(index)
            return []
        }
    }

    // MARK: Probes and reading

    func probed(_ index: Int, passed: Bool, now: NIODeadline) {
        self.update(now: now) { machine in machine.probed(index, passed: passed) }
    }

    /// Each URL's state for `/healthz`, and whether any URL is in rotation.
    func states(now: NIODeadline) -> (states: [TargetHealth.State], anyInRotation: Bool) {
        self.machine.withLockedValue { machine in
            let states = (0..<machine.count).map { machine.state(of: $0, now: now) }
            let any = (0..<machine.count).contains { machine.isInRotation($0, now: now) }
            return (states, any)
        }
    }

    /// Healthy and not ejected (what `auth_gateway_backend_up` reports), whatever panic
    /// routing does.
    func isUp(_ index: Int, now: NIODeadline) -> Bool {
        self.machine.withLockedValue { $0.state(of: index, now: now) == .healthy }
    }

    // MARK: Internals

    private func update(now: NIODeadline, _ body: (inout TargetHealth) -> [TargetHealth.Change]) {
        let changes = self.machine.withLockedValue { machine -> [TargetHealth.Change] in
            var changes = machine.expire(now: now)
            changes += body(&machine)
            self.excluded.store(machine.outOfRotation(now: now), ordering: .relaxed)
            self.streaks.store(machine.streaks, ordering: .relaxed)
            self.nextExpiry.store(machine.nextExpiry?.uptimeNanoseconds ?? UInt64.max, ordering: .relaxed)
            return changes
        }
        for change in changes { self.report(change) }
    }

    private func report(_ change: TargetHealth.Change) {
        self.onChange?(change, self)
        guard let logger = self.logger else { return }
        switch change {
        case .ejected(let index, let duration):
            logger.warning(
                "backend.url_ejected",
                metadata: [
                    "backend": "\(self.name)", "url": "\(self.urls[index])",
                    "ejection.seconds": "\(duration.nanoseconds / 1_000_000_000)",
                ]
            )
        case .returned(let index):
            logger.info("backend.url_returned", metadata: ["backend": "\(self.name)", "url": "\(self.urls[index])"])
        case .unhealthy(let index):
            logger.warning(
                "backend.url_unhealthy", metadata: ["backend": "\(self.name)", "url": "\(self.urls[index])"])
        case .healthy(let index):
            logger.info("backend.url_healthy", metadata: ["backend": "\(self.name)", "url": "\(self.urls[index])"])
        }
    }
}
