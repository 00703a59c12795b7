import NIOCore
import NIOHTTP2
import NIOSSL
import NIOTLS

/// Builds the pipeline of an accepted client connection (docs/http2.md):
/// - TLS: `NIOSSLServerHandler`, then by ALPN either HTTP/2 (`h2`) or HTTP/1.1;
/// - cleartext: `CleartextProtocolDetector`, then HTTP/2 for a connection that starts with
///   the HTTP/2 preface (prior knowledge), else HTTP/1.1;
/// - with `listener.http2: false`, HTTP/1.1 only.
/// HTTP/1.1 is one `HTTP1ServerConnection`; HTTP/2 is NIOHTTP2's handler at the frame level, one
/// `HTTP2ServerConnection` with its table of streams (and the idle close), the connection
/// manager (graceful GOAWAY on drain) and `HTTP2ConnectionMonitor` (closes and counts abusive
/// connections).
package enum ClientPipeline {
    package static func configure(channel: Channel, worker: Worker, tls: NIOSSLContext?) throws {
        let configuration = worker.snapshot.configuration
        let sync = channel.pipeline.syncOperations
        guard worker.connections.admit(channel, limit: configuration.limits.maxConnections) else {
            // Over `maxConnections`: say so and close, rather than leave the client hanging.
            let bytes = RawResponse.bytes(.overloaded, requestID: RequestID.generate(), allocator: channel.allocator)
            channel.writeAndFlush(bytes).assumeIsolated().whenComplete { _ in
                channel.close(promise: nil)
            }
            return
        }
        channel.closeFuture.assumeIsolated().whenComplete { _ in worker.connections.closed(channel) }

        let connection = ClientConnectionInfo(
            peerIP: channel.remoteAddress?.ipAddress ?? "unknown",
            peerIsTrustedProxy: channel.remoteAddress.map { address in
                configuration.trustedProxies.contains { $0.contains(address) }
            } ?? false,
            isTLS: tls != nil
        )
        let http2 = configuration.listener.http2
        if let tls {
            guard http2 else {
                // `HTTP1ServerConnection`'s own timers cover the handshake.
                try sync.addHandler(NIOSSLServerHandler(context: tls))
                try Self.configureHTTP1(channel: channel, worker: worker, connection: connection)
                return
            }
            try sync.addHandler(
                NegotiationDeadline(timeout: worker.snapshot.requestHeaderTimeout), name: NegotiationDeadline.name)
            try sync.addHandler(NIOSSLServerHandler(context: tls))
            try sync.addHandler(
                ApplicationProtocolNegotiationHandler { result, channel in
                    channel.eventLoop.makeCompletedFuture {
                        channel.pipeline.syncOperations.removeHandler(name: NegotiationDeadline.name, promise: nil)
                        if case .negotiated("h2") = result {
                            try Self.configureHTTP2(channel: channel, worker: worker, connection: connection)
                        } else {
                            try Self.configureHTTP1(channel: channel, worker: worker, connection: connection)
                        }
                    }
                }
            )
        } else if http2 {
            let snapshot = worker.snapshot
            try sync.addHandler(
                CleartextProtocolDetector(
                    idleTimeout: snapshot.idleTimeout,
                    headTimeout: snapshot.requestHeaderTimeout,
                    configureHTTP1: { try Self.configureHTTP1(channel: $0, worker: worker, connection: connection) },
                    configureHTTP2: { try Self.configureHTTP2(channel: $0, worker: worker, connection: connection) }
                )
            )
        } else {
            try Self.configureHTTP1(channel: channel, worker: worker, connection: connection)
        }
    }

    /// The gateway's own HTTP/1.1 codec lives in `HTTP1ServerConnection` (see HeadScanner.swift): one
    /// handler per connection, bytes in and out.
    static func configureHTTP1(channel: Channel, worker: Worker, connection: ClientConnectionInfo) throws {
        try channel.pipeline.syncOperations.addHandler(
            HTTP1ServerConnection(environment: worker, connection: connection))
    }

    static func configureHTTP2(channel: Channel, worker: Worker, connection: ClientConnectionInfo) throws {
        let snapshot = worker.snapshot
        let limits = snapshot.configuration.limits
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: limits.maxConcurrentStreams),
            // docs/http2.md: `limits.maxHeaderBytes` is the header list size.
            HTTP2Setting(parameter: .maxHeaderListSize, value: limits.maxHeaderBytes),
        ]
        let sync = channel.pipeline.syncOperations
        // Graceful GOAWAY on drain (ChannelShouldQuiesceEvent): `HTTP2ServerConnection` tells
        // it of the streams it opens and closes. Idle connections are closed by
        // `HTTP2ServerConnection` itself, on its one timer.
        let manager = NIOHTTP2ServerConnectionManagementHandler(
            eventLoop: channel.eventLoop,
            configuration: .init(
                maxIdleTime: nil,
                maxAge: nil,
                maxGraceTime: .seconds(Int64(snapshot.configuration.timeouts.drainSeconds)),
                keepalive: nil
            )
        )
        // Frame level, no stream multiplexer: `HTTP2ServerConnection` keeps the streams (and,
        // as NIOHTTP2's frame delegate, learns when each DATA frame leaves).
        let server = HTTP2ServerConnection(
            environment: worker, connection: connection, streamDelegate: manager.http2StreamDelegate)
        try sync.addHandler(
            NIOHTTP2Handler(mode: .server, frameDelegate: server, connectionConfiguration: connectionConfiguration))
        try sync.addHandler(server)
        try sync.addHandler(manager)
        try sync.addHandler(HTTP2ConnectionMonitor(metrics: worker.metrics))
    }
}

/// A complete error response as bytes, for a connection over `limits.maxConnections` (answered
/// before any HTTP handler exists).
enum RawResponse {
    static func bytes(_ error: GatewayError, requestID: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        let body = error.problemJSON(requestID: requestID)
        var head =
            "HTTP/1.1 \(error.status.code) \(error.status.reasonPhrase)\r\nContent-Type: application/problem+json\r\n"
        if let retryAfter = error.retryAfterSeconds { head += "Retry-After: \(retryAfter)\r\n" }
        head += "X-Request-Id: \(requestID)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return allocator.buffer(string: head + body)
    }
}
