import NIOCore

/// A long-lived stream as its event loop's registry knows it: an HTTP/1.1 connection in a
/// tunnel or streaming a response, or an HTTP/2 stream (`HTTP1ServerConnection`,
/// `HTTP2ServerStream`). It is asked to end, and ends itself as its protocol says
/// (docs/streams.md).
protocol StreamOwner: AnyObject {
    /// Ends the stream now (revoked, or refused by a reload), as its protocol ends one: a
    /// close frame each way for a WebSocket, grpc-status 16 for a gRPC call, RST_STREAM for
    /// another HTTP/2 stream, both connections closed for a streamed HTTP/1.1 response. The
    /// registry has forgotten it already.
    func endStream(_ reason: StreamCloseReason)
}

/// What the registry keeps of an open stream.
struct OpenStream {
    let owner: any StreamOwner
    /// The route it was decided on.
    let route: String
    var credential: StreamCredential
    let settings: StreamsConfiguration
    /// The identity and the request it was decided with, for a reload's `require`.
    let identity: Identity?
    let request: AuthRequest?
}

/// One event loop's long-lived streams (docs/streams.md): indexed by session, provider session
/// and subject (`StreamIndex`), so that a revocation reaches exactly the streams it names;
/// counted by route (`auth_gateway_open_streams`) and by why they were closed
/// (`auth_gateway_streams_closed_total`). Only touched on its loop: a revocation reaches it as
/// a task on the loop (`StreamDirectory`), never through a lock. A request that finishes
/// quickly never enters it.
final class LoopStreams {
    private let metrics: WorkerMetrics
    private var open: [ObjectIdentifier: OpenStream] = [:]
    private var index = StreamIndex<ObjectIdentifier>()

    init(metrics: WorkerMetrics) {
        self.metrics = metrics
    }

    /// Streams open on this loop.
    var count: Int { self.open.count }

    /// Keys held by the index (for the tests: nothing is left behind).
    var indexKeyCount: Int { self.index.keyCount }

    /// A stream opened (its response is still streaming after its head, or a tunnel opened).
    func opened(_ stream: OpenStream) {
        let id = ObjectIdentifier(stream.owner)
        if let previous = self.open[id] { self.forget(id, previous) }
        self.open[id] = stream
        self.index.insert(id, keys: StreamIndex<ObjectIdentifier>.keys(of: stream.credential))
        self.metrics.addGauge(.openStreams(route: stream.route), 1)
    }

    /// The stream ended by itself (its response or tunnel finished, either side closed).
    func closed(_ owner: any StreamOwner) {
        let id = ObjectIdentifier(owner)
        guard let stream = self.open[id] else { return }
        self.forget(id, stream)
    }

    /// The stream is ended by the gateway for `reason`: forgotten, counted, and asked to end.
    func end(_ owner: any StreamOwner, reason: StreamCloseReason) {
        let id = ObjectIdentifier(owner)
        guard let stream = self.open[id] else { return }
        self.forget(id, stream)
        self.metrics.increment(.streamsClosed(reason))
        owner.endStream(reason)
    }

    func stream(of owner: any StreamOwner) -> OpenStream? { self.open[ObjectIdentifier(owner)] }

    /// A session stream's credential reached its deadline: the session as this process holds
    /// it now renews it (a refresh, a use) — or nil: it is over.
    func renew(_ owner: any StreamOwner, signIn: BrowserSignIn?) -> OpenStream? {
        let id = ObjectIdentifier(owner)
        guard var stream = self.open[id] else { return nil }
        let record = stream.credential.session.flatMap { signIn?.sessions.held($0) }
        guard let renewed = stream.credential.renewed(record: record, lifetime: signIn?.lifetime) else { return nil }
        let keys = StreamIndex<ObjectIdentifier>.keys(of: stream.credential)
        stream.credential = renewed
        let newKeys = StreamIndex<ObjectIdentifier>.keys(of: renewed)
        if keys != newKeys {
            self.index.remove(id, keys: keys)
            self.index.insert(id, keys: newKeys)
        }
        self.open[id] = stream
        return stream
    }

    /// Ends every stream `selector` names (on this loop) for `reason`.
    func revoke(_ selector: StreamIndex<ObjectIdentifier>.Selector, reason: StreamCloseReason) {
        for id in self.index.ids(selector) {
            guard let stream = self.open[id] else { continue }
            self.end(stream.owner, reason: reason)
        }
    }

    /// A reload: each stream's request is matched again (`route`: the route it matches now,
    /// nil for none); a stream whose route is gone, or whose route's new `require` refuses its
    /// identity, ends.
    func reloaded(route: (AuthRequest) -> RouteConfiguration?) {
        var refused: [any StreamOwner] = []
        for stream in self.open.values {
            guard let request = stream.request else { continue }
            if !Self.stillAllowed(stream, under: route(request), request: request) { refused.append(stream.owner) }
        }
        for owner in refused { self.end(owner, reason: .reload) }
    }

    /// Whether `route` (the stream's request's route after a reload) still admits the stream.
    static func stillAllowed(_ stream: OpenStream, under route: RouteConfiguration?, request: AuthRequest) -> Bool {
        guard let route, route.name == stream.route else { return false }
        switch (route.auth, stream.identity) {
        case (.required, nil): return false
        case (_, nil): return true
        case (_, let identity?):
            return RequirementCheck.evaluate(route.require, IdentityFields(identity: identity, request: request))
                == .holds
        }
    }

    /// The owner of every open stream (for the tests).
    var owners: [any StreamOwner] { self.open.values.map(\.owner) }

    private func forget(_ id: ObjectIdentifier, _ stream: OpenStream) {
        self.open[id] = nil
        self.index.remove(id, keys: StreamIndex<ObjectIdentifier>.keys(of: stream.credential))
        self.metrics.addGauge(.openStreams(route: stream.route), -1)
    }
}

@available(*, unavailable)
extension LoopStreams: Sendable {}
