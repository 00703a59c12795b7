import NIOCore
import NIOHTTP2
import NIOPosix

/// Opens a channel to an upstream target whose pipeline ends in an `UpstreamHandler`
/// (HTTP/1.1), or in NIOHTTP2's client handler and an `UpstreamHTTP2ConnectionHandler`.
package protocol UpstreamConnector: Sendable {
    func connect(
        to target: UpstreamURL, eventLoop: EventLoop, timeout: TimeAmount, tls: UpstreamTLS?, http2: Bool
    ) -> EventLoopFuture<Channel>
}

/// TCP (and TLS) connections with NIO's `ClientBootstrap`.
package struct SocketConnector: UpstreamConnector {
    package init() {}

    package func connect(
        to target: UpstreamURL, eventLoop: EventLoop, timeout: TimeAmount, tls: UpstreamTLS?, http2: Bool
    ) -> EventLoopFuture<Channel> {
        ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                do {
                    if let tls {
                        let handler = try tls.makeHandler(for: target)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    if http2 {
                        try Self.addHTTP2Handlers(to: channel)
                    } else {
                        try Self.addHTTPHandlers(to: channel)
                    }
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: target.host, port: target.port)
    }

    /// The handler every upstream connection has: the gateway's own HTTP/1.1 client codec
    /// (`UpstreamHandler`; see HeadScanner.swift for why not NIOHTTP1's).
    package static func addHTTPHandlers(to channel: Channel) throws {
        try channel.pipeline.syncOperations.addHandler(UpstreamHandler())
    }

    /// An HTTP/2 client connection: one flush per tick for all its streams (`FlushCoalescer`),
    /// NIOHTTP2 (framing, HPACK, flow control) and the handler that reports stream limits,
    /// GOAWAY and the close to the pool. Streams pushed by a backend are refused.
    package static func addHTTP2Handlers(to channel: Channel) throws {
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(FlushCoalescer())
        try sync.addHandler(
            NIOHTTP2Handler(mode: .client, eventLoop: channel.eventLoop) { stream in
                stream.close()
            }
        )
        try sync.addHandler(UpstreamHTTP2ConnectionHandler())
    }
}
