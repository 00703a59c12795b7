import NIOCore
import NIOHPACK
import NIOHTTP1

/// An endpoint of the gateway's own that takes the request's body — back-channel logout
/// (docs/browser-sign-in.md), the gRPC `Check` of authorizer mode (docs/authorizer.md). The
/// framings lease it as they lease a backend, so the body reaches it with their usual limits,
/// timeouts and backpressure, and its answer goes back as a backend's would (trailers too, for
/// gRPC), with the same metrics and access log. Nothing is pooled: one lease per request.
struct LocalEndpoint: Sendable {
    /// What the endpoint answers.
    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var headers: HeaderFields
        var body: ByteBuffer
        /// HTTP/2 trailers (gRPC's `grpc-status`); HTTP/1.1 clients get none.
        var trailers: HeaderFields = []
        /// The route the endpoint decided for (the gRPC `Check`'s original request), for the
        /// metrics and the access log; nil keeps the stand-in `-`.
        var route: String? = nil

        init(_ response: LocalResponse) {
            self.status = response.status
            self.headers = response.headers.map { ($0.name, $0.value) }
            self.body = ByteBuffer(string: response.body)
        }

        init(
            status: HTTPResponseStatus, headers: HeaderFields, body: ByteBuffer,
            trailers: HeaderFields = []
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.trailers = trailers
        }
    }

    /// The largest body the endpoint takes; a larger one is answered with `tooLarge` unread.
    let maximumBodyBytes: Int
    /// Whether the answer needs an HTTP/2 client to mean anything (gRPC).
    let needsTrailers: Bool
    /// Answers another proxy's question (the gRPC `Check`): `mode="authorizer"`.
    var authorizer = false
    let answer: @Sendable (_ body: ByteBuffer, _ eventLoop: EventLoop) -> EventLoopFuture<Answer>
    let tooLarge: @Sendable () -> Answer

    /// The plan that sends `head`'s request (its body) to this endpoint. The route is a
    /// stand-in named `-`, as for the gateway's other answers (metrics, access log).
    func plan(for head: HTTPRequestHead, timeout: TimeAmount = .seconds(30)) -> ForwardPlan {
        ForwardPlan(
            route: Self.route, pool: nil, local: self, head: UpstreamRequestHead(head), responseTimeout: timeout,
            responseHeaders: [],
            subject: nil, upgrade: nil)
    }

    private static let route = ResolvedRoute(
        configuration: RouteConfiguration(
            name: "-", host: nil, pathMatch: .prefix("/"), methods: nil, backend: "-", auth: .none,
            stripPathPrefix: false, forwardAccessToken: false),
        backendIndex: 0)

    /// One lease for one request; `decided` learns the route the endpoint decided for (the
    /// `Check`'s original request), before the answer's head.
    func lease(on eventLoop: EventLoop, method: HTTPMethod, decided: @escaping (String) -> Void) -> UpstreamLease {
        LocalEndpointLease(endpoint: self, eventLoop: eventLoop, method: method, decided: decided)
    }
}

/// One request to a `LocalEndpoint`: collects the body, then delivers the answer to the
/// exchange through the upstream delegate's events.
final class LocalEndpointLease: UpstreamLease {
    weak var delegate: UpstreamConnectionDelegate?
    private let endpoint: LocalEndpoint
    private let eventLoop: EventLoop
    private let method: HTTPMethod
    private let decided: (String) -> Void
    private var body = ByteBuffer()
    private var overflowed = false
    private var abandoned = false

    init(endpoint: LocalEndpoint, eventLoop: EventLoop, method: HTTPMethod, decided: @escaping (String) -> Void) {
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.method = method
        self.decided = decided
    }

    var reusable: Bool { false }

    func sendHead(_ head: UpstreamRequestHead, chunkedBody: Bool, upgrade: Bool, secrets: RequestSecrets) {}

    func sendBody(_ part: ByteBuffer) {
        guard !self.overflowed else { return }
        if self.body.readableBytes + part.readableBytes > self.endpoint.maximumBodyBytes {
            self.overflowed = true
            self.body.clear()
            return
        }
        var part = part
        self.body.writeBuffer(&part)
    }

    @discardableResult
    func sendEnd(trailers: HPACKHeaders?) -> Bool {
        if self.overflowed {
            self.deliver(self.endpoint.tooLarge())
            return false
        }
        self.endpoint.answer(self.body, self.eventLoop).hop(to: self.eventLoop).assumeIsolated().whenComplete {
            result in
            switch result {
            case .success(let answer): self.deliver(answer)
            case .failure: self.delegate?.upstreamClosed(protocolError: true)
            }
        }
        return false
    }

    private func deliver(_ answer: LocalEndpoint.Answer) {
        guard !self.abandoned, let delegate = self.delegate else { return }
        if let route = answer.route { self.decided(route) }
        var block = HPACKHeaders()
        block.add(name: ":status", value: String(answer.status.code))
        for (name, value) in answer.headers { block.add(name: name.lowercased(), value: value) }
        // With trailers the body runs to the end of the stream; without, its length is known.
        if answer.trailers.isEmpty {
            block.replaceOrAdd(name: "content-length", value: String(answer.body.readableBytes))
        }
        guard let head = HTTP2ResponseHead(block, method: self.method) else {
            delegate.upstreamClosed(protocolError: true)
            return
        }
        delegate.upstreamResponseHead(.http2(head))
        if answer.body.readableBytes > 0 { delegate.upstreamResponseBody(answer.body) }
        if !answer.trailers.isEmpty {
            var trailers = HPACKHeaders()
            for (name, value) in answer.trailers { trailers.add(name: name, value: value) }
            delegate.upstreamResponseTrailers(trailers)
        }
        delegate.upstreamResponseEnd()
        delegate.upstreamReadComplete()
    }

    func flush() {}
    func close() { self.abandoned = true }
    func timedOut() { self.abandoned = true }
    func resumeReading() {}
    func release(reusable: Bool) {}
    func returnUnused(reused: Bool) {}
}

@available(*, unavailable)
extension LocalEndpointLease: Sendable {}
