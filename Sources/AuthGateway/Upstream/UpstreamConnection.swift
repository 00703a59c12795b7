import NIOCore
import NIOHTTP1

/// Receives what a leased upstream connection delivers. Implemented by `ProxyHandler` for
/// forwarded requests and by `UpstreamClient` for the gateway's own calls (auth service, JWKS).
protocol UpstreamConnectionDelegate: AnyObject {
    func upstreamResponseHead(_ head: HTTPResponseHead)
    func upstreamResponseBody(_ body: ByteBuffer)
    func upstreamResponseEnd()
    /// A read burst ended: the moment to flush what was written to the other side.
    func upstreamReadComplete()
    /// The connection closed or failed while leased. `protocolError` tells an invalid
    /// response (502) from a dead connection.
    func upstreamClosed(protocolError: Bool)
    func upstreamWritabilityChanged(_ writable: Bool)
    /// Backpressure: false while the receiving side cannot take more.
    var shouldReadFromUpstream: Bool { get }
}

/// One keep-alive connection to a backend or the auth service, owned by an `UpstreamPool`.
/// Used only on its event loop.
final class UpstreamConnection {
    let channel: Channel
    let handler: UpstreamHandler
    /// Index of the pool target (URL) it is connected to.
    let targetIndex: Int
    /// The pool it belongs to (weak: a pool shut down by a reload may go away first).
    weak var pool: UpstreamPool?
    /// Requests completed on it; a connection with at least one is "reused".
    var completedRequests = 0
    /// Set when the backend asked to close (`Connection: close`, HTTP/1.0) or a response was
    /// cut short; such a connection is never returned to the idle list.
    var reusable = true

    init(channel: Channel, handler: UpstreamHandler, targetIndex: Int) {
        self.channel = channel
        self.handler = handler
        self.targetIndex = targetIndex
    }

    var isActive: Bool { self.channel.isActive }

    func write(_ part: HTTPClientRequestPart) {
        self.channel.write(part, promise: nil)
    }

    func flush() {
        self.channel.flush()
    }

    func close() {
        self.reusable = false
        self.handler.delegate = nil
        self.channel.close(promise: nil)
    }

    func resumeReading() {
        self.handler.resumeReading()
    }
}

@available(*, unavailable)
extension UpstreamConnection: Sendable {}

/// The last handler of an upstream pipeline: hands response parts to the current delegate,
/// withholds reads while the delegate cannot keep up, reports closure.
final class UpstreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// The lease holder, nil while idle in the pool.
    weak var delegate: UpstreamConnectionDelegate?
    /// Called once when the channel goes inactive (the pool forgets the connection).
    var onClose: (() -> Void)?
    private var context: ChannelHandlerContext?
    private var pendingRead = false
    private var closed = false

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let delegate = self.delegate else {
            // Bytes on an idle connection: the backend is not speaking HTTP/1.1 keep-alive as
            // agreed. Never let them be mistaken for the next response.
            context.close(promise: nil)
            return
        }
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            delegate.upstreamResponseHead(head)
        case .body(let body):
            delegate.upstreamResponseBody(body)
        case .end:
            delegate.upstreamResponseEnd()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.delegate?.upstreamReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.delegate?.upstreamWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.reportClosed(protocolError: false)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        self.reportClosed(protocolError: error is HTTPParserError)
        context.close(promise: nil)
    }

    func read(context: ChannelHandlerContext) {
        if self.delegate?.shouldReadFromUpstream ?? true {
            context.read()
        } else {
            self.pendingRead = true
        }
    }

    func resumeReading() {
        guard self.pendingRead, let context = self.context else { return }
        self.pendingRead = false
        context.read()
    }

    private func reportClosed(protocolError: Bool) {
        guard !self.closed else { return }
        self.closed = true
        let delegate = self.delegate
        self.delegate = nil
        delegate?.upstreamClosed(protocolError: protocolError)
        let onClose = self.onClose
        self.onClose = nil
        onClose?()
    }
}

@available(*, unavailable)
extension UpstreamHandler: Sendable {}
