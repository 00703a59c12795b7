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
        let activity = ConnectionActivityHandler(proxy: proxy)
        proxy.rawWriter = activity
        try sync.addHandler(activity)
        var encoder = HTTPResponseEncoder.Configuration()
        encoder.automaticallySetFramingHeaders = false
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = configuration.limits.maxHeaderBytes
        limits.maxHeaderFieldSize = configuration.limits.maxHeaderBytes
        try sync.configureHTTPServerPipeline(
            withPipeliningAssistance: true,
            withServerUpgrade: nil,
            withErrorHandling: false,
            withOutboundHeaderValidation: true,
            withEncoderConfiguration: encoder,
            withDecoderLimitConfiguration: limits
        )
        try sync.addHandler(proxy)
    }
}

/// Sits below the HTTP handlers. Tells the `ProxyHandler` that bytes arrived, before the
/// decoder has a complete head (the start of the `requestHeaderSeconds` clock; one call per
/// read, not per byte), and writes raw responses for the moments no request exists to answer
/// through the HTTP handlers (a 408 for headers that never completed).
final class ConnectionActivityHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private unowned let proxy: ProxyHandler
    private var context: ChannelHandlerContext?

    init(proxy: ProxyHandler) { self.proxy = proxy }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.proxy.bytesArrived()
        context.fireChannelRead(data)
    }

    /// Writes `bytes` below the HTTP encoder, then closes the connection.
    func writeRawAndClose(_ bytes: ByteBuffer) {
        guard let context = self.context else { return }
        context.writeAndFlush(self.wrapOutboundOut(bytes)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}

@available(*, unavailable)
extension ConnectionActivityHandler: Sendable {}

/// A complete error response as bytes, for answers given outside any request: a connection
/// over `limits.maxConnections`, headers that never completed.
enum RawResponse {
    static func bytes(_ error: GatewayError, requestID: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        let body = error.problemJSON(requestID: requestID)
        var head = "HTTP/1.1 \(error.status.code) \(error.status.reasonPhrase)\r\nContent-Type: application/problem+json\r\n"
        if let retryAfter = error.retryAfterSeconds { head += "Retry-After: \(retryAfter)\r\n" }
        head += "X-Request-Id: \(requestID)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return allocator.buffer(string: head + body)
    }
}
