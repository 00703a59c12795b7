import NIOCore

/// The one timer of an HTTP/2 connection, armed for the earliest deadline of its streams (a
/// stalled upload: `idleSeconds`; a backend: its response timeout, or `grpc-timeout`). A pure
/// state machine: the connection handler owns the timer and runs what this says.
///
/// As for HTTP/1.1 (`ConnectionDeadlines`), the timer is never armed more than `granularity`
/// ahead, and a deadline that moves later needs no new timer: an ordinary stream's deadlines
/// (none → response → none) never reschedule it. Only an earlier deadline does.
struct StreamDeadlines {
    /// When the armed timer fires; nil when none is armed.
    private(set) var armedFor: NIODeadline?

    /// A stream's deadline is now `deadline`: the time to (re)arm the timer for, if it must
    /// change (the handler cancels the armed one first).
    mutating func deadlineSet(_ deadline: NIODeadline, now: NIODeadline, granularity: TimeAmount) -> NIODeadline? {
        if let armed = self.armedFor, armed <= deadline { return nil }
        return self.arm(min(deadline, now + granularity))
    }

    /// The timer fired and the expired streams were timed out: the time to arm it for next,
    /// given the earliest deadline still pending (nil: none, the timer rests).
    mutating func fired(earliestPending: NIODeadline?, now: NIODeadline, granularity: TimeAmount) -> NIODeadline? {
        self.armedFor = nil
        guard let earliest = earliestPending else { return nil }
        return self.arm(min(earliest, now + granularity))
    }

    /// The connection closed.
    mutating func cancel() {
        self.armedFor = nil
    }

    private mutating func arm(_ at: NIODeadline) -> NIODeadline {
        self.armedFor = at
        return at
    }
}
