import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One exchange on a stream of a pooled HTTP/2 connection (`UpstreamLease`): the request's
/// HTTP/1.1-shaped head becomes HEADERS (`:method`, `:scheme`, `:authority` from `Host`,
/// `:path`, the rest lower-cased without connection-specific fields), its body DATA; what the
/// backend sends goes to the delegate, trailers included. The stream's slot in the pool is
/// freed when the stream closes.
final class UpstreamStream: UpstreamLease {
    let connection: UpstreamHTTP2Connection
    let handler: UpstreamStreamHandler

    init(connection: UpstreamHTTP2Connection, handler: UpstreamStreamHandler) {
        self.connection = connection
        self.handler = handler
    }

    var delegate: UpstreamConnectionDelegate? {
        get { self.handler.delegate }
        set { self.handler.delegate = newValue }
    }

    /// A stream is used once; its connection stays usable while it is open (after a GOAWAY
    /// the pool stops opening streams on it: `UpstreamHTTP2ConnectionHandler.onGoAway`).
    var reusable: Bool { self.connection.channel.isActive }

    func sendHead(_ head: UpstreamRequestHead, chunkedBody: Bool, upgrade: Bool, secrets: RequestSecrets) {
        self.handler.sendHead(head.httpRequestHead, secrets: secrets)
    }

    func sendBody(_ part: ByteBuffer) {
        self.handler.sendBody(part)
    }

    @discardableResult
    func sendEnd(trailers: HPACKHeaders?) -> Bool {
        self.handler.sendEnd(trailers: trailers)
        return true
    }

    func flush() {
        self.handler.flush()
    }

    func timedOut() {
        self.handler.onOutcome?(.timedOut)
        self.close()
    }

    /// Resets the stream (RST_STREAM CANCEL).
    func close() {
        self.handler.delegate = nil
        self.handler.reset()
    }

    func resumeReading() {
        self.handler.resumeReading()
    }

    /// The exchange is over; the stream closes itself once both sides ended it.
    func release(reusable: Bool) {
        self.handler.delegate = nil
        if !reusable { self.handler.reset() }
    }

    func returnUnused(reused: Bool) {
        self.close()
    }
}

@available(*, unavailable)
extension UpstreamStream: Sendable {}

