import NIOCore
import NIOSSL

/// Builds the pipeline of an accepted client connection:
/// `[TLS] → ProxyHandler`.
package enum ClientPipeline {
    package static func configure(channel: Channel, worker: Worker, tls: NIOSSLContext?) throws {
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
        // The gateway's own HTTP/1.1 codec lives in `ProxyHandler` (see HeadScanner.swift):
        // one handler per connection, bytes in and out.
        try sync.addHandler(ProxyHandler(worker: worker, connection: connection))
    }
}

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
