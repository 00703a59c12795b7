/// Whether refreshes go through the shared-state database or fall back to the process-local
/// table, and when to probe the database again (docs/shared-state.md: fall back at once, reconnect
/// with backoff, recover by itself). Pure: `now` (Unix seconds) comes in.
///
/// States: `starting` (tables not yet created) → `up` after the first successful probe;
/// `up` → `down` on any failed operation; `down` → `up` after a successful probe. Probes are
/// due at once when starting, then after a backoff that doubles from `initialBackoff` to
/// `maximumBackoff` with each consecutive failure.
struct DatabaseAvailability: Sendable, Equatable {
    enum Status: String, Sendable, Equatable {
        case starting, up, down
    }

    static let initialBackoff = 0.25
    static let maximumBackoff = 5.0

    private(set) var status: Status = .starting
    private(set) var consecutiveFailures = 0
    private(set) var lastFailure: SharedStateFailureRecord?
    /// When the next probe is due (not `up`).
    private(set) var probeAt: Double

    init(now: Double) {
        self.probeAt = now
    }

    /// Refreshes use the database only while it is `up`; otherwise they go straight to the
    /// local table, without waiting for a timeout.
    var usesDatabase: Bool { self.status == .up }

    func isProbeDue(now: Double) -> Bool { self.status != .up && now >= self.probeAt }

    /// Records a successful operation (or probe). True when this ends an outage or the start.
    @discardableResult
    mutating func succeeded(now: Double) -> Bool {
        self.consecutiveFailures = 0
        guard self.status != .up else { return false }
        // A late success of an operation begun before an outage was noticed does not end it:
        // only a probe (or any success after the probe time) does.
        guard now >= self.probeAt else { return false }
        self.status = .up
        return true
    }

    /// Records a failure; true when it starts an outage (the database was `up`).
    @discardableResult
    mutating func failed(_ failure: SharedStateFailure, now: Double) -> Bool {
        let wasUp = self.status == .up
        self.consecutiveFailures += 1
        self.lastFailure = SharedStateFailureRecord(operation: failure.operation, reason: failure.reason, at: now)
        if self.status != .starting { self.status = .down }
        let backoff = min(Self.initialBackoff * Double(1 << min(self.consecutiveFailures - 1, 16)), Self.maximumBackoff)
        self.probeAt = now + backoff
        return wasUp
    }
}

struct SharedStateFailureRecord: Sendable, Equatable {
    let operation: SharedStateOperation
    let reason: String
    let at: Double
}
