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

extension StreamDeadlines {
    /// One stream's deadlines, as the connection's timer sees them: its state's (a stalled
    /// upload, the backend's response timeout) and, while it is a long-lived stream, its
    /// credential's (docs/streams.md). The timer is armed for the earliest of all streams'
    /// `earliest`; when it fires, `due` says which one passed. Pure.
    struct Stream: Equatable {
        enum Due: Equatable {
            case none
            /// The state's timeout ran out (now cleared).
            case timedOut
            /// The credential's deadline passed (now cleared; the state's is kept).
            case credentialExpired
        }

        var state: NIODeadline?
        var credential: NIODeadline?

        /// When the connection's timer must look at this stream next.
        var earliest: NIODeadline? {
            switch (self.state, self.credential) {
            case (let state?, let credential?): return min(state, credential)
            case (let state?, nil): return state
            case (nil, let credential?): return credential
            case (nil, nil): return nil
            }
        }

        /// What passed by `now`: the credential first (the stream ends whatever its state).
        mutating func due(now: NIODeadline) -> Due {
            if let credential = self.credential, credential <= now {
                self.credential = nil
                return .credentialExpired
            }
            if let state = self.state, state <= now {
                self.state = nil
                return .timedOut
            }
            return .none
        }
    }
}
