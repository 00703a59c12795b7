/// What the stream asks its state machine between events: which state it is in, the timeout that
/// applies, whether to read from either side.
extension HTTP2StreamStateMachine {
    /// The stream waits for its request's HEADERS.
    var awaitsRequestHead: Bool {
        if case .idle = self.state { return true }
        return false
    }

    /// NIOHTTP2 closed the stream: nothing more can be written.
    var isClosed: Bool {
        if case .closed = self.state { return true }
        return false
    }

    var timeout: ExchangeStateMachine.Timeout {
        switch self.state {
        case .open, .halfClosedRemote: return self.exchange.timeout
        case .idle, .closed: return .none
        }
    }

    /// Whether to take more of the request's DATA (else the stream's window is withheld).
    var shouldReadFromClient: Bool {
        switch self.state {
        case .open, .halfClosedRemote: return self.exchange.shouldReadFromClient
        case .idle, .closed: return false
        }
    }

    /// A lease is pending: one that completes now is used (else it goes back unused).
    var awaitsLease: Bool {
        switch self.state {
        case .open, .halfClosedRemote: return self.exchange.awaitsLease
        case .idle, .closed: return false
        }
    }

    /// Whether to read more from the backend: only while the client keeps up.
    var shouldReadFromUpstream: Bool { self.clientWritable }
}
