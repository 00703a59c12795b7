import NIOCore

/// The bookkeeping of one event loop's pool towards one upstream (a backend's URLs, the auth
/// service, a JWKS host), as a pure state machine: events in, actions out; no I/O, no timers,
/// `now` passed in (DESIGN.md habit 1, AsyncHTTPClient's `HTTPConnectionPool.StateMachine`).
/// `UpstreamPool` is the shell that connects, arms timers and hands connections out.
///
/// - Targets are chosen **per request**, round robin, skipping targets in their
///   connect-failure cooldown (`TargetSelector`), so a keep-alive client — or a pool holding
///   idle connections to one URL — still spreads its requests over every URL (SPEC §4.5).
/// - Each target keeps its own idle connections, reused last-in first-out (the warmest).
/// - At most `maxConnections` connections are open or opening over all targets. When the pool
///   is full and the chosen target has no idle connection, an idle connection of another target
///   is closed to make room; with none idle, the lease waits in line (first in, first out) for
///   the next connection given back, whatever its target.
/// - A failed connect puts its target in cooldown and tries the next untried target for the
///   same lease; when every target failed, the lease fails (502).
///
/// `Connection` is what the shell pools (`UpstreamConnection`; plain values in tests); a lease
/// is named by the shell's `LeaseID`, a connection attempt by the machine's `AttemptID`.
struct PoolStateMachine<Connection: Equatable> {
    typealias LeaseID = Int
    typealias AttemptID = Int

    enum Failure: Equatable {
        /// Every target refused or the pool was shut down: 502.
        case unreachable
        /// No connection was free within the wait limit: 503.
        case busy
    }

    struct Attempt: Equatable {
        let id: AttemptID
        let target: Int
    }

    enum Action: Equatable {
        case none
        /// Hand `connection` to `lease`.
        case deliver(Connection, to: LeaseID, reused: Bool)
        /// Open a connection to `attempt.target`; report `connected` or `connectFailed`.
        case connect(Attempt)
        /// Close `connection` (idle, making room) and open another for the lease.
        case closeAndConnect(Connection, Attempt)
        /// The lease waits in line: arm its wait limit (`waitTimedOut`).
        case wait(LeaseID)
        case fail(LeaseID, Failure)
        /// Close this connection (not reusable, or the pool shut down); `closed` follows.
        case close(Connection)
        /// Shut down: close these idle connections and fail these waiting leases.
        case shutDown(close: [Connection], fail: [LeaseID])
    }

    private struct TargetState {
        /// Idle connections, the most recently used last.
        var idle: [(connection: Connection, reused: Bool)] = []
    }

    /// A connection being opened: for `lease` (nil once that lease was cancelled), having
    /// already tried `tried` targets for it.
    private struct PendingAttempt {
        let target: Int
        var lease: LeaseID?
        var tried: [Int]
    }

    let maxConnections: Int
    private var selector: TargetSelector
    private var targets: [TargetState]
    /// Connections open or being opened, over all targets.
    private(set) var openCount = 0
    private var attempts: [AttemptID: PendingAttempt] = [:]
    private var nextAttemptID: AttemptID = 0
    private var waiters = CircularBuffer<LeaseID>()
    private(set) var isShutDown = false

    init(targetCount: Int, maxConnections: Int, cooldown: TimeAmount = .seconds(2)) {
        precondition(maxConnections > 0, "a pool needs room for a connection")
        self.maxConnections = maxConnections
        self.selector = TargetSelector(count: targetCount, cooldown: cooldown)
        self.targets = Array(repeating: TargetState(), count: targetCount)
    }

    var idleCount: Int { self.targets.reduce(0) { $0 + $1.idle.count } }
    var waitingCount: Int { self.waiters.count }

    // MARK: Leases

    /// A request wants a connection.
    mutating func lease(_ lease: LeaseID, now: NIODeadline) -> Action {
        guard !self.isShutDown, let target = self.selector.pick(now: now) else { return .fail(lease, .unreachable) }
        if let idle = self.targets[target].idle.popLast() {
            return .deliver(idle.connection, to: lease, reused: idle.reused)
        }
        if self.openCount < self.maxConnections {
            self.openCount += 1
            return .connect(self.startAttempt(target: target, lease: lease, tried: []))
        }
        // Full: make room by closing the oldest idle connection of another target.
        if let donor = self.targets.indices.first(where: { !self.targets[$0].idle.isEmpty }) {
            let victim = self.targets[donor].idle.removeFirst().connection
            // The victim's slot is given back when its `closed` arrives.
            self.openCount += 1
            return .closeAndConnect(victim, self.startAttempt(target: target, lease: lease, tried: []))
        }
        self.waiters.append(lease)
        return .wait(lease)
    }

