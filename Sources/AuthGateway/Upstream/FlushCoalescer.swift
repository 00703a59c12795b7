import NIOCore

/// Coalesces the flushes of one HTTP/2 backend connection into one per event-loop tick.
///
/// Each stream of the connection flushes its request when the client's read burst that
/// carried it ends — every client connection's burst its own, and often several streams of
/// one backend connection in the same tick. Sitting between the socket and NIOHTTP2, this
/// handler lets writes through and turns the flushes of one tick into a single flush after
/// it: one `write(2)` for the requests of all the streams that share the connection.
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
