import NIOCore

/// An exchange that outlives its response head — a WebSocket tunnel, a streamed response, an
/// HTTP/2 stream or gRPC call — as a long-lived stream (docs/streams.md): registered in its
/// loop's `LoopStreams` with the credential its decision recorded, watched until that
/// credential runs out, forgotten when the exchange ends. Both framings share this; each ends
/// a stream its own way (`StreamOwner.endStream`).
extension ExchangeHandler {
    /// The exchange's response goes on after its head (or a tunnel opened): the stream enters
    /// the registry. Returns its credential's deadline on this loop's clock (nil when nothing
    /// runs out). The gateway's own endpoints are no streams.
    func openStream() -> NIODeadline? {
        guard !self.streamOpen, let plan = self.exchange?.plan, plan.local == nil else { return nil }
        self.streamOpen = true
        let identity = plan.allowed?.identity
        let stream = OpenStream(
            owner: self, route: plan.route.name,
            credential: StreamCredential(identity: identity, signIn: self.environment.snapshot.browserSignIn),
            settings: plan.route.streams, identity: identity, request: plan.allowed?.request)
        self.environment.streams.opened(stream)
        return self.deadline(of: stream)
    }

    /// The stream's credential deadline passed: a session refreshed (or used) meanwhile gives
    /// it a later one, which is returned; otherwise the stream ends (`endStream(.expiry)`) and
    /// nil is returned.
    func renewOrEndStream() -> NIODeadline? {
        guard self.streamOpen else { return nil }
        let streams = self.environment.streams
        if let renewed = streams.renew(self, signIn: self.environment.snapshot.browserSignIn),
            let deadline = self.deadline(of: renewed), deadline > .now()
        {
            return deadline
        }
        streams.end(self, reason: .expiry)
        return nil
    }

    /// The exchange ended: the stream leaves the registry (a request that never streamed pays
    /// one check).
    func closeStream() {
        guard self.streamOpen else { return }
        self.streamOpen = false
        self.environment.streams.closed(self)
    }

    private func deadline(of stream: OpenStream) -> NIODeadline? {
        stream.credential.deadline(stream.settings).map {
            StreamClock.deadline(at: $0, wallNow: self.environment.wallClock(), now: .now())
        }
    }
}
