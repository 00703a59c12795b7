import NIOCore

/// Closes a TLS connection whose handshake and protocol negotiation (ALPN) have not finished
/// within `timeout`, or that is told to quiesce (drain) before they finish. Until ALPN picks
/// HTTP/1.1 or HTTP/2 no handler with timers of its own exists, so a peer that connects and
/// sends nothing, or stalls mid-handshake, would otherwise hold a `maxConnections` slot for
/// good. Removed as soon as the negotiated protocol's handlers are in place.
final class NegotiationDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    static let name = "negotiation-deadline"

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: self.timeout) {
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            // Draining: nothing has been asked on this connection yet.
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}

@available(*, unavailable)
extension NegotiationDeadline: Sendable {}
