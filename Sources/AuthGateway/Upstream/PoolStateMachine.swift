import NIOCore

/// The bookkeeping of one event loop's pool towards one upstream (a backend's URLs, the auth
/// service, a JWKS host), as a pure state machine: events in, actions out; no I/O, no timers,
/// `now` passed in (docs/architecture.md, AsyncHTTPClient's `HTTPConnectionPool.StateMachine`).
/// `UpstreamPool` is the shell that connects, arms timers and hands connections out.
///
/// - Targets are chosen **per request**, round robin, skipping targets out of rotation
///   (`TargetSelector`; the shell hands in `TargetHealth`'s verdict with `setOutOfRotation`),
///   so a keep-alive client — or a pool holding idle connections to one URL — still spreads
///   its requests over every URL (docs/forwarding.md).
/// - HTTP/1.1 (`exclusive`): a connection serves one request at a time. Each target keeps its
///   own idle connections, reused last-in first-out (the warmest).
/// - HTTP/2 (`multiplexed`): a connection serves as many concurrent streams as its peer's
///   `SETTINGS_MAX_CONCURRENT_STREAMS` allows (100 until the peer says otherwise); a new
///   connection is opened only when every connection of the target is full. A connection that
///   received GOAWAY takes no new streams.
/// - At most `maxConnections` connections are open or opening over all targets. When the pool
///   is full and the chosen target has no room, an unused connection of another target is
///   closed to make room; with none, the lease waits in line (first in, first out) for the
///   next connection or stream slot given back, whatever its target.
/// - A failed connect tries the next untried target for the same lease (the shell reports the
///   failure to `TargetAvailability`, which puts the target out of rotation for a while);
///   when every target failed, the lease fails (502).
///
/// `Connection` is what the shell pools (`UpstreamConnection`, `UpstreamHTTP2Connection`;
/// plain values in tests); a lease is named by the shell's `LeaseID`, a connection attempt by
/// the machine's `AttemptID`.
struct PoolStateMachine<Connection: Equatable> {
    typealias LeaseID = Int
    typealias AttemptID = Int

