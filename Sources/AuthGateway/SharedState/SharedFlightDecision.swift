import Foundation

/// The shared table's row for one old refresh token, as a claim or a read returned it.
struct SharedRefreshRow: Sendable, Equatable {
    /// The instance flight that holds (or held) the lease.
    var claimant: UUID
    /// The outcome, AES-GCM sealed; nil while the claimant is still calling the auth service.
    var sealedOutcome: [UInt8]?
    /// Milliseconds until the row's `expires_at`, by the database's clock (so the instances'
    /// clocks need not agree): the end of the lease while in flight, of the grace period once
    /// settled. Zero or less when past.
    var remainingMilliseconds: Int64
}

/// What one instance does for one old refresh token against the shared table
/// (docs/shared-state.md), decided from the rows its statements return. Pure: the shell runs the
/// statements, waits and calls the auth service; `now` is a monotonic time in milliseconds.
///
/// States and transitions:
/// - `claiming(takeover: false)`: the first claim. Its row says: ours → `lead`; an outcome →
///   `use` (remembered); another claimant in flight → `waiting` until that lease ends.
/// - `waiting(claimant, deadline, tookOver)`: between reads (woken by a notification or after
///   at most one poll interval). A read with an outcome → `use` (joined); the awaited
///   claimant's lease over by the database's clock, or our deadline passed, or no row (swept)
///   → `claiming(takeover: true)`; another claimant without an outcome (the flight we waited
///   for ended with nothing to share: "unavailable", or someone else already took over) →
///   `giveUp`.
/// - `claiming(takeover: true)`: taking over an ended lease. Ours → `lead`; an outcome →
///   `use` (joined); the same claimant (its lease not quite over by the database's clock) →
///   `waiting` again; a different claimant → `giveUp`.
/// - `finished`, after `lead`, `use` or `giveUp`.
///
/// No wait goes past `giveUpAt`: the awaited lease's end plus one poll interval. So a request
/// waits at most one lease for another instance, then leads itself or answers 503.
struct SharedFlightDecision: Sendable {
    enum Step: Sendable, Equatable {
        /// This instance holds the lease: call the auth service, then settle.
        case lead
        /// An outcome is stored: open it and answer with it.
        case use(sealedOutcome: [UInt8], remainingMilliseconds: Int64, role: SingleFlightRole)
        /// Another instance holds the lease: wait up to this long for a notification, then
        /// read the row.
        case wait(milliseconds: Int64)
        /// Run the claim statement (again).
        case claim
        /// Waited as long as a lease lasts: answer "unavailable" (503 with `Retry-After`).
        case giveUp
    }

    private enum State: Sendable, Equatable {
        case claiming(takeover: Bool, awaited: UUID?)
        case waiting(claimant: UUID?, deadline: Int64, tookOver: Bool)
        case finished
    }

    let me: UUID
    let leaseMilliseconds: Int64
    let pollMilliseconds: Int64
    private var state: State = .claiming(takeover: false, awaited: nil)
    private var giveUpAt: Int64

    init(me: UUID, leaseMilliseconds: Int64, pollMilliseconds: Int64, now: Int64) {
        self.me = me
        self.leaseMilliseconds = leaseMilliseconds
        self.pollMilliseconds = pollMilliseconds
        self.giveUpAt = now + leaseMilliseconds + pollMilliseconds
    }

    var isFinished: Bool { self.state == .finished }

    /// The claim statement returned `row`; nil when it returned none (a statement running at
    /// the same time claimed the token and its row is not visible to ours yet).
    mutating func claimed(_ row: SharedRefreshRow?, now: Int64) -> Step {
        guard case .claiming(let takeover, let awaited) = self.state else {
            preconditionFailure("claimed(_:now:) without a claim in flight")
        }
        guard let row else {
            return self.wait(for: awaited, deadline: now + self.pollMilliseconds, tookOver: takeover, now: now)
        }
        if row.claimant == self.me {
            return self.finish(.lead)
        }
        if let sealed = row.sealedOutcome {
            return self.finish(
                .use(
                    sealedOutcome: sealed, remainingMilliseconds: row.remainingMilliseconds,
                    role: takeover ? .joined : .remembered))
        }
        let remaining = max(row.remainingMilliseconds, 0)
        if !takeover {
            // Wait for this lease, however long the claimant's configuration made it.
            self.giveUpAt = max(self.giveUpAt, now + remaining + self.pollMilliseconds)
            return self.wait(for: row.claimant, deadline: now + remaining, tookOver: false, now: now)
        }
        if let awaited, awaited != row.claimant {
            // Another instance took over first: do not wait for a second lease.
            return self.finish(.giveUp)
        }
        return self.wait(for: row.claimant, deadline: now + remaining, tookOver: true, now: now)
    }

    /// A read while waiting returned `row` (nil: there is no row).
    mutating func read(_ row: SharedRefreshRow?, now: Int64) -> Step {
        guard case .waiting(let awaited, let deadline, let tookOver) = self.state else {
            preconditionFailure("read(_:now:) while not waiting")
        }
        guard let row else { return self.reclaim(awaited: awaited, tookOver: tookOver, now: now) }
        if let sealed = row.sealedOutcome {
            return self.finish(
                .use(sealedOutcome: sealed, remainingMilliseconds: row.remainingMilliseconds, role: .joined))
        }
        if let awaited, awaited != row.claimant {
            return self.finish(.giveUp)
        }
        if row.remainingMilliseconds <= 0 {
            return self.reclaim(awaited: row.claimant, tookOver: tookOver, now: now)
        }
        if awaited == nil {
            // First sight of the claimant (the claim saw no row): wait for its lease.
            if !tookOver { self.giveUpAt = max(self.giveUpAt, now + row.remainingMilliseconds + self.pollMilliseconds) }
            return self.wait(for: row.claimant, deadline: now + row.remainingMilliseconds, tookOver: tookOver, now: now)
        }
        if now >= deadline {
            return self.reclaim(awaited: row.claimant, tookOver: tookOver, now: now)
        }
        return self.wait(
            for: row.claimant, deadline: min(deadline, now + row.remainingMilliseconds), tookOver: tookOver, now: now)
    }

    private mutating func reclaim(awaited: UUID?, tookOver: Bool, now: Int64) -> Step {
        if tookOver && now >= self.giveUpAt { return self.finish(.giveUp) }
        self.state = .claiming(takeover: true, awaited: awaited)
        return .claim
    }

    private mutating func wait(for claimant: UUID?, deadline: Int64, tookOver: Bool, now: Int64) -> Step {
        if tookOver && now >= self.giveUpAt { return self.finish(.giveUp) }
        let until = min(deadline, self.giveUpAt)
        self.state = .waiting(claimant: claimant, deadline: until, tookOver: tookOver)
        return .wait(milliseconds: min(max(until - now, 1), self.pollMilliseconds))
    }

    private mutating func finish(_ step: Step) -> Step {
        self.state = .finished
        return step
    }
}
