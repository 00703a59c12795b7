import NIOCore

/// What the connection asks its state machine between events: the timeout that applies, whether
/// to read from either side, which state it is in.
extension HTTP1ConnectionStateMachine {
    var timeout: ExchangeStateMachine.Timeout {
        switch self.state {
        case .idle: return .idle
        case .exchange(let exchange, _): return exchange.timeout
        // A tunnel lives while bytes move; activity on either side restarts the clock.
        case .tunnel: return .idle
        case .closed: return .none
        case .modifying: preconditionFailure("HTTP1ConnectionStateMachine: read while modifying")
        }
    }

    /// Whether to read more from the client: not while a request waits for its decision or
    /// upstream (what arrived is buffered), nor while the backend cannot take more body.
    var shouldReadFromClient: Bool {
        switch self.state {
        case .idle: return true
        case .exchange(let exchange, _): return exchange.shouldReadFromClient
        case .tunnel: return self.upstreamWritable
        case .closed: return false
        case .modifying: preconditionFailure("HTTP1ConnectionStateMachine: read while modifying")
        }
    }

    /// Whether to read more from the client, holding a pipelined request (already received,
    /// not yet parsed) until the response in flight has ended.
    func mayReadFromClient(holdingPipelinedRequest: Bool) -> Bool {
        self.shouldReadFromClient && !holdingPipelinedRequest
    }

    /// Whether to read more from the backend: only while the client keeps up.
    var shouldReadFromUpstream: Bool { self.clientWritable }

    var isIdle: Bool {
        if case .idle = self.state { return true }
        return false
    }

    var isClosed: Bool {
        if case .closed = self.state { return true }
        return false
    }

    /// Bytes are relayed unparsed (after a 101).
    var isTunnel: Bool {
        if case .tunnel = self.state { return true }
        return false
    }
}
