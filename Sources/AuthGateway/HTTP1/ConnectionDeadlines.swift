import NIOCore

/// The deadlines of one client connection and the one timer that watches them, as a pure
/// state machine (`now` passed in; the handler owns the timer and runs the actions).
///
/// Which deadline applies follows `HTTP1ConnectionStateMachine.timeout`: the request head must arrive
/// within `requestHeaderSeconds` of its first byte (slowloris), an idle connection or a
/// stalled upload gets `idleSeconds`, a request waiting on its backend gets the backend's
/// response timeout.
///
/// Moving a deadline is an assignment: the timer is never armed more than `granularity`
/// ahead (the shortest timeout a connection can be under) and re-arms itself when it fires
/// early. So the deadline changes of an ordinary request (idle → response → idle) are always
/// later than the armed time and need no new timer — measured: a timer reschedule per request
/// cost ~25 % throughput at 256 connections. Only an earlier deadline replaces the timer.
///
/// A long-lived stream (a WebSocket tunnel, a response still streaming after its head) adds
/// its credential's deadline (docs/streams.md) beside the state's: the same timer watches the
/// earlier of the two, so a stream costs no timer of its own and a request that finishes at
/// once none at all.
struct ConnectionDeadlines {
    /// The timer must (re)fire at this time; the handler cancels any armed timer first.
    enum TimerAction: Equatable {
        case none
        case arm(NIODeadline)
    }

    /// What a fired timer means.
    enum Expiry: Equatable {
        /// Nothing is due (or the connection is closed).
        case none
        /// Not due yet: arm again.
        case rearm(NIODeadline)
        /// The request head did not arrive in time: 408 and close.
        case slowHeaders
        /// The state's own timeout ran out (`HTTP1ConnectionStateMachine.timedOut`).
        case timedOut
        /// The stream's credential deadline passed (`credentialDeadline`, now cleared).
        case credentialExpired
    }

    /// How long each kind of wait may last, from the configuration snapshot in force.
    struct Limits {
        var requestHeader: TimeAmount
        var idle: TimeAmount
        var response: TimeAmount
        var granularity: TimeAmount
    }

    private(set) var deadline: NIODeadline?
    /// The long-lived stream's credential deadline; nil when no stream is open.
    private(set) var credentialDeadline: NIODeadline?
    /// When the armed timer fires; nil when none is armed.
    private(set) var armedFor: NIODeadline?
    /// When the first byte of the next request head arrived on an idle connection.
    private(set) var headStartedAt: NIODeadline?
    private var closed = false

    /// The first bytes of a request head arrived on an idle connection: its
    /// `requestHeaderSeconds` clock starts. No timer change: the armed one fires within
    /// `granularity` (≤ requestHeaderSeconds) and finds the new deadline.
    mutating func headBytesArrived(now: NIODeadline, limits: Limits) {
        guard self.headStartedAt == nil else { return }
        self.headStartedAt = now
        self.deadline = now + limits.requestHeader
    }

    /// The head is complete (its clock stops).
    mutating func headCompleted() {
        self.headStartedAt = nil
    }

    /// The connection's state changed: the deadline that applies now, and the timer for it.
    mutating func update(
        for timeout: ExchangeStateMachine.Timeout, isIdle: Bool, now: NIODeadline, limits: Limits
    ) -> TimerAction {
        switch timeout {
        case .none:
            self.deadline = nil
        case .idle:
            if let started = self.headStartedAt, isIdle {
                self.deadline = started + limits.requestHeader
            } else {
                self.deadline = now + limits.idle
            }
        case .response:
            self.deadline = now + limits.response
        }
        return self.armIfEarlier(now: now, granularity: limits.granularity)
    }

    /// A long-lived stream opened (its credential's deadline), or ended (nil).
    mutating func setCredentialDeadline(
        _ deadline: NIODeadline?, now: NIODeadline, granularity: TimeAmount
    )
        -> TimerAction
    {
        self.credentialDeadline = deadline
        return self.armIfEarlier(now: now, granularity: granularity)
    }

    /// The armed timer fired.
    mutating func timerFired(now: NIODeadline, isIdle: Bool, granularity: TimeAmount) -> Expiry {
        self.armedFor = nil
        guard !self.closed else { return .none }
        if let credential = self.credentialDeadline, credential <= now {
            self.credentialDeadline = nil
            return .credentialExpired
        }
        if let deadline = self.deadline, deadline <= now {
            self.deadline = nil
            return isIdle && self.headStartedAt != nil ? .slowHeaders : .timedOut
        }
        guard let next = self.earliest else { return .none }
        guard case .arm(let at) = self.arm(min(next, now + granularity)) else { return .none }
        return .rearm(at)
    }

    /// The earlier of the state's deadline and the stream's.
    private var earliest: NIODeadline? {
        switch (self.deadline, self.credentialDeadline) {
        case (let state?, let credential?): return min(state, credential)
        case (let state?, nil): return state
        case (nil, let credential?): return credential
        case (nil, nil): return nil
        }
    }

    /// A timer for the earliest deadline, unless one armed already fires no later.
    private mutating func armIfEarlier(now: NIODeadline, granularity: TimeAmount) -> TimerAction {
        guard let next = self.earliest, !self.closed else { return .none }
        if let armed = self.armedFor, armed <= next { return .none }
        return self.arm(min(next, now + granularity))
    }

    /// The connection closed: nothing is due any more.
    mutating func close() {
        self.closed = true
        self.deadline = nil
        self.credentialDeadline = nil
        self.armedFor = nil
    }

    private mutating func arm(_ at: NIODeadline) -> TimerAction {
        self.armedFor = at
        return .arm(at)
    }
}
