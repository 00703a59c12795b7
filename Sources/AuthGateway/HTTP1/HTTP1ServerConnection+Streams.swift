import NIOCore

/// The connection's long-lived stream (docs/streams.md): a WebSocket tunnel, or a response
/// still streaming after its head. It enters the loop's registry when it starts, its
/// credential's deadline joins the connection's one timer (`ConnectionDeadlines`), and it
/// ends as HTTP/1.1 can end it: a tunnel with a close frame (1008) each way, then both
/// connections closed; a streamed response cut short by closing both connections.
extension HTTP1ServerConnection: StreamOwner {
    /// How long a tunnel's direction that is mid-frame when the tunnel ends may take to finish
    /// its frame before both connections close anyway.
    static let tunnelCloseGrace = TimeAmount.seconds(1)

    /// The response goes on after its head (or the tunnel opened): the stream is registered
    /// and its credential's deadline watched.
    func streamStarted(context: ChannelHandlerContext) {
        guard !self.streamOpen else { return }
        let deadline = self.openStream()
        guard self.streamOpen else { return }
        self.setCredentialDeadline(deadline, context: context)
    }

    /// The registry ends the stream (a revocation, a reload), or its credential ran out.
    func endStream(_ reason: StreamCloseReason) {
        self.streamOpen = false
        guard let context = self.context else { return }
        self.tunnelCloseReason = reason
        self.run(self.state.credentialEnded(), context: context)
    }

    /// The credential deadline passed: renewed (a session refreshed meanwhile) or the end. A
    /// tunnel already ending has had its grace: both connections close now.
    func credentialDeadlinePassed(context: ChannelHandlerContext) {
        if self.tunnelClose.isEnding {
            self.run(self.state.tunnelClosed(), context: context)
            return
        }
        if let next = self.renewOrEndStream() { self.setCredentialDeadline(next, context: context) }
        // The state's own deadline is watched again (the fired timer was the only one).
        self.updateTimer(context: context)
    }

    func setCredentialDeadline(_ deadline: NIODeadline?, context: ChannelHandlerContext) {
        let action = self.deadlines.setCredentialDeadline(
            deadline, now: .now(), granularity: self.environment.snapshot.timerGranularity)
        if case .arm(let at) = action { self.armTimer(at, context: context) }
    }

    // MARK: The tunnel

    /// Bytes of the tunnel from the client: relayed, up to the gateway's close frame once the
    /// tunnel is ending.
    func relayFromClient(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        let relay = bytes.withUnsafeReadableBytes { self.tunnelClose.clientSent($0) }
        if relay.forward > 0 {
            let part =
                relay.forward == bytes.readableBytes
                ? bytes : bytes.getSlice(at: bytes.readerIndex, length: relay.forward)!
            self.run(self.state.requestBody(part), context: context)
        }
        if relay.thenClose {
            self.sendCloseFrameToBackend()
            self.finishTunnelIfClosed(context: context)
        }
    }

    /// Bytes of the tunnel from the backend, likewise.
    func relayFromBackend(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        let relay = bytes.withUnsafeReadableBytes { self.tunnelClose.backendSent($0) }
        if relay.forward > 0 {
            let part =
                relay.forward == bytes.readableBytes
                ? bytes : bytes.getSlice(at: bytes.readerIndex, length: relay.forward)!
            self.run(self.state.responseBody(part), context: context)
        }
        if relay.thenClose {
            self.sendCloseFrameToClient(context: context)
            self.finishTunnelIfClosed(context: context)
        }
    }

    /// The tunnel ends: each side gets the close frame now, or after the frame it is sending.
    func closeTunnel(context: ChannelHandlerContext) {
        let now = self.tunnelClose.close()
        if now.towardsBackend { self.sendCloseFrameToBackend() }
        if now.towardsClient { self.sendCloseFrameToClient(context: context) }
        if !self.finishTunnelIfClosed(context: context) {
            // A frame under way has this long to finish.
            self.setCredentialDeadline(.now() + Self.tunnelCloseGrace, context: context)
        }
    }

    private func sendCloseFrameToBackend() {
        guard let upstream = self.upstream else { return }
        var generator = SystemRandomNumberGenerator()
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let frame = WebSocketCloseFrame.toServer(
            code: WebSocketCloseFrame.policyViolation, reason: self.tunnelCloseReason.closeText, mask: mask)
        upstream.sendBody(ByteBuffer(bytes: frame))
        upstream.flush()
    }

    private func sendCloseFrameToClient(context: ChannelHandlerContext) {
        let frame = WebSocketCloseFrame.toClient(
            code: WebSocketCloseFrame.policyViolation, reason: self.tunnelCloseReason.closeText)
        self.tunnelCloseWritten = context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: frame)))
    }

    /// Both close frames are out: once the client's has been written, both connections close.
    @discardableResult
    private func finishTunnelIfClosed(context: ChannelHandlerContext) -> Bool {
        guard self.tunnelClose.isClosed else { return false }
        let written = self.tunnelCloseWritten ?? context.eventLoop.makeSucceededVoidFuture()
        written.assumeIsolated().whenComplete { _ in
            self.run(self.state.tunnelClosed(), context: context)
        }
        return true
    }
}
