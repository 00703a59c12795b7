import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 stream of a client connection: one request, fed through the same phases as an
/// HTTP/1.1 request — `RequestPlanner` (route, authenticate, refresh, profile, requirements,
/// rewrite), the loop's `UpstreamPool` lease, `ExchangeStateMachine` for the request's life and
/// `Exchange.finish` for metrics and the access log. Only the framing differs: frames in and
/// out, through the connection's `HTTP2ServerConnection` (which owns the stream table, the
/// timer, flow control and flushing).
///
/// Not a channel: a stream is an entry in its connection's table, on the connection's event
/// loop. Backpressure both ways by HTTP/2 flow control: no WINDOW_UPDATE goes out while the
/// backend cannot take more of the upload (`InboundWindow`), and the backend is not read while
/// the client's window for the stream keeps its response backed up (`OutboundBacklog`).
final class HTTP2ServerStream: ExchangeHandler {
    let id: HTTP2StreamID
    unowned let server: HTTP2ServerConnection
    let environment: any ExchangeEnvironment
    let connection: ClientConnectionInfo
    /// A stream carries exactly one request, so it drives the request's protocol-neutral
    /// state machine directly (no keep-alive, pipelining, 100-continue or tunnel: those are
    /// HTTP/1.1's, `HTTP1ConnectionStateMachine`). Replaced when the request head arrives.
    var state: ExchangeStateMachine
    var exchange: Exchange?
    var upstream: UpstreamLease?
    var leasingPool: UpstreamPool?
    /// When the stream's current wait (a stalled upload, the backend) runs out.
    var deadline: NIODeadline?
    var inboundWindow: InboundWindow
    var backlog = OutboundBacklog()
    /// What the state machine was last told about the client's writability.
    var reportedWritable = true
    /// Between a client read and the end of its burst: upstream writes are flushed then.
    var upstreamFlushPending = false
    /// NIOHTTP2 closed the stream (both ends done, or reset): nothing more can be written.
    var isClosed = false
    /// The request is gRPC: the gateway's own answers are Trailers-Only.
    var isGRPC = false
    /// `grpc-timeout`, when it is shorter than the backend's response timeout.
    var grpcTimeout: TimeAmount?
    /// The response HEADERS, held until the first DATA or the end (which then carries
    /// END_STREAM on the HEADERS frame itself).
    var responseHeaders: HPACKHeaders?
    /// The response's latest DATA, held until the next part, the end of the backend's read
    /// burst, or the end of the response, which then rides on it as END_STREAM (a body read in
    /// one go is one DATA frame, not that and an empty one to end the stream).
    var heldBody: ByteBuffer?
    /// Trailers from an HTTP/2 backend, sent with the end of the response.
    var responseTrailers: HPACKHeaders?
    var requestHeadSeen = false
    /// The client's request trailers, for an HTTP/2 backend.
    var requestTrailers: HPACKHeaders?
    /// The client's END_STREAM arrived (or the stream was refused before it did).
    var requestEnded = false
    /// The request's `content-length`: the DATA must add up to it exactly, or the stream is
    /// refused before an HTTP/1.1 backend could read the excess as another request (NIOHTTP2
    /// checks this too; this keeps the guarantee local).
    var declaredLength: Int?
    var receivedLength = 0

    init(
        id: HTTP2StreamID, server: HTTP2ServerConnection, environment: any ExchangeEnvironment,
        connection: ClientConnectionInfo, windowSize: Int
    ) {
        self.id = id
        self.server = server
        self.environment = environment
        self.connection = connection
        self.state = ExchangeStateMachine(
            replayable: false, hasBody: false,
            maxBodyBytes: environment.snapshot.configuration.limits.maxRequestBodyBytes)
        self.inboundWindow = InboundWindow(target: windowSize)
    }

    /// The connection's context while the stream can still be written to.
    var context: ChannelHandlerContext? {
        self.isClosed ? nil : self.server.context
    }

    // MARK: Frames from the client

    func received(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext) {
        switch payload {
        case .headers(let headers):
            if !self.requestHeadSeen {
                self.requestHeadSeen = true
                if headers.endStream { self.requestEnded = true }
                self.receivedHead(headers.headers, endStream: headers.endStream, context: context)
                // A request without body ends with its HEADERS.
                if headers.endStream { self.run(self.state.requestEnd(), context: context) }
            } else if headers.endStream {
                // Request trailers: passed on to an HTTP/2 backend (SPEC §4.9); HTTP/1.1
                // backends get none. The body ends here, and must add up to content-length.
                self.requestEnded = true
                if let declared = self.declaredLength, self.receivedLength != declared {
                    self.run(
                        self.state.protocolError(.malformedRequest("The DATA disagrees with content-length")),
                        context: context)
                    return
                }
                if !headers.headers.isEmpty { self.requestTrailers = headers.headers }
                self.run(self.state.requestEnd(), context: context)
            }
        case .data(let data):
            self.receivedData(data, context: context)
        case .rstStream:
            self.run(self.state.clientClosed(), context: context)
        default:
            break
        }
        self.updateTimer(context: context)
    }

