/// The two directions of a WebSocket tunnel as the gateway ends it (docs/streams.md): each
/// direction's frames are followed (`WebSocketFrameBoundary`); when the tunnel is to end, each
/// direction gets the gateway's close frame at its next frame boundary — at once when it is
/// between frames, else right after the frame under way — and nothing of it is relayed after
/// that. Once both close frames are out, both connections close. Pure: the handler feeds it
/// what each side sent and does what it says.
struct WebSocketTunnelClose: Equatable {
    enum Phase: Equatable {
        /// Relayed as is.
        case open
        /// Relayed up to the end of the frame under way, then the close frame.
        case closing
        /// The close frame went out: nothing more is relayed.
        case closed
    }

    /// What to do with bytes that arrived in one direction.
    struct Relay: Equatable {
        /// How many of them (from the start) go on.
        var forward: Int
        /// After them, the gateway's close frame goes in that direction.
        var thenClose: Bool
    }

    private(set) var fromClient = WebSocketFrameBoundary()
    private(set) var fromBackend = WebSocketFrameBoundary()
    private(set) var towardsBackend = Phase.open
    private(set) var towardsClient = Phase.open

    /// The tunnel is ending (`close` was called).
    var isEnding: Bool { self.towardsBackend != .open || self.towardsClient != .open }
    /// Both close frames went out: both connections may close.
    var isClosed: Bool { self.towardsBackend == .closed && self.towardsClient == .closed }

    /// The tunnel is to end: which close frames go out now (the others follow their
    /// direction's frame under way).
    mutating func close() -> (towardsBackend: Bool, towardsClient: Bool) {
        var now = (towardsBackend: false, towardsClient: false)
        if self.towardsBackend == .open {
            self.towardsBackend = self.fromClient.atBoundary ? .closed : .closing
            now.towardsBackend = self.towardsBackend == .closed
        }
        if self.towardsClient == .open {
            self.towardsClient = self.fromBackend.atBoundary ? .closed : .closing
            now.towardsClient = self.towardsClient == .closed
        }
        return now
    }

    /// The client sent `bytes`, bound for the backend.
    mutating func clientSent(_ bytes: UnsafeRawBufferPointer) -> Relay {
        Self.relay(bytes, frames: &self.fromClient, phase: &self.towardsBackend)
    }

    /// The backend sent `bytes`, bound for the client.
    mutating func backendSent(_ bytes: UnsafeRawBufferPointer) -> Relay {
        Self.relay(bytes, frames: &self.fromBackend, phase: &self.towardsClient)
    }

    private static func relay(
        _ bytes: UnsafeRawBufferPointer, frames: inout WebSocketFrameBoundary, phase: inout Phase
    ) -> Relay {
        switch phase {
        case .open:
            _ = frames.advance(over: bytes)
            return Relay(forward: bytes.count, thenClose: false)
        case .closing:
            guard let end = frames.advance(over: bytes, stoppingAtFrameEnd: true) else {
                return Relay(forward: bytes.count, thenClose: false)
            }
            phase = .closed
            return Relay(forward: end, thenClose: true)
        case .closed:
            return Relay(forward: 0, thenClose: false)
        }
    }
}