    /// The lease's requester went away before getting a connection. A connection being opened
    /// for it is kept for the next lease (or the idle list).
    mutating func cancel(_ lease: LeaseID) {
        if let index = self.waiters.firstIndex(of: lease) {
            self.waiters.remove(at: index)
            return
        }
        if let id = self.attempts.first(where: { $0.value.lease == lease })?.key {
            self.attempts[id]?.lease = nil
        }
    }

    /// A waiting lease's wait limit passed.
    mutating func waitTimedOut(_ lease: LeaseID) -> Action {
        guard let index = self.waiters.firstIndex(of: lease) else { return .none }
        self.waiters.remove(at: index)
        return .fail(lease, .busy)
    }

    // MARK: Connections

    mutating func connected(_ attempt: AttemptID, _ connection: Connection) -> Action {
        guard let pending = self.attempts.removeValue(forKey: attempt) else { return .close(connection) }
        self.selector.connectSucceeded(pending.target)
        if self.isShutDown { return .close(connection) }
        if let lease = pending.lease { return .deliver(connection, to: lease, reused: false) }
        return self.handOut(connection, target: pending.target, reused: false)
    }

    mutating func connectFailed(_ attempt: AttemptID, now: NIODeadline) -> Action {
        guard let pending = self.attempts.removeValue(forKey: attempt) else { return .none }
        self.selector.connectFailed(pending.target, now: now)
        let tried = pending.tried + [pending.target]
        guard let lease = pending.lease else {
            self.openCount -= 1
            return self.serveWaiter(now: now)
        }
        if !self.isShutDown, let next = self.selector.pick(now: now, excluding: Set(tried)) {
            return .connect(self.startAttempt(target: next, lease: lease, tried: tried))
        }
        self.openCount -= 1
        return .fail(lease, .unreachable)
    }

    /// A leased connection comes back after its exchange (`reused` from now on).
    mutating func released(_ connection: Connection, target: Int, reusable: Bool) -> Action {
        guard reusable, !self.isShutDown else { return .close(connection) }
        return self.handOut(connection, target: target, reused: true)
    }

    /// A leased connection comes back unused (its requester had gone).
    mutating func returnedUnused(_ connection: Connection, target: Int, reused: Bool, reusable: Bool) -> Action {
        guard reusable, !self.isShutDown else { return .close(connection) }
        return self.handOut(connection, target: target, reused: reused)
    }

    /// A connection's channel closed (idle or not): its slot is free.
    mutating func closed(_ connection: Connection, target: Int, now: NIODeadline) -> Action {
        self.openCount -= 1
        if let index = self.targets[target].idle.firstIndex(where: { $0.connection == connection }) {
            self.targets[target].idle.remove(at: index)
        }
        return self.serveWaiter(now: now)
    }

    /// Config reload removed this pool: close idle connections, fail waiters, refuse leases.
    mutating func shutDown() -> Action {
        self.isShutDown = true
        var idle: [Connection] = []
        for index in self.targets.indices {
            idle += self.targets[index].idle.map(\.connection)
            self.targets[index].idle.removeAll()
        }
        let waiting = Array(self.waiters)
        self.waiters.removeAll()
        return .shutDown(close: idle, fail: waiting)
    }

    // MARK: Internals

    private mutating func startAttempt(target: Int, lease: LeaseID, tried: [Int]) -> Attempt {
        let id = self.nextAttemptID
        self.nextAttemptID &+= 1
        self.attempts[id] = PendingAttempt(target: target, lease: lease, tried: tried)
        return Attempt(id: id, target: target)
    }

    private mutating func handOut(_ connection: Connection, target: Int, reused: Bool) -> Action {
        if let lease = self.waiters.popFirst() { return .deliver(connection, to: lease, reused: reused) }
        self.targets[target].idle.append((connection, reused))
        return .none
    }

    /// A slot became free: open a connection for the longest waiter.
    private mutating func serveWaiter(now: NIODeadline) -> Action {
        guard !self.isShutDown, let lease = self.waiters.first else { return .none }
        _ = self.waiters.popFirst()
        return self.lease(lease, now: now)
    }
}
