/// A long-lived stream's end on an HTTP/1.1 connection (docs/streams.md).
extension HTTP1ConnectionStateMachine {
    /// The credential of the connection's long-lived stream ran out or was revoked: a tunnel
    /// ends with close frames (`closeTunnel`, then `tunnelClosed`); a response still streaming
    /// is cut short, and the connection closes.
    mutating func credentialEnded() -> Action {
        if self.isTunnel { return .closeTunnel }
        return self.withExchange(forceClose: true) { exchange, _ in exchange.credentialEnded() }
    }

    /// The gateway's close frames are out (or could not be): the tunnel is over, both
    /// connections close.
    mutating func tunnelClosed() -> Action {
        guard self.isTunnel else { return .none }
        return self.fail(nil)
    }
}