    private func receivedData(_ data: HTTP2Frame.FramePayload.Data, context: ChannelHandlerContext) {
        guard case .byteBuffer(let bytes) = data.data else { return }
        self.receivedLength += bytes.readableBytes
        if let declared = self.declaredLength,
            self.receivedLength > declared || (data.endStream && self.receivedLength != declared)
        {
            self.run(
                self.state.protocolError(.malformedRequest("The DATA disagrees with content-length")), context: context)
            return
        }
        if bytes.readableBytes > 0 {
            self.exchange?.bytesIn += bytes.readableBytes
            self.run(self.state.requestBody(bytes), context: context)
        }
        if data.endStream {
            self.requestEnded = true
            self.run(self.state.requestEnd(), context: context)
        } else {
            // The window is given back as the body is taken (withheld while it cannot be).
            if !self.state.shouldReadFromClient { self.inboundWindow.withhold() }
            if let increment = self.inboundWindow.received(bytes.readableBytes + (data.paddingBytes ?? 0)) {
                self.write(.windowUpdate(windowSizeIncrement: increment))
            }
        }
    }

    /// NIOHTTP2 closed the stream: both sides ended, or a reset either way.
    func closed(context: ChannelHandlerContext) {
        guard !self.isClosed else { return }
        self.isClosed = true
        self.deadline = nil
        self.run(self.state.clientClosed(), context: context)
    }

    /// The client's window for this stream, or the connection, changed writability.
    func writabilityChanged(connectionWritable: Bool, context: ChannelHandlerContext) {
        let writable = connectionWritable && self.backlog.isWritable
        guard writable != self.reportedWritable else { return }
        self.reportedWritable = writable
        self.run(self.state.clientWritabilityChanged(writable), context: context)
    }

    // MARK: Writing

    /// Writes a frame of this stream (flushed with the connection's next flush).
    func write(_ payload: HTTP2Frame.FramePayload) {
        guard !self.isClosed else { return }
        if case .data(let data) = payload, case .byteBuffer(let bytes) = data.data,
            self.backlog.wrote(bytes.readableBytes)
        {
            self.writabilityChanged(connectionWritable: self.server.isWritable, context: self.server.context!)
        }
        self.server.write(HTTP2Frame(streamID: self.id, payload: payload))
    }

    /// Ends the stream now (RST_STREAM `CANCEL`) unless it has ended: what closing an
    /// HTTP/1.1 connection is to a stream.
    func reset(_ code: HTTP2ErrorCode = .cancel) {
        guard !self.isClosed else { return }
        self.server.write(HTTP2Frame(streamID: self.id, payload: .rstStream(code)))
        self.server.flushSoon()
    }

    // MARK: Running actions

    func run(_ action: ExchangeStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none, .writeResponseHead:
            // The head is held in `responseHeaders`.
            break
        case .lease:
            self.lease(context: context)
        case .sendRequest(let body, let end):
            self.sendRequest(body: body, end: end, context: context)
        case .forwardBody(let part):
            self.upstream?.sendBody(part)
            self.server.upstreamWritten(by: self)
        case .forwardEnd:
            if let upstream = self.upstream, self.endUpstreamRequest(upstream) { self.server.upstreamWritten(by: self) }
        case .writeResponseBody(let part):
            self.exchange?.bytesOut += part.readableBytes
            self.writeHeldHeaders(endStream: false)
            self.writeHeldBody(endStream: false)
            self.heldBody = part
        case .finishResponse(let reuseUpstream):
            self.releaseUpstream(reusable: reuseUpstream)
            self.endResponse()
        case .finishResponseOnly:
            self.endResponse()
        case .forwardEndAndRelease(let reuseUpstream):
            if let upstream = self.upstream {
                self.endUpstreamRequest(upstream)
                upstream.flush()
            }
            self.releaseUpstream(reusable: reuseUpstream)
        case .writeLocalResponse:
            self.writeLocalResponse()
        case .respondWithError(let error):
            self.cancelLease()
            self.respond(with: error)
        case .failForwarding(let error):
            self.dropUpstream(after: error)
            if let error {
                self.respond(with: error)
            } else {
                // The response had started: the stream is reset.
                self.finishExchange(status: self.exchange?.responseStatus ?? 502, error: nil)
                self.reset()
            }
        case .retry:
            self.retryOnAnotherUpstream(context: context)
        case .abandon:
            self.abandonExchange()
            self.reset()
        case .resumeClientReads:
            if let increment = self.inboundWindow.resume() {
                self.write(.windowUpdate(windowSizeIncrement: increment))
                self.server.flushSoon()
            }
        case .resumeUpstreamReads:
            self.upstream?.resumeReading()
        }
    }

    // MARK: Timer

    private var timeoutLimits: (idle: TimeAmount, response: TimeAmount) {
        var response = self.exchange?.plan?.responseTimeout ?? .seconds(30)
        if let grpcTimeout = self.grpcTimeout, grpcTimeout < response { response = grpcTimeout }
        return (self.environment.snapshot.idleTimeout, response)
    }

    /// The state may have changed: the stream's deadline follows `ExchangeStateMachine.timeout`
    /// (a stream is never idle between requests: only its request's own waits are timed).
    func updateTimer(context: ChannelHandlerContext) {
        guard !self.state.isDone, !self.isClosed else {
            self.deadline = nil
            return
        }
        let limits = self.timeoutLimits
        switch self.state.timeout {
        case .none: self.deadline = nil
        case .idle: self.deadline = context.eventLoop.now + limits.idle
        case .response: self.deadline = context.eventLoop.now + limits.response
        }
        if let deadline = self.deadline { self.server.streamDeadlineSet(deadline) }
    }

    /// The connection's timer found this stream's deadline passed.
    func timedOut(context: ChannelHandlerContext) {
        self.deadline = nil
        self.run(self.state.timedOut(), context: context)
        self.updateTimer(context: context)
    }
}

@available(*, unavailable)
extension HTTP2ServerStream: Sendable {}
