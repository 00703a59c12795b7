import NIOCore
import NIOHTTP1

/// The admin listener: health endpoints (answered until exit, also while draining),
/// `/metrics` in Prometheus text format and the assertion keys' JWKS (docs/assertions.md).
final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let worker: Worker
    private let metrics: MetricsCollector
    private var head: HTTPRequestHead?

    init(worker: Worker, metrics: MetricsCollector) {
        self.worker = worker
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head = self.head else { return }
            self.head = nil
            self.respond(to: head, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        if let health = HealthEndpoints.response(
            for: path, method: head.method, worker: self.worker, snapshot: self.worker.snapshot)
        {
            self.write(health, head: head, context: context)
            return
        }
        if path == AssertionJWKSEndpoint.adminPath,
            let jwks = AssertionJWKSEndpoint.response(self.worker.snapshot.configuration, method: head.method)
        {
            self.write(jwks, head: head, context: context)
            return
        }
        guard path == "/metrics", head.method == .GET || head.method == .HEAD else {
            self.write(.problem(.routeNotFound, requestID: RequestID.generate()), head: head, context: context)
            return
        }
        self.metrics.collect(on: context.eventLoop).assumeIsolated().whenSuccess { text in
            self.write(.text(.ok, text, contentType: PrometheusText.contentType), head: head, context: context)
        }
    }

    private func write(_ response: LocalResponse, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = response.headers
        let body = context.channel.allocator.buffer(string: response.body)
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            self.wrapOutboundOut(
                .head(HTTPResponseHead(version: head.version, status: response.status, headers: headers))), promise: nil
        )
        if head.method != .HEAD { context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let done = context.writeAndFlush(self.wrapOutboundOut(.end(nil)))
        if !head.isKeepAlive { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }
}

@available(*, unavailable)
extension AdminHandler: Sendable {}
