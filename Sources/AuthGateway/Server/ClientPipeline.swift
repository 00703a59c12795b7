import NIOCore
import NIOHTTP1
import NIOSSL

/// Builds the pipeline of an accepted client connection:
/// `[TLS] → activity → HTTP decoder/encoder → pipelining → ProxyHandler`.
enum ClientPipeline {
    static func configure(channel: Channel, worker: Worker, tls: NIOSSLContext?) throws {
        let shared = worker.shared
        let configuration = worker.snapshot.configuration
        let sync = channel.pipeline.syncOperations
        guard shared.admitConnection(limit: configuration.limits.maxConnections) else {
            // Over `maxConnections`: say so and close, rather than leave the client hanging.
            let bytes = RawResponse.bytes(.overloaded, requestID: RequestID.generate(), allocator: channel.allocator)
            channel.writeAndFlush(bytes).assumeIsolated().whenComplete { _ in
                channel.close(promise: nil)
            }
            return
        }
        worker.connectionOpened(channel)
        channel.closeFuture.assumeIsolated().whenComplete { _ in worker.connectionClosed(channel) }

        if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
        let connection = ClientConnectionInfo(
            peerIP: channel.remoteAddress?.ipAddress ?? "unknown",
            peerIsTrustedProxy: channel.remoteAddress.map { address in configuration.trustedProxies.contains { $0.contains(address) } } ?? false,
            isTLS: tls != nil
        )
        let proxy = ProxyHandler(worker: worker, connection: connection)
        try sync.addHandler(ConnectionActivityHandler(proxy: proxy))
        var encoder = HTTPResponseEncoder.Configuration()
        encoder.automaticallySetFramingHeaders = false
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = configuration.limits.maxHeaderBytes
        limits.maxHeaderFieldSize = configuration.limits.maxHeaderBytes
        // No pipelining assistance: `ProxyHandler` queues pipelined requests itself, without
        // withholding reads for every request (NIO's handler costs two epoll_ctl calls per
        // request: measured). No outbound header validation: every value the gateway writes
        // was parsed by llhttp or checked where it enters (identity values, refreshed tokens).
        try sync.configureHTTPServerPipeline(
            withPipeliningAssistance: false,
            withServerUpgrade: nil,
            withErrorHandling: false,
            withOutboundHeaderValidation: false,
            withEncoderConfiguration: encoder,
            withDecoderLimitConfiguration: limits
        )
        try sync.addHandler(proxy)
    }
}

/// Tells the `ProxyHandler` that bytes arrived, before the HTTP decoder has a complete head:
/// the start of the `requestHeaderSeconds` clock. One call per read, not per byte.
final class ConnectionActivityHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private unowned let proxy: ProxyHandler

    init(proxy: ProxyHandler) { self.proxy = proxy }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.proxy.bytesArrived()
        context.fireChannelRead(data)
    }
}

@available(*, unavailable)
extension ConnectionActivityHandler: Sendable {}

/// A complete error response as bytes, for a connection over `limits.maxConnections` (answered
/// before any HTTP handler exists).
enum RawResponse {
    static func bytes(_ error: GatewayError, requestID: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        let body = error.problemJSON(requestID: requestID)
        var head = "HTTP/1.1 \(error.status.code) \(error.status.reasonPhrase)\r\nContent-Type: application/problem+json\r\n"
        if let retryAfter = error.retryAfterSeconds { head += "Retry-After: \(retryAfter)\r\n" }
        head += "X-Request-Id: \(requestID)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return allocator.buffer(string: head + body)
    }
}
