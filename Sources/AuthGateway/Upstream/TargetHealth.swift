import NIOCore

/// Why each URL of one upstream is in or out of rotation — the one place that decides it
/// (docs/forwarding.md): the connect-failure sit-out every pool has, passive outlier ejection and
/// active health-check thresholds.
///
/// Pure (docs/architecture.md): events in, `Change`s out, `now` passed in; no locks, clocks or
/// I/O. `TargetAvailability` is its process-wide shell; `TargetSelector` reads the result.
///
/// A URL is out of rotation while it sits out a refused connect (`cooldown`), while it is
/// ejected, or while it is unhealthy. When every URL is out, requests go to all of them
/// (panic routing: `TargetSelector`'s fallback).
///
/// Outlier detection: connect failures, resets, timeouts and 502/503/504 answers are failures;
/// any other answer is a success and ends the streak. `consecutiveFailures` in a row eject the
/// URL for `baseEjectionSeconds × n` (n = times it was ejected, at most 300 s), unless
/// `maxEjectionPercent` of the URLs (rounded down, at least one) are ejected already; then it
/// stays in and the next failure asks again.
///
/// Health: URLs start healthy; `unhealthyThreshold` failed probes in a row make a URL
/// unhealthy, `healthyThreshold` passes in a row healthy again.
struct TargetHealth {
    /// Masks of URLs are 64 bits wide (`TargetAvailability`); `check` refuses more URLs.
    static let maxTrackedTargets = BackendConfiguration.maxTrackedURLs
    static let maxEjection = TimeAmount.seconds(300)

    enum Failure: Equatable {
        case connect
        case reset
        case timeout
        /// A 502, 503 or 504 answer.
        case status(Int)
    }

    /// A change operators see: one log line and metric update each.
    enum Change: Equatable {
        case ejected(Int, for: TimeAmount)
        case returned(Int)
        case unhealthy(Int)
        case healthy(Int)
    }

    /// What `/healthz` shows for a URL.
    enum State: Equatable {
        case healthy
        case unhealthy
        case ejected(until: NIODeadline)
    }

    struct Target {
        var cooldownUntil: NIODeadline?
        var consecutiveFailures = 0
        var ejections = 0
        var ejectedUntil: NIODeadline?
        var healthy = true
        /// Probes in a row that disagree with `healthy`.
        var probeStreak = 0
    }

    let cooldown: TimeAmount
    let outlier: OutlierDetectionConfiguration?
    let healthCheck: HealthCheckConfiguration?
    private(set) var targets: [Target]

    init(
        count: Int, cooldown: TimeAmount = .seconds(2), outlier: OutlierDetectionConfiguration? = nil,
        healthCheck: HealthCheckConfiguration? = nil
    ) {
        precondition(count > 0, "an upstream needs at least one URL")
        self.cooldown = cooldown
        self.outlier = outlier
        self.healthCheck = healthCheck
        self.targets = Array(repeating: Target(), count: count)
    }

    var count: Int { self.targets.count }

    /// How many URLs may be ejected at once: the percentage rounded down, at least one.
    var maxEjected: Int {
        guard let outlier else { return 0 }
        return max(1, self.count * outlier.maxEjectionPercent / 100)
    }

    // MARK: Events

    /// A connect was refused or timed out: the URL sits out `cooldown`, and the failure counts.
    mutating func connectFailed(_ index: Int, now: NIODeadline) -> [Change] {
        self.targets[index].cooldownUntil = now + self.cooldown
        return self.failed(index, .connect, now: now)
    }

    mutating func connectSucceeded(_ index: Int) {
        self.targets[index].cooldownUntil = nil
    }

    /// A request to the URL failed (reset, timeout, 502/503/504).
    mutating func failed(_ index: Int, _ failure: Failure, now: NIODeadline) -> [Change] {
        guard let outlier else { return [] }
        if let until = self.targets[index].ejectedUntil, until > now { return [] }
        self.targets[index].consecutiveFailures += 1
        guard self.targets[index].consecutiveFailures >= outlier.consecutiveFailures,
            self.ejectedCount(now: now) < self.maxEjected
        else { return [] }
        self.targets[index].consecutiveFailures = 0
        self.targets[index].ejections += 1
        let duration = min(
            TimeAmount.seconds(Int64(outlier.baseEjectionSeconds) * Int64(self.targets[index].ejections)),
            Self.maxEjection)
        self.targets[index].ejectedUntil = now + duration
        return [.ejected(index, for: duration)]
    }

    /// An answer that is not a failure ends the URL's failure streak.
    mutating func succeeded(_ index: Int) {
        self.targets[index].consecutiveFailures = 0
    }

    /// A health probe's outcome.
    mutating func probed(_ index: Int, passed: Bool) -> [Change] {
        guard let healthCheck else { return [] }
        if passed == self.targets[index].healthy {
            self.targets[index].probeStreak = 0
            return []
        }
        self.targets[index].probeStreak += 1
        let threshold = passed ? healthCheck.healthyThreshold : healthCheck.unhealthyThreshold
        guard self.targets[index].probeStreak >= threshold else { return [] }
        self.targets[index].probeStreak = 0
        self.targets[index].healthy = passed
        return [passed ? .healthy(index) : .unhealthy(index)]
    }

    /// Ends the ejections and sit-outs that are over by `now`.
    mutating func expire(now: NIODeadline) -> [Change] {
        var changes: [Change] = []
        for index in self.targets.indices {
            if let until = self.targets[index].cooldownUntil, until <= now { self.targets[index].cooldownUntil = nil }
            if let until = self.targets[index].ejectedUntil, until <= now {
                self.targets[index].ejectedUntil = nil
                changes.append(.returned(index))
            }
        }
        return changes
    }

    // MARK: Reading

    func isInRotation(_ index: Int, now: NIODeadline) -> Bool {
        let target = self.targets[index]
        if let until = target.cooldownUntil, until > now { return false }
        if let until = target.ejectedUntil, until > now { return false }
        return target.healthy
    }

    /// URLs out of rotation at `now`, as a bit mask (bit `i` for URL `i`, the first 64).
    func outOfRotation(now: NIODeadline) -> UInt64 {
        var mask: UInt64 = 0
        for index in 0..<min(self.count, Self.maxTrackedTargets) where !self.isInRotation(index, now: now) {
            mask |= 1 << UInt64(index)
        }
        return mask
    }

    /// The earliest moment a sit-out or ejection ends, if any is running.
    var nextExpiry: NIODeadline? {
        self.targets.flatMap { [$0.cooldownUntil, $0.ejectedUntil].compactMap { $0 } }.min()
    }

    /// URLs with a failure streak (a success must then reach the machine to end it).
    var streaks: UInt64 {
        var mask: UInt64 = 0
        for index in 0..<min(self.count, Self.maxTrackedTargets) where self.targets[index].consecutiveFailures > 0 {
            mask |= 1 << UInt64(index)
        }
        return mask
    }

    func state(of index: Int, now: NIODeadline) -> State {
        if let until = self.targets[index].ejectedUntil, until > now { return .ejected(until: until) }
        return self.targets[index].healthy ? .healthy : .unhealthy
    }

    func ejectedCount(now: NIODeadline) -> Int {
        self.targets.filter { target in target.ejectedUntil.map { $0 > now } ?? false }.count
    }
}
