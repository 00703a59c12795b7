import NIOCore
import NIOHTTP1

/// What the client gets: the backend's response relayed (its head held back so a small
/// response leaves in one write), or the gateway's own answer.
extension HTTP1ServerConnection {
    func finishResponse(reuseUpstream: Bool, closeClient: Bool, context: ChannelHandlerContext) {
        if let upstream = self.upstream {
            self.upstream = nil
            upstream.release(reusable: reuseUpstream)
        }
        let tail = self.takeResponseTail(context: context)
        self.finishExchange(status: self.exchange?.responseStatus ?? 0, error: nil)
        // Flush here: the upstream connection is back in its pool, so its read-complete (the
        // usual flush point) no longer reaches this handler.
        self.flushResponse(tail, close: closeClient, context: context)
        if !closeClient { self.requestFinished(context: context) }
    }

    /// Largest first body part copied into the held response head (one buffer, one write);
    /// larger parts follow it as their own buffer.
    private static let coalescedBodyBytes = 8 * 1024

    /// Writes response bytes, after the head while it is still held.
    func writeResponse(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        guard self.exchange != nil, var head = self.heldResponseHead else {
            context.write(self.wrapOutboundOut(bytes), promise: nil)
            return
        }
        self.heldResponseHead = nil
        if bytes.readableBytes <= Self.coalescedBodyBytes {
            var bytes = bytes
            head.writeBuffer(&bytes)
            self.writeResponseHead(head, context: context)
        } else {
            self.writeResponseHead(head, context: context)
            context.write(self.wrapOutboundOut(bytes), promise: nil)
        }
    }

    /// Largest response-head buffer (with the body part copied into it) kept for the next
    /// head: a kept-alive connection holds at most this much between requests.
    private static let keptHeadBytes = 1024

    /// A buffer for a response head: the last one, cleared — once the channel has written it,
    /// nobody else holds it and a head costs no allocation (a buffer is two: its storage object
    /// and its bytes); still held by the channel, `clear` allocates anew, as a new buffer would.
    func responseHeadBuffer(capacity: Int, context: ChannelHandlerContext) -> ByteBuffer {
        guard var spare = self.spareResponseHead.take() else {
            return context.channel.allocator.buffer(capacity: capacity)
        }
        spare.clear(minimumCapacity: capacity)
        return spare
    }

    /// Writes the response head (with what was copied into it), keeping its buffer for the
    /// next one when small.
    func writeResponseHead(_ head: ByteBuffer, context: ChannelHandlerContext) {
        context.write(self.wrapOutboundOut(head), promise: nil)
        if head.capacity <= Self.keptHeadBytes { self.spareResponseHead = head }
    }

    /// What is left to write when the response ends: the held head, the last chunk.
    func takeResponseTail(context: ChannelHandlerContext) -> ByteBuffer? {
        guard self.exchange != nil else { return nil }
        var tail = self.heldResponseHead
        self.heldResponseHead = nil
        if self.responseChunked {
            if tail == nil { tail = context.channel.allocator.buffer(capacity: 8) }
            tail!.writeStaticString(HTTPWriter.lastChunk)
        }
        return tail
    }

    /// Writes `tail` and flushes; closes the connection afterwards when `close`.
    func flushResponse(_ tail: ByteBuffer?, close: Bool, context: ChannelHandlerContext) {
        if close {
            context.writeAndFlush(self.wrapOutboundOut(tail ?? ByteBuffer())).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        } else if let tail {
            self.writeResponseHead(tail, context: context)
            context.flush()
        } else {
            context.flush()
        }
    }

    func writeLocalResponse(close: Bool, context: ChannelHandlerContext) {
        guard let exchange = self.exchange, let response = exchange.local else { return }
        var headers = response.headers
        headers.add(name: "X-Request-Id", value: exchange.requestID)
        // RFC 9110 §8.6: never on a 204 (a granted CORS preflight).
        if response.status != .noContent {
            headers.add(name: "Content-Length", value: String(response.body.utf8.count))
        }
        if close {
            headers.add(name: "Connection", value: "close")
        } else if self.requestVersion == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        let version: HTTPVersion = self.requestVersion == .http1_0 ? .http1_0 : .http1_1
        var bytes = context.channel.allocator.buffer(capacity: 256 + response.body.utf8.count)
        HTTPWriter.responseHead(version: version, status: response.status, headers: headers, into: &bytes)
        if exchange.method != .HEAD {
            exchange.bytesOut = response.body.utf8.count
            bytes.writeString(response.body)
        }
        self.finishExchange(status: Int(response.status.code), error: response.error)
        if close {
            context.writeAndFlush(self.wrapOutboundOut(bytes)).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        } else {
            context.writeAndFlush(self.wrapOutboundOut(bytes), promise: nil)
            self.requestFinished(context: context)
        }
    }
}