/// The handler of an upstream stream's child channel: frames out for the request, frames in
/// for the response. Reads are withheld while the delegate cannot take more (flow control
/// then stops the backend).
final class UpstreamStreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    var delegate: UpstreamConnectionDelegate?
    /// Called once when the stream closes: its slot goes back to the pool.
    var onClose: (() -> Void)?
    /// Told how the exchange went, for outlier detection (`TargetAvailability`).
    var onOutcome: ((UpstreamOutcome) -> Void)?
    private let scheme: String
    private var context: ChannelHandlerContext?
    /// The request HEADERS, held until the body's first part or its end (which then rides on
    /// the HEADERS frame as END_STREAM).
    private var pendingHeaders: HPACKHeaders?
    private var method: HTTPMethod = .GET
    private var responseStarted = false
    private var ended = false
    /// The stream closed (the connection went away, or the peer reset it).
    private var closed = false
    private var pendingRead = false

    private let eventLoop: EventLoop

    init(scheme: String, eventLoop: EventLoop) {
        self.scheme = scheme
        self.eventLoop = eventLoop
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Request

    func sendHead(_ head: HTTPRequestHead, secrets: RequestSecrets) {
        self.method = head.method
        self.pendingHeaders = Self.requestHeaders(head, scheme: self.scheme, secrets: secrets)
        if self.closed, let delegate = self.delegate {
            // The stream died between its lease and its use: say so once the caller's
            // current step is over, as a closed connection would.
            self.delegate = nil
            self.ended = true
            self.eventLoop.assumeIsolated().execute { delegate.upstreamClosed(protocolError: false) }
        }
    }

    func sendBody(_ part: ByteBuffer) {
        guard let context = self.context, part.readableBytes > 0 else { return }
        self.writePendingHeaders(endStream: false, context: context)
        context.write(self.wrapOutboundOut(.data(.init(data: .byteBuffer(part)))), promise: nil)
    }

    /// Ends the request: END_STREAM on the client's trailers when there are any, else on the
    /// held HEADERS or an empty DATA frame.
    func sendEnd(trailers: HPACKHeaders?) {
        guard let context = self.context else { return }
        if let trailers {
            self.writePendingHeaders(endStream: false, context: context)
            context.write(self.wrapOutboundOut(.headers(.init(headers: trailers, endStream: true))), promise: nil)
        } else if self.pendingHeaders != nil {
            self.writePendingHeaders(endStream: true, context: context)
        } else {
            context.write(
                self.wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))), promise: nil)
        }
    }

    func flush() {
        guard let context = self.context else { return }
        self.writePendingHeaders(endStream: false, context: context)
        context.flush()
    }

    func reset() {
        self.context?.close(promise: nil)
    }

    func resumeReading() {
        guard self.pendingRead, let context = self.context else { return }
        self.pendingRead = false
        context.read()
    }

    private func writePendingHeaders(endStream: Bool, context: ChannelHandlerContext) {
        guard let headers = self.pendingHeaders else { return }
        self.pendingHeaders = nil
        context.write(self.wrapOutboundOut(.headers(.init(headers: headers, endStream: endStream))), promise: nil)
    }

    /// RFC 9113 §8.3.1: pseudo-headers first; `:authority` from `Host`; connection-specific
    /// fields dropped; `te: trailers` for gRPC (its servers require it); secrets never-indexed
    /// (RFC 7541 §7.1.3: this connection carries other users' requests too).
    static func requestHeaders(
        _ head: HTTPRequestHead, scheme: String, secrets: RequestSecrets = RequestSecrets()
    ) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(head.headers.count + 4)
        headers.add(name: ":method", value: head.method.rawValue)
        headers.add(name: ":scheme", value: scheme)
        if let host = head.headers.first(name: "host") { headers.add(name: ":authority", value: host) }
        headers.add(name: ":path", value: head.uri)
        for (name, value) in head.headers {
            let lowered = name.lowercased()
            guard lowered != "host", !HTTP2Fields.connectionSpecific.contains(lowered) else { continue }
            headers.add(
                name: lowered, value: value,
                indexing: secrets.names.indexing(lowered, peerNeverIndexed: secrets.peerNeverIndexed))
        }
        if HTTP2Fields.isGRPC(contentType: head.headers.first(name: "content-type")) {
            headers.add(name: "te", value: "trailers")
        }
        return headers
    }

    // MARK: Response

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .headers(let headers):
            if !self.responseStarted {
                guard let status = headers.headers.first(name: ":status").flatMap(Int.init) else {
                    self.fail(protocolError: true, context: context)
                    return
                }
                // Interim responses (100, 103) are not forwarded.
                if status < 200 && !headers.endStream { return }
                guard let head = HTTP2ResponseHead(headers.headers, method: self.method) else {
                    self.fail(protocolError: true, context: context)
                    return
                }
                self.responseStarted = true
                self.onOutcome?(.responded(status))
                self.delegate?.upstreamResponseHead(.http2(head))
            } else {
                self.delegate?.upstreamResponseTrailers(headers.headers)
            }
            if headers.endStream { self.end() }
        case .data(let data):
            guard self.responseStarted else {
                self.fail(protocolError: true, context: context)
                return
            }
            if case .byteBuffer(let bytes) = data.data, bytes.readableBytes > 0 {
                self.delegate?.upstreamResponseBody(bytes)
            }
            if data.endStream { self.end() }
        case .rstStream:
            self.fail(protocolError: false, context: context)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.delegate?.upstreamReadComplete()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.delegate?.upstreamWritabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.closed = true
        if !self.ended { self.fail(protocolError: false, context: context) }
        let onClose = self.onClose
        self.onClose = nil
        onClose?()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        self.fail(protocolError: true, context: context)
        context.close(promise: nil)
    }

    func read(context: ChannelHandlerContext) {
        if self.delegate?.shouldReadFromUpstream ?? true {
            context.read()
        } else {
            self.pendingRead = true
        }
    }

    private func end() {
        guard !self.ended else { return }
        self.ended = true
        let delegate = self.delegate
        delegate?.upstreamResponseEnd()
    }

    private func fail(protocolError: Bool, context: ChannelHandlerContext) {
        guard !self.ended else { return }
        self.ended = true
        let delegate = self.delegate
        self.delegate = nil
        // Under an exchange (the gateway's own reset clears the delegate first): a reset.
        if delegate != nil { self.onOutcome?(.reset) }
        delegate?.upstreamClosed(protocolError: protocolError)
    }
}

@available(*, unavailable)
extension UpstreamStreamHandler: Sendable {}
