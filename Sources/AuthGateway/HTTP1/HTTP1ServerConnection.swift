import NIOCore
import NIOHTTP1

/// One client connection's requests over HTTP/1.1: parses them (`RequestParser`), feeds
/// `HTTP1ConnectionStateMachine` with their events and the upstream's, and runs the actions it
/// returns (docs/architecture.md: one place runs actions). It is the connection's only handler
/// (after TLS): bytes in, bytes out. The decisions live in pure types —
/// `HTTP1ConnectionStateMachine` (keep-alive, pipelining holds, 100-continue, drain, tunnel,
/// around the request's protocol-neutral `ExchangeStateMachine`), `ConnectionDeadlines` (timeouts),
/// `ClientResponseFraming` (chunking and closing) — and the request's path is the
/// protocol-independent `RequestPlanner` → `RequestAuthenticator` → `UpstreamPool` lease.
///
/// Files: this one (connection events, parsing, running actions), `+Request` (a head's
/// decision, the upstream request), `+Upstream` (what the backend sends), `+Response` (what the
/// client gets), `+Timers`; what it shares with `HTTP2ServerStream` (deciding, the lease, the
/// backend's events, the finish) is `ExchangeHandler`.
///
/// Everything happens on the connection's event loop. Bodies are relayed without buffering:
/// reads are withheld from one side while the other cannot take more (`read(context:)`), and
/// resumed on writability changes.
final class HTTP1ServerConnection: ChannelDuplexHandler, ExchangeHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let environment: any ExchangeEnvironment
    let connection: ClientConnectionInfo
    var state: HTTP1ConnectionStateMachine
    var deadlines = ConnectionDeadlines()
    var context: ChannelHandlerContext?
    var exchange: Exchange?
    // The HTTP/1.1 framing of the exchange in flight (set with each new exchange): HTTP/1.1's
    // only, so it lives here and not in the protocol-neutral `Exchange`.
    /// The request's HTTP/1.x version.
    var requestVersion: HTTPVersion = .http1_1
    /// The client asked to keep the connection after this request.
    var requestKeepAlive = false
    /// The response head to the client, ready to write: held until the first body part, the
    /// end, or the end of the backend's read burst, so a small response leaves in one write.
    var heldResponseHead: ByteBuffer?
    /// The last response head's buffer, for the next head (`responseHeadBuffer`).
    var spareResponseHead: ByteBuffer?
    /// The response body goes to the client chunk-framed.
    var responseChunked = false
    /// The client connection closes after this response (`ClientResponseFraming`).
    var closeAfterResponse = false
    var upstream: UpstreamLease?
    /// The pool a lease is pending with.
    var leasingPool: UpstreamPool?
    var pendingRead = false
    var parser: RequestParser
    /// Received bytes not parsed yet: a partial head or body part, or a pipelined request that
    /// waits until the response in flight has ended (RFC 9112 §9.3.2). Nil when none, so the
    /// channel's receive buffer can be reused for the next read.
    var unparsed: ByteBuffer?
    private var parsing = false
    var upstreamNeedsFlush = false
    /// Between a client read and its read-complete, which flushes what was written upstream.
    var inClientReadBurst = false
    var timer: Scheduled<Void>?
    /// The exchange is a long-lived stream in the loop's registry (docs/streams.md).
    var streamOpen = false
    /// The tunnel's frames each way, and its end (docs/streams.md).
    var tunnelClose = WebSocketTunnelClose()
    var tunnelCloseReason = StreamCloseReason.expiry
    /// The client's close frame, written.
    var tunnelCloseWritten: EventLoopFuture<Void>?

    init(environment: any ExchangeEnvironment, connection: ClientConnectionInfo) {
        self.environment = environment
        self.connection = connection
        let limits = environment.snapshot.configuration.limits
        self.state = HTTP1ConnectionStateMachine(maxBodyBytes: limits.maxRequestBodyBytes)
        self.parser = RequestParser(maxHeaderBytes: limits.maxHeaderBytes, maxBodyBytes: limits.maxRequestBodyBytes)
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { self.updateTimer(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        self.updateTimer(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = self.unwrapInboundIn(data)
        self.inClientReadBurst = true
        if self.state.isIdle { self.deadlines.headBytesArrived(now: .now(), limits: self.timeoutLimits) }
        if var unparsed = self.unparsed {
            self.unparsed = nil
            unparsed.writeBuffer(&bytes)
            bytes = unparsed
        }
        if self.state.isTunnel {
            self.exchange?.bytesIn += bytes.readableBytes
            self.relayFromClient(bytes, context: context)
            self.updateTimer(context: context)
            return
        }
        self.unparsed = bytes
        self.parseRequests(context: context)
    }

    /// Feeds the parsed events of the received bytes to the state machine, stopping before a
    /// pipelined head while a request is in flight. Re-entered (from a response finished
    /// synchronously) it returns at once: the outer call goes on.
    func parseRequests(context: ChannelHandlerContext) {
        guard !self.parsing else { return }
        self.parsing = true
        defer { self.parsing = false }
        while !self.state.isClosed && !self.state.isTunnel {
            // Between requests: parse the next head only when idle and bytes are here. Within a
            // request, the parser may have an event without new bytes (the end of a bodiless
            // request).
            if self.parser.isAtMessageStart && (!self.state.isIdle || self.unparsed == nil) { break }
            var bytes = self.unparsed ?? ByteBuffer()
            self.unparsed = nil
            let event = self.parser.next(&bytes)
            if bytes.readableBytes > 0 { self.unparsed = bytes }
            guard let event else { break }
            self.handle(event, context: context)
        }
        if self.state.isClosed { self.unparsed = nil }
        self.updateTimer(context: context)
    }

    /// A pipelined request is here and waits for the response in flight.
    var holdingPipelinedRequest: Bool {
        self.unparsed != nil && self.parser.isAtMessageStart && !self.state.isIdle
    }

    private func handle(_ event: RequestParser.Event, context: ChannelHandlerContext) {
        switch event {
        case .head(let head, let framing):
            self.deadlines.headCompleted()
            self.receivedHead(head, framing: framing, context: context)
        case .body(let body):
            self.exchange?.bytesIn += body.readableBytes
            self.run(self.state.requestBody(body), context: context)
        case .end:
            self.run(self.state.requestEnd(), context: context)
        case .error(let error):
            if self.exchange == nil, !self.state.isClosed { self.exchange = self.bareExchange() }
            self.run(self.state.protocolError(error), context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.inClientReadBurst = false
        if self.upstreamNeedsFlush {
            self.upstreamNeedsFlush = false
            self.upstream?.flush()
        }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = nil
        self.deadlines.close()
        self.unparsed = nil
        self.spareResponseHead = nil
        self.run(self.state.clientClosed(), context: context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Connection reset, TLS failures and the like: nothing to answer.
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.run(self.state.clientWritabilityChanged(context.channel.isWritable), context: context)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            self.run(self.state.quiesce(partialRequest: self.unparsed != nil), context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Backpressure towards the client: hold reads while the state machine says so.
    func read(context: ChannelHandlerContext) {
        if self.state.mayReadFromClient(holdingPipelinedRequest: self.holdingPipelinedRequest) {
            context.read()
        } else {
            self.pendingRead = true
        }
    }

    /// The response of a request has been written and the connection stays open: parse the
    /// pipelined requests that waited, then read on.
    func requestFinished(context: ChannelHandlerContext) {
        self.parseRequests(context: context)
        if self.state.isIdle, self.unparsed != nil {
            // Part of the next head is here already: its clock runs.
            self.deadlines.headBytesArrived(now: .now(), limits: self.timeoutLimits)
        }
        self.run(.exchange(.resumeClientReads), context: context)
    }

    // MARK: Running actions

    func run(_ action: HTTP1ConnectionStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .decide:
            // Only `receivedHead` decides; reaching here means a state machine bug.
            assertionFailure("decide outside receivedHead")
        case .exchange(let action):
            self.runExchange(action, close: false, context: context)
        case .endExchange(let action, let close):
            self.runExchange(action, close: close, context: context)
        case .sendContinueAndRequest(let body, let end):
            context.writeAndFlush(
                self.wrapOutboundOut(context.channel.allocator.buffer(staticString: HTTPWriter.continueResponse)),
                promise: nil)
            self.sendRequest(body: body, end: end, context: context)
        case .closeConnection:
            context.close(promise: nil)
        case .closeTunnel:
            self.closeTunnel(context: context)
        }
    }

    /// Runs an exchange's action; `close`: after an action that ends the exchange, whether
    /// the connection closes (else the next request is read).
    private func runExchange(_ action: ExchangeStateMachine.Action, close: Bool, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .lease:
            self.lease(context: context)
        case .sendRequest(let body, let end):
            self.sendRequest(body: body, end: end, context: context)
        case .forwardBody(let part):
            self.upstream?.sendBody(part)
            self.upstreamNeedsFlush = true
        case .forwardEnd:
            // A fixed-length body ends without a byte of its own: only body parts not yet
            // flushed need a flush then (the head went out flushed).
            if self.upstream?.sendEnd() == true || self.upstreamNeedsFlush { self.upstream?.flush() }
            self.upstreamNeedsFlush = false
        case .writeResponseHead:
            // Held in `heldResponseHead` until the first body part, the end or the end of the
            // read burst: a small response then leaves in one write.
            break
        case .writeResponseBody(let part):
            self.exchange?.bytesOut += part.readableBytes
            let framed =
                self.exchange != nil && self.responseChunked
                ? HTTPWriter.chunk(part, allocator: context.channel.allocator) : part
            self.writeResponse(framed, context: context)
        case .finishResponse(let reuseUpstream):
            self.finishResponse(reuseUpstream: reuseUpstream, closeClient: close, context: context)
        case .finishResponseOnly:
            let tail = self.takeResponseTail(context: context)
            self.finishExchange(status: self.exchange?.responseStatus ?? 0, error: nil)
            self.flushResponse(tail, close: false, context: context)
        case .forwardEndAndRelease(let reuseUpstream):
            if let upstream = self.upstream {
                self.upstream = nil
                upstream.sendEnd()
                upstream.flush()
                self.upstreamNeedsFlush = false
                upstream.release(reusable: reuseUpstream)
            }
            if close {
                context.close(promise: nil)
            } else {
                self.requestFinished(context: context)
            }
        case .writeLocalResponse:
            self.writeLocalResponse(close: close, context: context)
        case .respondWithError(let error):
            self.cancelLease()
            let exchange = self.exchange ?? self.bareExchange()
            exchange.local = exchange.problem(error)
            self.exchange = exchange
            self.writeLocalResponse(close: close, context: context)
        case .failForwarding(let error):
            // The connection closes: its response was cut short, or this answer is its last.
            self.dropUpstream(after: error)
            if let error {
                let exchange = self.exchange ?? self.bareExchange()
                exchange.local = exchange.problem(error)
                self.exchange = exchange
                self.writeLocalResponse(close: true, context: context)
            } else {
                self.finishExchange(status: self.exchange?.responseStatus ?? 502, error: nil)
                context.close(promise: nil)
            }
        case .retry:
            self.retryOnAnotherUpstream(context: context)
        case .abandon:
            self.abandonExchange()
            context.close(promise: nil)
        case .resumeClientReads:
            if self.pendingRead, !self.holdingPipelinedRequest {
                self.pendingRead = false
                context.read()
            }
        case .resumeUpstreamReads:
            self.upstream?.resumeReading()
        }
    }

    /// An exchange for input that never became a request head (parse error, slow headers).
    func bareExchange() -> Exchange {
        self.startFraming(version: .http1_1, keepAlive: false)
        return Exchange.bare(requestID: self.environment.requestID(forwarded: nil))
    }

    /// A new exchange starts: its request's version and keep-alive, nothing of its response yet.
    func startFraming(version: HTTPVersion, keepAlive: Bool) {
        self.requestVersion = version
        self.requestKeepAlive = keepAlive
        self.heldResponseHead = nil
        self.responseChunked = false
        self.closeAfterResponse = false
    }
}

@available(*, unavailable)
extension HTTP1ServerConnection: Sendable {}
