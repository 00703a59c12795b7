import NIOCore
import NIOHPACK
import NIOHTTP1

/// One keep-alive connection to a backend or the auth service, owned by an `UpstreamPool`.
/// Used only on its event loop.
final class UpstreamConnection: UpstreamLease, Equatable {
    let channel: Channel
    let handler: UpstreamHandler
    /// Index of the pool target (URL) it is connected to.
    let targetIndex: Int
    /// The pool it belongs to (weak: a pool shut down by a reload may go away first).
    weak var pool: UpstreamPool?
    /// The request body in flight goes upstream chunk-framed.
    private var chunkedRequestBody = false
    /// The last request head's buffer, cleared for the next head: once the channel has
    /// written it, nobody else holds it and the next head costs no allocation (a buffer is two:
    /// its storage object and its bytes). Still held by the channel, `clear` allocates anew,
    /// as before. Kept only up to `keptHeadBytes`, so an idle pooled connection holds little.
    private var spareHead: ByteBuffer?
    private static let keptHeadBytes = 4096

    init(channel: Channel, handler: UpstreamHandler, targetIndex: Int) {
        self.channel = channel
        self.handler = handler
        self.targetIndex = targetIndex
    }

    var isActive: Bool { self.channel.isActive }

    var delegate: UpstreamConnectionDelegate? {
        get { self.handler.delegate }
        set { self.handler.delegate = newValue }
    }

    /// Open and fit for another request.
    var isReusable: Bool { self.handler.reusable && self.channel.isActive }

    /// False once the backend asked to close (`Connection: close`, HTTP/1.0), a response was
    /// cut short or over-long; such a connection is never returned to the idle list.
    var reusable: Bool {
        get { self.handler.reusable }
        set { self.handler.reusable = newValue }
    }

    /// Writes a request head; its body follows with `sendBody` (chunk-framed when
    /// `chunkedBody`) and ends with `sendEnd`. `upgrade`: the request asks for a protocol
    /// upgrade, so a 101 may answer it (and the connection then becomes a tunnel).
    func sendHead(_ head: UpstreamRequestHead, chunkedBody: Bool, upgrade: Bool, secrets: RequestSecrets) {
        self.chunkedRequestBody = chunkedBody
        self.handler.expectResponse(to: head.method, upgrade: upgrade)
        // Whatever the answer, a connection that was asked to switch protocols is not trusted
        // with another request (a backend may be half-way into the new protocol).
        if upgrade { self.reusable = false }
        let length = head.estimatedBytes
        var buffer: ByteBuffer
        if var spare = self.spareHead.take() {
            spare.clear(minimumCapacity: length)
            buffer = spare
        } else {
            buffer = self.channel.allocator.buffer(capacity: length)
        }
        HTTPWriter.requestHead(head, estimatedBytes: length, into: &buffer)
        self.handler.write(buffer)
        if buffer.capacity <= Self.keptHeadBytes { self.spareHead = buffer }
    }

    func sendBody(_ part: ByteBuffer) {
        guard part.readableBytes > 0 else { return }
        self.handler.write(self.chunkedRequestBody ? HTTPWriter.chunk(part, allocator: self.channel.allocator) : part)
    }

    /// Ends the request body; true when that wrote bytes (the last chunk).
    @discardableResult
    func sendEnd(trailers: HPACKHeaders?) -> Bool {
        guard self.chunkedRequestBody else { return false }
        self.chunkedRequestBody = false
        self.handler.write(self.channel.allocator.buffer(staticString: HTTPWriter.lastChunk))
        return true
    }

    func flush() {
        self.handler.flush()
    }

    func close() {
        self.reusable = false
        self.handler.delegate = nil
        self.channel.close(promise: nil)
    }

    func resumeReading() {
        self.handler.resumeReading()
    }

    func timedOut() {
        self.handler.onOutcome?(.timedOut)
        self.close()
    }

    func release(reusable: Bool) {
        guard reusable, let pool = self.pool else {
            self.close()
            return
        }
        pool.release(self)
    }

    func returnUnused(reused: Bool) {
        guard let pool = self.pool else {
            self.close()
            return
        }
        pool.returnUnused(self, reused: reused)
    }

    /// The same connection (pools compare by identity).
    static func == (lhs: UpstreamConnection, rhs: UpstreamConnection) -> Bool { lhs === rhs }
}

@available(*, unavailable)
extension UpstreamConnection: Sendable {}

/// The only handler of an upstream pipeline (after TLS): writes request bytes, parses
/// responses (`ResponseParser`) and hands their parts to the current delegate, withholds reads
/// while the delegate cannot keep up, reports closure.
final class UpstreamHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The lease holder, nil while idle in the pool. Strong: the pool (`release`,
    /// `returnUnused`), `UpstreamConnection.close` and the channel's closing clear it. (A weak
    /// reference would give every `HTTP1ServerConnection` a side table, making each of its many
    /// retains and releases take the slow path: measured.)
    var delegate: UpstreamConnectionDelegate?
    /// Called once when the channel goes inactive (the pool forgets the connection).
    var onClose: (() -> Void)?
    /// Told how each exchange went, for outlier detection (`TargetAvailability`).
    var onOutcome: ((UpstreamOutcome) -> Void)?
    var reusable = true
    private var context: ChannelHandlerContext?
    private var parser = ResponseParser()
    /// Received bytes not parsed yet (a partial head or chunk-size line); nil when none, so
    /// the channel's receive buffer can be reused for the next read.
    private var unparsed: ByteBuffer?
    private var pendingRead = false
    private var closed = false

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func expectResponse(to method: HTTPMethod, upgrade: Bool) {
        self.parser.expectResponse(to: method, upgrade: upgrade)
    }

    func write(_ buffer: ByteBuffer) {
        self.context?.write(self.wrapOutboundOut(buffer), promise: nil)
    }

    func flush() {
        self.context?.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = self.unwrapInboundIn(data)
        if var unparsed = self.unparsed {
            self.unparsed = nil
            unparsed.writeBuffer(&bytes)
            bytes = unparsed
        }
        while let event = self.parser.next(&bytes) {
            switch event {
            case .head(let head):
                if !head.keepAlive { self.reusable = false }
                if head.status >= 200 { self.onOutcome?(.responded(head.status)) }
                self.delegate?.upstreamResponseHead(.http1(head))
            case .body(let part):
                self.delegate?.upstreamResponseBody(part)
            case .end:
                // Bytes beyond the response: the backend does not frame as it says.
                if bytes.readableBytes > 0 { self.reusable = false }
                self.delegate?.upstreamResponseEnd()
            case .error:
                // Not HTTP as agreed (including bytes on an idle connection): never let them
                // be mistaken for the next response.
                self.reusable = false
                self.reportClosed(protocolError: true)
                context.close(promise: nil)
                return
            }
        }
        if bytes.readableBytes > 0 { self.unparsed = bytes }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.delegate?.upstreamReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.delegate?.upstreamWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .end = self.parser.connectionClosed() {
            // The end of a body delimited by the connection's close.
            self.reusable = false
            self.delegate?.upstreamResponseEnd()
        }
        self.reportClosed(protocolError: false)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        self.reportClosed(protocolError: false)
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
        self.reusable = false
        let delegate = self.delegate
        self.delegate = nil
        // Closed under an exchange (not by the gateway, which clears the delegate first): a reset.
        if delegate != nil { self.onOutcome?(.reset) }
        self.onOutcome = nil
        delegate?.upstreamClosed(protocolError: protocolError)
        let onClose = self.onClose
        self.onClose = nil
        onClose?()
    }
}

@available(*, unavailable)
extension UpstreamHandler: Sendable {}
