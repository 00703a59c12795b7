import NIOCore
import NIOHPACK
import NIOHTTP2

/// One HTTP/2 stream of a client connection: one request, fed through the same phases as an
/// HTTP/1.1 request — `RequestPlanner` (route, authenticate, refresh, profile, requirements,
/// rewrite), the loop's `UpstreamPool` lease, `ExchangeStateMachine` for the request's life and
/// `Exchange.finish` for metrics and the access log. Only the framing differs: frames in and
/// out, through the connection's `HTTP2ServerConnection` (which owns the stream table, the
/// timer, flow control and flushing). The stream's framing — its request and response halves,
/// `content-length`, the frames held back, the upload stopped early — is decided by its pure
/// `HTTP2StreamStateMachine`, around the request's `ExchangeStateMachine`; this class runs the
/// actions it returns (`run`, one place) and does the I/O.
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
    /// The stream's framing around its one request's exchange (no keep-alive, pipelining,
    /// 100-continue or tunnel: those are HTTP/1.1's, `HTTP1ConnectionStateMachine`).
    var state: HTTP2StreamStateMachine
    var exchange: Exchange?
    var upstream: UpstreamLease?
    var leasingPool: UpstreamPool?
    /// When the stream's current wait (a stalled upload, the backend) runs out, and, while it
    /// is a long-lived stream, its credential (docs/streams.md).
    var deadlines = StreamDeadlines.Stream()
    /// When the connection's timer must look at this stream next.
    var deadline: NIODeadline? { self.deadlines.earliest }
    /// The exchange is a long-lived stream in the loop's registry (docs/streams.md).
    var streamOpen = false
    /// Why the gateway ended it (the gRPC trailers' message).
    var closeReason = StreamCloseReason.expiry
    var inboundWindow: InboundWindow
    var backlog = OutboundBacklog()
    /// Set by the connection: this stream's backend has writes to flush at the end of the
    /// client's read burst (it is in the connection's list once).
    var upstreamFlushPending = false
    /// `grpc-timeout`, when it is shorter than the backend's response timeout.
    var grpcTimeout: TimeAmount?
    /// Names of the request fields the client sent never-indexed, beyond the secret names
    /// (encoded never-indexed anyway): they stay so towards an HTTP/2 backend (RFC 7541 §7.1.3).
    var neverIndexedFields: [String] = []
    /// The client's request trailers, for an HTTP/2 backend.
    var requestTrailers: HPACKHeaders?
    /// The response being ended is to stop the client's upload: its last frame, once written,
    /// is followed by RST_STREAM NO_ERROR (`writeLast`).
    var stopsUploadAfterLastFrame = false

    init(
        id: HTTP2StreamID, server: HTTP2ServerConnection, environment: any ExchangeEnvironment,
        connection: ClientConnectionInfo, windowSize: Int
    ) {
        self.id = id
        self.server = server
        self.environment = environment
        self.connection = connection
        self.state = HTTP2StreamStateMachine(
            maxBodyBytes: environment.snapshot.configuration.limits.maxRequestBodyBytes)
        self.inboundWindow = InboundWindow(target: windowSize)
    }

    /// The connection's context while the stream can still be written to.
    var context: ChannelHandlerContext? {
        self.state.isClosed ? nil : self.server.context
    }

    // MARK: Frames from the client

    func received(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext) {
        switch payload {
        case .headers(let headers):
            if self.state.awaitsRequestHead {
                self.receivedHead(headers.headers, endStream: headers.endStream, context: context)
                // A request without body ends with its HEADERS.
                if headers.endStream { self.run(self.state.requestEnd(), context: context) }
            } else if headers.endStream {
                // Request trailers: passed on to an HTTP/2 backend (docs/http2.md); HTTP/1.1
                // backends get none. The body ends here, and must add up to content-length
                // (if it does not, the request fails and the trailers are never sent).
                if !headers.headers.isEmpty { self.requestTrailers = headers.headers }
                self.run(self.state.requestTrailers(), context: context)
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
        if case .refuse(let action) = self.state.receivedData(length: bytes.readableBytes, endStream: data.endStream) {
            self.run(action, context: context)
            return
        }
        if bytes.readableBytes > 0 {
            self.exchange?.bytesIn += bytes.readableBytes
            self.run(self.state.requestBody(bytes), context: context)
        }
        if data.endStream {
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
        self.deadlines = StreamDeadlines.Stream()
        self.run(self.state.streamClosed(), context: context)
    }

    /// The client's window for this stream, or the connection, changed writability.
    func writabilityChanged(connectionWritable: Bool, context: ChannelHandlerContext) {
        let writable = connectionWritable && self.backlog.isWritable
        self.run(self.state.clientWritabilityChanged(writable), context: context)
    }

    // MARK: Writing

    /// Writes a frame of this stream (flushed with the connection's next flush); `promise`
    /// completes when NIOHTTP2 has written it to the connection.
    func write(_ payload: HTTP2Frame.FramePayload, promise: EventLoopPromise<Void>? = nil) {
        guard !self.state.isClosed else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        if case .data(let data) = payload, case .byteBuffer(let bytes) = data.data,
            self.backlog.wrote(bytes.readableBytes)
        {
            self.writabilityChanged(connectionWritable: self.server.isWritable, context: self.server.context!)
        }
        self.server.write(HTTP2Frame(streamID: self.id, payload: payload), promise: promise)
    }

    /// Ends the stream now (RST_STREAM `CANCEL`) unless it has ended: what closing an
    /// HTTP/1.1 connection is to a stream.
    func reset(_ code: HTTP2ErrorCode = .cancel) {
        guard !self.state.isClosed else { return }
        self.server.write(HTTP2Frame(streamID: self.id, payload: .rstStream(code)))
        self.server.flushSoon()
    }

    // MARK: Running actions

    func run(_ action: consuming HTTP2StreamStateMachine.Action, context: ChannelHandlerContext) {
        switch consume action {
        case .none:
            break
        case .decide:
            // Only `receivedHead` decides; reaching here means a state machine bug.
            assertionFailure("decide outside receivedHead")
        case .exchange(let action):
            self.runExchange(action, context: context)
        case .writeHeld(let frame, let bodyBytes):
            self.exchange?.bytesOut += bodyBytes
            self.writeHeld(frame)
        case .endResponse(let last, let reuseUpstream, let stopUpload):
            if let reuseUpstream { self.releaseUpstream(reusable: reuseUpstream) }
            self.stopsUploadAfterLastFrame = stopUpload
            self.endResponse(last)
            if stopUpload { self.stopUpload() }
        case .endExchange(let action, let stopUpload):
            self.stopsUploadAfterLastFrame = stopUpload
            self.runExchange(action, context: context)
            if stopUpload { self.stopUpload() }
        case .endCall(let held, let trailersOnly, let stopUpload):
            self.endCall(held: held, trailersOnly: trailersOnly, stopUpload: stopUpload)
        }
    }

    /// Runs an exchange's action (its response's body and end come translated, as
    /// `writeHeld` and `endResponse`).
    private func runExchange(_ action: consuming ExchangeStateMachine.Action, context: ChannelHandlerContext) {
        switch consume action {
        case .none, .writeResponseHead:
            // The head is held by the state machine.
            break
        case .writeResponseBody, .finishResponse, .finishResponseOnly:
            assertionFailure("translated by HTTP2StreamStateMachine")
        case .lease:
            self.lease(context: context)
        case .sendRequest(let body, let end):
            self.sendRequest(body: body, end: end, context: context)
        case .forwardBody(let part):
            self.upstream?.sendBody(part)
            self.server.upstreamWritten(by: self)
        case .forwardEnd:
            if let upstream = self.upstream, self.endUpstreamRequest(upstream) { self.server.upstreamWritten(by: self) }
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

    /// The backend's response timeout, or `grpc-timeout` when it is shorter.
    private var responseTimeout: TimeAmount {
        let response = self.exchange?.plan?.responseTimeout ?? .seconds(30)
        guard let grpcTimeout = self.grpcTimeout, grpcTimeout < response else { return response }
        return grpcTimeout
    }

    /// The state may have changed: the stream's deadline follows its state machine's `timeout`
    /// (a stream is never idle between requests: only its request's own waits are timed; a
    /// finished or closed stream has none).
    func updateTimer(context: ChannelHandlerContext) {
        switch self.state.timeout {
        case .none: self.deadlines.state = nil
        case .idle: self.deadlines.state = context.eventLoop.now + self.environment.snapshot.idleTimeout
        case .response: self.deadlines.state = context.eventLoop.now + self.responseTimeout
        }
        if !self.streamOpen { self.deadlines.credential = nil }
        guard let deadline = self.deadlines.earliest else { return }
        self.server.streamDeadlineSet(deadline)
    }

    /// The connection's timer found this stream's deadline passed: its state's timeout, or its
    /// credential's (renewed, or the stream ends).
    func timedOut(context: ChannelHandlerContext) {
        switch self.deadlines.due(now: context.eventLoop.now) {
        case .none:
            return
        case .timedOut:
            self.run(self.state.timedOut(), context: context)
        case .credentialExpired:
            self.deadlines.credential = self.renewOrEndStream()
        }
        self.updateTimer(context: context)
    }
}

@available(*, unavailable)
extension HTTP2ServerStream: Sendable {}
