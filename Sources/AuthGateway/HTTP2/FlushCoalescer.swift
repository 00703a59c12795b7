import NIOCore

/// Coalesces the flushes of one HTTP/2 connection into one per event-loop tick.
///
/// Each stream ends its response with a flush. Responses are written as their backends answer
/// — from other channels' reads, outside this connection's read burst, where NIOHTTP2 would
/// defer them — so without this every stream's response cost a `write(2)` of its own. Sitting
/// between the socket and NIOHTTP2, this handler lets writes through and turns the flushes of
/// one tick into a single flush after it (measured with h2load, 16 streams per connection).
final class FlushCoalescer: ChannelOutboundHandler {
    typealias OutboundIn = NIOAny

    private var scheduled = false

    func flush(context: ChannelHandlerContext) {
        guard !self.scheduled else { return }
        self.scheduled = true
        context.eventLoop.assumeIsolated().execute {
            guard self.scheduled else { return }
            self.scheduled = false
            context.flush()
        }
    }

    /// What was written goes out before the connection closes (a GOAWAY, a last response).
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if self.scheduled {
            self.scheduled = false
            context.flush()
        }
        context.close(mode: mode, promise: promise)
    }
}

@available(*, unavailable)
extension FlushCoalescer: Sendable {}