    enum Mode {
        /// HTTP/1.1: one request per connection at a time.
        case exclusive
        /// HTTP/2: concurrent streams per connection.
        case multiplexed
    }

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
        /// Hand `connection` to `lease` (HTTP/2: open a stream on it for the lease).
        case deliver(Connection, to: LeaseID, reused: Bool)
        /// HTTP/2: a new connection serves several waiting leases at once.
        case deliverAll(Connection, to: [LeaseID])
        /// Open a connection to `attempt.target`; report `connected` or `connectFailed`.
        case connect(Attempt)
        /// Close `connection` (unused, making room) and open another for the lease.
        case closeAndConnect(Connection, Attempt)
        /// The lease waits in line: arm its wait limit (`waitTimedOut`).
        case wait(LeaseID)
        case fail(LeaseID, Failure)
        case failAll([LeaseID], Failure)
        /// Close this connection (not reusable, or the pool shut down); `closed` follows.
        case close(Connection)
        /// Shut down: close these unused connections and fail these waiting leases.
        case shutDown(close: [Connection], fail: [LeaseID])
    }

    /// An HTTP/2 connection and its stream slots.
    private struct Multiplexed {
        var connection: Connection
        var capacity: Int
        var streams = 0
        /// GOAWAY received: no new streams.
        var draining = false

        var hasRoom: Bool { !self.draining && self.streams < self.capacity }
    }

    private struct TargetState {
        /// HTTP/1.1 idle connections, the most recently used last.
        var idle: [(connection: Connection, reused: Bool)] = []
        /// HTTP/2 connections, open ones with their streams.
        var multiplexed: [Multiplexed] = []
    }

    /// A connection being opened: for `lease` (nil once that lease was cancelled), having
    /// already tried `tried` targets for it.
    private struct PendingAttempt {
        let target: Int
        var lease: LeaseID?
        var tried: [Int]
    }

    /// Streams a new HTTP/2 connection is assumed to allow until its SETTINGS say otherwise
    /// (RFC 9113 §6.5.2 recommends at least 100).
    static var defaultStreamCapacity: Int { 100 }

    let mode: Mode
    let maxConnections: Int
    private var selector: TargetSelector
    private var targets: [TargetState]
    /// Connections open or being opened, over all targets.
    private(set) var openCount = 0
    private var attempts: [AttemptID: PendingAttempt] = [:]
    private var nextAttemptID: AttemptID = 0
    private var waiters = CircularBuffer<LeaseID>()
    private(set) var isShutDown = false

    init(targetCount: Int, maxConnections: Int, mode: Mode = .exclusive) {
        precondition(maxConnections > 0, "a pool needs room for a connection")
        self.mode = mode
        self.maxConnections = maxConnections
        self.selector = TargetSelector(count: targetCount)
        self.targets = Array(repeating: TargetState(), count: targetCount)
    }

    /// Which targets are out of rotation (bit `i` for target `i`), as `TargetHealth` decided.
    mutating func setOutOfRotation(_ mask: UInt64) {
        self.selector.outOfRotation = mask
    }

    var idleCount: Int { self.targets.reduce(0) { $0 + $1.idle.count } }
    var waitingCount: Int { self.waiters.count }
    /// HTTP/2 streams in use over all connections.
    var streamCount: Int { self.targets.reduce(0) { $0 + $1.multiplexed.reduce(0) { $0 + $1.streams } } }

    // MARK: Leases

    /// A request wants a connection (HTTP/1.1) or a stream slot (HTTP/2).
    mutating func lease(_ lease: LeaseID, now: NIODeadline) -> Action {
        guard !self.isShutDown, let target = self.selector.pick() else { return .fail(lease, .unreachable) }
        switch self.mode {
        case .exclusive:
            if let idle = self.targets[target].idle.popLast() {
                return .deliver(idle.connection, to: lease, reused: idle.reused)
            }
        case .multiplexed:
            if let index = self.targets[target].multiplexed.firstIndex(where: \.hasRoom) {
                self.targets[target].multiplexed[index].streams += 1
                return .deliver(self.targets[target].multiplexed[index].connection, to: lease, reused: true)
            }
            // A connection being opened will serve this lease too (up to its capacity):
            // concurrent first requests share one connection instead of opening one each.
            if self.attempts.count * Self.defaultStreamCapacity > self.waiters.count {
                self.waiters.append(lease)
                return .wait(lease)
            }
        }
        if self.openCount < self.maxConnections {
            self.openCount += 1
            return .connect(self.startAttempt(target: target, lease: lease, tried: []))
        }
        // Full: make room by closing an unused connection of another target.
        if let victim = self.takeUnusedConnection() {
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
        if self.isShutDown { return .close(connection) }
        switch self.mode {
        case .exclusive:
            if let lease = pending.lease { return .deliver(connection, to: lease, reused: false) }
            return self.handOut(connection, target: pending.target, reused: false)
        case .multiplexed:
            var entry = Multiplexed(connection: connection, capacity: Self.defaultStreamCapacity)
            var leases: [LeaseID] = []
            if let lease = pending.lease { leases.append(lease) }
            // The new connection also serves whoever waits, up to its capacity.
            while leases.count < entry.capacity, let waiter = self.waiters.popFirst() { leases.append(waiter) }
            entry.streams = leases.count
            self.targets[pending.target].multiplexed.append(entry)
            switch leases.count {
            case 0: return .none
            case 1: return .deliver(connection, to: leases[0], reused: false)
            default: return .deliverAll(connection, to: leases)
            }
        }
    }

    mutating func connectFailed(_ attempt: AttemptID, now: NIODeadline) -> Action {
        guard let pending = self.attempts.removeValue(forKey: attempt) else { return .none }
        let tried = pending.tried + [pending.target]
        guard let lease = pending.lease else {
            self.openCount -= 1
            return self.serveWaiter(now: now)
        }
        if !self.isShutDown, let next = self.selector.pick(excluding: Set(tried)) {
            return .connect(self.startAttempt(target: next, lease: lease, tried: tried))
        }
        self.openCount -= 1
        if self.mode == .multiplexed, self.attempts.isEmpty, !self.waiters.isEmpty {
            // They waited for this connection: no target can be reached.
            let waiting = Array(self.waiters)
            self.waiters.removeAll()
            return .failAll([lease] + waiting, .unreachable)
        }
        return .fail(lease, .unreachable)
    }

    /// HTTP/1.1: a leased connection comes back after its exchange (`reused` from now on).
    mutating func released(_ connection: Connection, target: Int, reusable: Bool) -> Action {
        guard reusable, !self.isShutDown else { return .close(connection) }
        return self.handOut(connection, target: target, reused: true)
    }

    /// HTTP/1.1: a leased connection comes back unused (its requester had gone).
    mutating func returnedUnused(_ connection: Connection, target: Int, reused: Bool, reusable: Bool) -> Action {
        guard reusable, !self.isShutDown else { return .close(connection) }
        return self.handOut(connection, target: target, reused: reused)
    }

    /// HTTP/2: a stream of `connection` closed; its slot goes to the longest waiter.
    mutating func streamClosed(_ connection: Connection, target: Int) -> Action {
        guard let index = self.targets[target].multiplexed.firstIndex(where: { $0.connection == connection }) else {
            return .none
        }
        self.targets[target].multiplexed[index].streams -= 1
        let entry = self.targets[target].multiplexed[index]
        if entry.draining || self.isShutDown {
            return entry.streams == 0 ? .close(connection) : .none
        }
        guard entry.hasRoom, let lease = self.waiters.popFirst() else { return .none }
        self.targets[target].multiplexed[index].streams += 1
        return .deliver(connection, to: lease, reused: true)
    }

    /// HTTP/2: the peer's SETTINGS_MAX_CONCURRENT_STREAMS; a larger value serves waiters.
    mutating func streamCapacityChanged(_ connection: Connection, target: Int, to capacity: Int) -> Action {
        guard let index = self.targets[target].multiplexed.firstIndex(where: { $0.connection == connection }) else {
            return .none
        }
        self.targets[target].multiplexed[index].capacity = capacity
        var leases: [LeaseID] = []
        while self.targets[target].multiplexed[index].hasRoom, let waiter = self.waiters.popFirst() {
            self.targets[target].multiplexed[index].streams += 1
            leases.append(waiter)
        }
        switch leases.count {
        case 0: return .none
        case 1: return .deliver(connection, to: leases[0], reused: true)
        default: return .deliverAll(connection, to: leases)
        }
    }

    /// HTTP/2: the peer sent GOAWAY: no new streams; the connection closes when its last does.
    mutating func goAwayReceived(_ connection: Connection, target: Int) -> Action {
        guard let index = self.targets[target].multiplexed.firstIndex(where: { $0.connection == connection }) else {
            return .none
        }
        self.targets[target].multiplexed[index].draining = true
        return self.targets[target].multiplexed[index].streams == 0 ? .close(connection) : .none
    }

    /// A connection's channel closed (idle or not): its slot is free.
    mutating func closed(_ connection: Connection, target: Int, now: NIODeadline) -> Action {
        self.openCount -= 1
        if let index = self.targets[target].idle.firstIndex(where: { $0.connection == connection }) {
            self.targets[target].idle.remove(at: index)
        }
        if let index = self.targets[target].multiplexed.firstIndex(where: { $0.connection == connection }) {
            self.targets[target].multiplexed.remove(at: index)
        }
        return self.serveWaiter(now: now)
    }

    /// Config reload removed this pool: close unused connections, fail waiters, refuse leases.
    mutating func shutDown() -> Action {
        self.isShutDown = true
        var unused: [Connection] = []
        for index in self.targets.indices {
            unused += self.targets[index].idle.map(\.connection)
            self.targets[index].idle.removeAll()
            for entry in self.targets[index].multiplexed where entry.streams == 0 { unused.append(entry.connection) }
            for stream in self.targets[index].multiplexed.indices {
                self.targets[index].multiplexed[stream].draining = true
            }
        }
        let waiting = Array(self.waiters)
        self.waiters.removeAll()
        return .shutDown(close: unused, fail: waiting)
    }

    // MARK: Internals

    private mutating func startAttempt(target: Int, lease: LeaseID, tried: [Int]) -> Attempt {
        let id = self.nextAttemptID
        self.nextAttemptID &+= 1
        self.attempts[id] = PendingAttempt(target: target, lease: lease, tried: tried)
        return Attempt(id: id, target: target)
    }

    /// HTTP/1.1: a connection is free again.
    private mutating func handOut(_ connection: Connection, target: Int, reused: Bool) -> Action {
        if let lease = self.waiters.popFirst() { return .deliver(connection, to: lease, reused: reused) }
        self.targets[target].idle.append((connection, reused))
        return .none
    }

    /// The oldest idle HTTP/1.1 connection, or an HTTP/2 connection without streams, of any
    /// target: closed to make room for a connection to the chosen target.
    private mutating func takeUnusedConnection() -> Connection? {
        for index in self.targets.indices {
            if !self.targets[index].idle.isEmpty { return self.targets[index].idle.removeFirst().connection }
            if let unused = self.targets[index].multiplexed.firstIndex(where: { $0.streams == 0 }) {
                return self.targets[index].multiplexed.remove(at: unused).connection
            }
        }
        return nil
    }

    /// A slot became free: open a connection for the longest waiter.
    private mutating func serveWaiter(now: NIODeadline) -> Action {
        guard !self.isShutDown, let lease = self.waiters.first else { return .none }
        _ = self.waiters.popFirst()
        return self.lease(lease, now: now)
    }
}
