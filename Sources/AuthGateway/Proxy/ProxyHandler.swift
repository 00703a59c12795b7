import NIOCore
import NIOHTTP1

/// One client connection's requests: parses them (`RequestParser`), feeds `ProxyStateMachine`
/// with their events and the upstream's, and runs the actions it returns (DESIGN.md habit 2:
/// one place runs actions). It is the connection's only handler (after TLS): bytes in, bytes
/// out.
///
/// Everything happens on the connection's event loop: planning (routing, token verification,
/// header rewriting) is synchronous unless the auth service must be asked; the upstream
/// connection comes from this loop's pool. Bodies are relayed without buffering: reads are
/// withheld from one side while the other cannot take more (`read(context:)`), and resumed
/// on writability changes.
final class ProxyHandler: ChannelDuplexHandler, UpstreamLeaseRequester, UpstreamConnectionDelegate {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The request in flight and what has been learned about it. A class: it is updated in
    /// place all through the request (as a struct, each update copied it: measured, ~3 % of
    /// the CPU in retain/release).
    private final class Exchange {
        let requestID: String
        let method: HTTPMethod
        let uri: String
        let version: HTTPVersion
        let keepAlive: Bool
        let start: NIODeadline
        let snapshot: RuntimeSnapshot
        /// The request body is chunked (and goes upstream chunked).
        let requestChunked: Bool
        var plan: ForwardPlan?
        /// The matched route, once known (also for requests answered locally).
        var routeName: String?
        var local: LocalResponse?
        /// The client's response head, ready to write.
        var responseHead: ByteBuffer?
        /// The response body goes to the client chunk-framed.
        var responseChunked = false
        var responseStatus = 0
        var closeAfterResponse = false
        var upstreamSentAt: NIODeadline?
        var bytesIn = 0
        var bytesOut = 0

        init(
            requestID: String, method: HTTPMethod, uri: String, version: HTTPVersion, keepAlive: Bool, start: NIODeadline,
            snapshot: RuntimeSnapshot, requestChunked: Bool
        ) {
            self.requestID = requestID
            self.method = method
            self.uri = uri
            self.version = version
            self.keepAlive = keepAlive
            self.start = start
            self.snapshot = snapshot
            self.requestChunked = requestChunked
        }
    }

    private let worker: Worker
    private let connection: ClientConnectionInfo
    private var state: ProxyStateMachine
    private var context: ChannelHandlerContext?
    private var exchange: Exchange?
    private var upstream: UpstreamConnection?
    /// The pool a lease is pending with.
    private var leasingPool: UpstreamPool?
    private var pendingRead = false
    private var parser: RequestParser
    /// Received bytes not parsed yet: a partial head or body part, or a pipelined request that
    /// waits until the response in flight has ended (RFC 9112 §9.3.2). Nil when none, so the
    /// channel's receive buffer can be reused for the next read.
    private var unparsed: ByteBuffer?
    private var parsing = false
    /// Draining: close after the response in flight.
    private var quiescing = false
    private var upstreamNeedsFlush = false
    /// Between a client read and its read-complete, which flushes what was written upstream.
    private var inClientReadBurst = false
    /// A WebSocket upgrade was accepted (101): client bytes are relayed, no longer parsed.
    private var tunneling = false
    private var deadline: NIODeadline?
    private var timer: Scheduled<Void>?
    /// When `timer` fires.
    private var timerFiresAt: NIODeadline?
    /// When the first byte of the next request head arrived on an idle connection.
    private var headStartedAt: NIODeadline?

    init(worker: Worker, connection: ClientConnectionInfo) {
        self.worker = worker
        self.connection = connection
        let limits = worker.snapshot.configuration.limits
        self.state = ProxyStateMachine(maxBodyBytes: limits.maxRequestBodyBytes)
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
        if self.state.isIdle, self.headStartedAt == nil {
            // The first bytes of a head on an idle connection start the `requestHeaderSeconds`
            // clock. The armed timer fires within `timerGranularity` (≤ requestHeaderSeconds)
            // and finds this: no reschedule for every request's first bytes.
            self.headStartedAt = .now()
            self.deadline = self.headStartedAt! + self.worker.snapshot.requestHeaderTimeout
        }
        if var unparsed = self.unparsed {
            self.unparsed = nil
            unparsed.writeBuffer(&bytes)
            bytes = unparsed
        }
        if self.tunneling {
            self.exchange?.bytesIn += bytes.readableBytes
            self.run(self.state.requestBody(bytes), context: context)
            self.updateTimer(context: context)
            return
        }
        self.unparsed = bytes
        self.parseRequests(context: context)
    }

    /// Feeds the parsed events of the received bytes to the state machine, stopping before a
    /// pipelined head while a request is in flight. Re-entered (from a response finished
    /// synchronously) it returns at once: the outer call goes on.
    private func parseRequests(context: ChannelHandlerContext) {
        guard !self.parsing else { return }
        self.parsing = true
        defer { self.parsing = false }
        while !self.state.isClosed && !self.tunneling {
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

    /// A pipelined request waits for the response in flight.
    private var requestWaiting: Bool {
        self.unparsed != nil && self.parser.isAtMessageStart && !self.state.isIdle
    }

    private func handle(_ event: RequestParser.Event, context: ChannelHandlerContext) {
        switch event {
        case .head(let head, let framing):
            self.headStartedAt = nil
            self.receivedHead(head, framing: framing, context: context)
        case .body(let body):
            self.exchange?.bytesIn += body.readableBytes
            self.run(self.state.requestBody(body), context: context)
        case .end:
            self.run(self.state.requestEnd(), context: context)
        case .error(let error):
            self.ensureExchangeForProtocolError(context: context)
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
        self.timerFiresAt = nil
        self.unparsed = nil
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
            // Draining: finish the request in flight (its response says Connection: close),
            // close idle connections now.
            self.quiescing = true
            if self.state.isIdle && self.unparsed == nil { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Backpressure towards the client: hold reads while the state machine says so, or while
    /// a pipelined request waits.
    func read(context: ChannelHandlerContext) {
        if self.state.shouldReadFromClient && !self.requestWaiting {
            context.read()
        } else {
            self.pendingRead = true
        }
    }

    /// The response of a request has been written and the connection stays open: parse the
    /// pipelined requests that waited, then read on.
    private func requestFinished(context: ChannelHandlerContext) {
        self.parseRequests(context: context)
        if self.state.isIdle, self.unparsed != nil, self.headStartedAt == nil {
            // Part of the next head is here already: its clock runs.
            self.headStartedAt = .now()
        }
        self.run(.resumeClientReads, context: context)
    }

    // MARK: Request start

    private func receivedHead(_ head: HTTPRequestHead, framing: Result<BodyFraming, GatewayError>, context: ChannelHandlerContext) {
        let snapshot = self.worker.snapshot
        let requestID = self.worker.requestID(forwarded: head.headers.first(name: "x-request-id"))
        self.exchange = Exchange(
            requestID: requestID, method: head.method, uri: head.uri, version: head.version,
            keepAlive: head.isKeepAlive, start: .now(), snapshot: snapshot, requestChunked: (try? framing.get()) == .chunked
        )
        let hasBody: Bool
        switch framing {
        case .success(let body): hasBody = body != .none
        case .failure: hasBody = false
        }
        let expectsContinue = head.headers[canonicalForm: "expect"].contains { ASCII.equalsIgnoringCase($0, "100-continue") }
        let replayable = !hasBody && Self.isIdempotent(head.method)
        let action = self.state.requestHead(keepAlive: head.isKeepAlive, expectsContinue: expectsContinue, replayable: replayable, hasBody: hasBody)
        guard case .decide = action else {
            self.run(action, context: context)
            return
        }
        switch framing {
        case .failure(let error):
            // Ambiguous framing: answer and close, never forward (SPEC §4.5).
            self.exchange?.local = .problem(error, requestID: requestID)
            self.run(self.state.decidedToRespondLocally(forceClose: true), context: context)
        case .success(let body):
            let planner = RequestPlanner(worker: self.worker, snapshot: snapshot, connection: self.connection)
            switch planner.plan(head: head, framing: body, requestID: requestID, now: self.worker.shared.clock()) {
            case .ready(let plan):
                self.adopt(plan, context: context)
            case .pending(let future, let route):
                self.exchange?.routeName = route
                future.assumeIsolated().whenComplete { result in
                    guard let context = self.context, self.exchange?.requestID == requestID else { return }
                    switch result {
                    case .success(let plan):
                        self.adopt(plan, context: context)
                    case .failure:
                        self.exchange?.local = .problem(.authServiceUnavailable, requestID: requestID)
                        self.run(self.state.decidedToRespondLocally(), context: context)
                    }
                    self.updateTimer(context: context)
                }
            }
        }
    }

    private func adopt(_ plan: RequestPlan, context: ChannelHandlerContext) {
        switch plan {
        case .respond(let response, let close, let route):
            self.exchange?.routeName = route
            self.exchange?.local = response
            self.run(self.state.decidedToRespondLocally(forceClose: close || self.mustClose), context: context)
        case .forward(let forward):
            self.exchange?.plan = forward
            self.exchange?.routeName = forward.route.name
            self.run(self.state.decidedToForward(), context: context)
        }
    }

    // MARK: Running actions

    private func run(_ action: ProxyStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .decide:
            // Only `receivedHead` decides; reaching here means a state machine bug.
            assertionFailure("decide outside receivedHead")
        case .lease:
            self.lease(context: context)
        case .sendRequest(let body, let end, let sendContinue):
            self.sendRequest(body: body, end: end, sendContinue: sendContinue, context: context)
        case .forwardBody(let part):
            self.upstream?.sendBody(part)
            self.upstreamNeedsFlush = true
        case .forwardEnd:
            // A fixed-length body ends without a byte of its own: only body parts not yet
            // flushed need a flush then (the head went out flushed).
            if self.upstream?.sendEnd() == true || self.upstreamNeedsFlush { self.upstream?.flush() }
            self.upstreamNeedsFlush = false
        case .writeResponseHead:
            // Held in `exchange.responseHead` until the first body part, the end or the end of
            // the read burst: a small response then leaves in one write.
            break
        case .writeResponseBody(let part):
            self.exchange?.bytesOut += part.readableBytes
            let framed = self.exchange?.responseChunked == true ? HTTPWriter.chunk(part, allocator: context.channel.allocator) : part
            self.writeResponse(framed, context: context)
        case .finishResponse(let reuseUpstream, let closeClient):
            self.finishResponse(reuseUpstream: reuseUpstream, closeClient: closeClient, context: context)
        case .finishResponseOnly:
            let tail = self.takeResponseTail(context: context)
            self.finishExchange(status: self.exchange?.responseStatus ?? 0, error: nil)
            self.flushResponse(tail, close: false, context: context)
        case .forwardEndAndRelease(let reuseUpstream, let closeClient):
            if let upstream = self.upstream {
                self.upstream = nil
                upstream.sendEnd()
                upstream.flush()
                self.upstreamNeedsFlush = false
                if reuseUpstream, let pool = upstream.pool { pool.release(upstream) } else { upstream.close() }
            }
            if closeClient {
                context.close(promise: nil)
            } else {
                self.requestFinished(context: context)
            }
        case .writeLocalResponse(let close):
            self.writeLocalResponse(close: close, context: context)
        case .respondWithError(let error, let close):
            self.cancelLease()
            let exchange = self.exchange ?? self.bareExchange()
            exchange.local = .problem(error, requestID: exchange.requestID)
            self.exchange = exchange
            self.writeLocalResponse(close: close, context: context)
        case .failForwarding(let error):
            self.cancelLease()
            self.upstream?.close()
            self.upstream = nil
            if let error {
                self.countUpstreamError(error)
                let exchange = self.exchange ?? self.bareExchange()
                exchange.local = .problem(error, requestID: exchange.requestID)
                self.exchange = exchange
                self.writeLocalResponse(close: true, context: context)
            } else {
                self.finishExchange(status: self.exchange?.responseStatus ?? 502, error: nil)
                context.close(promise: nil)
            }
        case .retry:
            self.upstream?.close()
            self.upstream = nil
            self.lease(context: context)
        case .returnUnusedConnection:
            break  // handled where the connection is known (`leaseSucceeded`)
        case .abandon:
            self.cancelLease()
            self.upstream?.close()
            self.upstream = nil
            // 499: nginx's "client closed request", so the access log tells who gave up.
            self.finishExchange(status: 499, error: nil)
            context.close(promise: nil)
        case .resumeClientReads:
            if self.pendingRead, !self.requestWaiting {
                self.pendingRead = false
                context.read()
            }
        case .resumeUpstreamReads:
            self.upstream?.resumeReading()
        }
    }

    private func lease(context: ChannelHandlerContext) {
        guard let pool = self.exchange?.plan?.pool else { return }
        switch pool.lease(for: self) {
        case .leased(let connection, let reused):
            self.leaseSucceeded(connection, reused: reused)
        case .pending:
            self.leasingPool = pool
        }
    }

    private func cancelLease() {
        if let pool = self.leasingPool {
            self.leasingPool = nil
            pool.cancelLease(for: self)
        }
    }

    private func sendRequest(body: [ByteBuffer], end: Bool, sendContinue: Bool, context: ChannelHandlerContext) {
        guard let upstream = self.upstream, let plan = self.exchange?.plan else { return }
        if sendContinue {
            context.writeAndFlush(self.wrapOutboundOut(context.channel.allocator.buffer(staticString: HTTPWriter.continueResponse)), promise: nil)
        }
        upstream.sendHead(plan.head, chunkedBody: self.exchange?.requestChunked ?? false, upgrade: plan.upgrade != nil)
        self.exchange?.upstreamSentAt = .now()
        for part in body { upstream.sendBody(part) }
        if end { upstream.sendEnd() }
        if self.inClientReadBurst && !end {
            // More of this request is in the read being parsed: the head leaves with it at
            // the read's end, one system call instead of two (measured on 64 KiB uploads).
            self.upstreamNeedsFlush = true
        } else {
            upstream.flush()
            self.upstreamNeedsFlush = false
        }
        // Body reads were held while waiting for the decision and the connection.
        self.run(.resumeClientReads, context: context)
    }

    private func finishResponse(reuseUpstream: Bool, closeClient: Bool, context: ChannelHandlerContext) {
        if let upstream = self.upstream {
            self.upstream = nil
            // The pool the connection was leased from (the plan holds it strongly).
            if reuseUpstream, let pool = self.exchange?.plan?.pool ?? upstream.pool { pool.release(upstream) } else { upstream.close() }
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
    private func writeResponse(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        guard let exchange = self.exchange, var head = exchange.responseHead else {
            context.write(self.wrapOutboundOut(bytes), promise: nil)
            return
        }
        exchange.responseHead = nil
        if bytes.readableBytes <= Self.coalescedBodyBytes {
            var bytes = bytes
            head.writeBuffer(&bytes)
            context.write(self.wrapOutboundOut(head), promise: nil)
        } else {
            context.write(self.wrapOutboundOut(head), promise: nil)
            context.write(self.wrapOutboundOut(bytes), promise: nil)
        }
    }

    /// What is left to write when the response ends: the held head, the last chunk.
    private func takeResponseTail(context: ChannelHandlerContext) -> ByteBuffer? {
        guard let exchange = self.exchange else { return nil }
        var tail = exchange.responseHead
        exchange.responseHead = nil
        if exchange.responseChunked {
            if tail == nil { tail = context.channel.allocator.buffer(capacity: 8) }
            tail!.writeStaticString(HTTPWriter.lastChunk)
        }
        return tail
    }

    /// Writes `tail` and flushes; closes the connection afterwards when `close`.
    private func flushResponse(_ tail: ByteBuffer?, close: Bool, context: ChannelHandlerContext) {
        if close {
            context.writeAndFlush(self.wrapOutboundOut(tail ?? ByteBuffer())).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        } else if let tail {
            context.writeAndFlush(self.wrapOutboundOut(tail), promise: nil)
        } else {
            context.flush()
        }
    }

    private func writeLocalResponse(close: Bool, context: ChannelHandlerContext) {
        guard let exchange = self.exchange, let response = exchange.local else { return }
        var headers = response.headers
        headers.add(name: "X-Request-Id", value: exchange.requestID)
        headers.add(name: "Content-Length", value: String(response.body.utf8.count))
        if close {
            headers.add(name: "Connection", value: "close")
        } else if exchange.version == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        let version: HTTPVersion = exchange.version == .http1_0 ? .http1_0 : .http1_1
        var bytes = context.channel.allocator.buffer(capacity: 256 + response.body.utf8.count)
        HTTPWriter.responseHead(version: version, status: response.status, headers: headers, into: &bytes)
        if exchange.method != .HEAD {
            exchange.bytesOut = response.body.utf8.count
            bytes.writeString(response.body)
        }
        self.finishExchange(status: Int(response.status.code), error: response.error)
        if close {
            context.writeAndFlush(self.wrapOutboundOut(bytes)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        } else {
            context.writeAndFlush(self.wrapOutboundOut(bytes), promise: nil)
            self.requestFinished(context: context)
        }
    }

    // MARK: Upstream lease

    func leaseSucceeded(_ connection: UpstreamConnection, reused: Bool) {
        self.leasingPool = nil
        guard let context = self.context else {
            connection.pool?.returnUnused(connection, reused: reused)
            return
        }
        let action = self.state.leaseSucceeded(reused: reused)
        if case .returnUnusedConnection = action {
            connection.pool?.returnUnused(connection, reused: reused)
            return
        }
        self.upstream = connection
        connection.handler.delegate = self
        self.run(action, context: context)
        self.updateTimer(context: context)
    }

    func leaseFailed(_ error: GatewayError) {
        self.leasingPool = nil
        guard let context = self.context else { return }
        self.countUpstreamError(error)
        self.run(self.state.leaseFailed(error), context: context)
        self.updateTimer(context: context)
    }

    // MARK: Upstream events

    func upstreamResponseHead(_ head: UpstreamResponseHead) {
        guard let context = self.context, let exchange = self.exchange, let plan = exchange.plan else { return }
        if let sentAt = exchange.upstreamSentAt {
            self.worker.metrics.observeUpstreamDuration(backend: plan.route.backend, seconds: Double((NIODeadline.now() - sentAt).nanoseconds) / 1e9)
        }
        if head.status == 101, let upgrade = plan.upgrade {
            self.startTunnel(head, upgrade: upgrade, exchange: exchange, plan: plan, context: context)
            return
        }
        let clientIsHTTP11 = exchange.version == .http1_1
        // A body without a length goes to an HTTP/1.1 client chunked; an HTTP/1.0 client
        // cannot take chunks, so its body ends with the connection.
        let unsized = head.framing == .chunked || head.framing == .untilClose
        let closeClient = (unsized && !clientIsHTTP11) || !exchange.keepAlive || self.mustClose
        exchange.responseChunked = unsized && clientIsHTTP11
        var bytes = context.channel.allocator.buffer(capacity: head.bytes.readableBytes + 128)
        HTTPWriter.clientResponseHead(
            head,
            clientVersion: clientIsHTTP11 ? .http1_1 : .http1_0,
            requestID: exchange.requestID,
            extra: plan.responseHeaders,
            chunked: exchange.responseChunked,
            connection: closeClient ? "close" : (clientIsHTTP11 ? nil : "keep-alive"),
            into: &bytes
        )
        exchange.responseStatus = head.status
        exchange.closeAfterResponse = closeClient
        let action = self.state.responseHead()
        if case .writeResponseHead = action { exchange.responseHead = bytes }
        self.run(action, context: context)
        self.updateTimer(context: context)
    }

    /// The backend switched protocols (only ever for a WebSocket upgrade the client asked
    /// for): the 101 goes to the client and both connections become a tunnel.
    private func startTunnel(_ head: UpstreamResponseHead, upgrade: String, exchange: Exchange, plan: ForwardPlan, context: ChannelHandlerContext) {
        var bytes = context.channel.allocator.buffer(capacity: head.bytes.readableBytes + 128)
        HTTPWriter.clientResponseHead(
            head, clientVersion: .http1_1, requestID: exchange.requestID, extra: plan.responseHeaders, chunked: false,
            connection: "upgrade", upgrade: upgrade, into: &bytes
        )
        exchange.responseStatus = 101
        let action = self.state.upgraded()
        if case .writeResponseHead = action {
            exchange.responseHead = bytes
            self.tunneling = true
        }
        self.run(action, context: context)
        // Bytes the client sent after its request (frames that did not wait for the 101)
        // are the tunnel's first.
        if self.tunneling, let early = self.unparsed {
            self.unparsed = nil
            exchange.bytesIn += early.readableBytes
            self.run(self.state.requestBody(early), context: context)
            self.upstream?.flush()
        }
        self.updateTimer(context: context)
    }

    func upstreamResponseBody(_ body: ByteBuffer) {
        guard let context = self.context else { return }
        self.run(self.state.responseBody(body), context: context)
        if self.tunneling { self.updateTimer(context: context) }
    }

    func upstreamResponseEnd() {
        guard let context = self.context else { return }
        let keepAlive = self.upstream?.reusable ?? false
        self.run(self.state.responseEnd(upstreamKeepAlive: keepAlive, clientMustClose: self.exchange?.closeAfterResponse ?? true), context: context)
        self.updateTimer(context: context)
    }

    func upstreamReadComplete() {
        guard let context = self.context else { return }
        // The head of a response whose body is still to come goes out now (a stream's client
        // sees the head without waiting for the first event).
        if let head = self.exchange?.responseHead {
            self.exchange?.responseHead = nil
            context.write(self.wrapOutboundOut(head), promise: nil)
        }
        context.flush()
    }

    func upstreamClosed(protocolError: Bool) {
        guard let context = self.context else { return }
        self.upstream = nil
        let action = protocolError ? self.state.upstreamProtocolError() : self.state.upstreamFailed()
        self.run(action, context: context)
        self.updateTimer(context: context)
    }

    func upstreamWritabilityChanged(_ writable: Bool) {
        guard let context = self.context else { return }
        self.run(self.state.upstreamWritabilityChanged(writable), context: context)
    }

    var shouldReadFromUpstream: Bool { self.state.shouldReadFromUpstream }

    // MARK: Finishing

    /// The one place every request ends (DESIGN.md habit 6): metrics and access log.
    private func finishExchange(status: Int, error: GatewayError?) {
        guard let exchange = self.exchange else { return }
        self.exchange = nil
        let route = exchange.routeName ?? "-"
        let metrics = self.worker.metrics
        metrics.countRequest(route: route, status: status)
        if let reason = error?.authFailureReason {
            metrics.increment(MetricKey(MetricName.authFailures, ["reason": reason]))
        }
        let accessLog = self.worker.accessLog
        guard accessLog.isEnabled else { return }
        let duration = Double((NIODeadline.now() - exchange.start).nanoseconds) / 1e9
        let path = exchange.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? exchange.uri
        accessLog.record(
            AccessLog.Entry(
                requestID: exchange.requestID,
                method: exchange.method.rawValue,
                path: path,
                route: exchange.routeName,
                status: status,
                durationSeconds: duration,
                client: self.connection.peerIP,
                backend: exchange.plan?.route.backend,
                subject: exchange.plan?.subject,
                errorType: error?.errorType,
                bytesIn: exchange.bytesIn,
                bytesOut: exchange.bytesOut
            ),
            timestamp: self.worker.shared.clock()
        )
    }

    private func countUpstreamError(_ error: GatewayError) {
        guard let backend = self.exchange?.plan?.route.backend else { return }
        self.worker.metrics.increment(MetricKey(MetricName.upstreamErrors, ["backend": backend, "kind": error.errorType]))
    }

    /// An exchange for input that never became a request head (parse error, timeout).
    private func bareExchange() -> Exchange {
        Exchange(
            requestID: self.worker.requestID(forwarded: nil), method: .GET, uri: "-", version: .http1_1, keepAlive: false, start: .now(),
            snapshot: self.worker.snapshot, requestChunked: false
        )
    }

    private func ensureExchangeForProtocolError(context: ChannelHandlerContext) {
        if self.exchange == nil, !self.state.isClosed { self.exchange = self.bareExchange() }
    }

    // MARK: Timeouts

    /// Keeps one timer per connection armed for the current deadline. Moving a deadline is an
    /// assignment; the timer re-arms itself when it fires early, so requests schedule nothing.
    private func updateTimer(context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        switch self.state.timeout {
        case .none:
            self.deadline = nil
        case .idle:
            if let started = self.headStartedAt, self.state.isIdle {
                self.deadline = started + self.worker.snapshot.requestHeaderTimeout
            } else {
                self.deadline = now + self.worker.snapshot.idleTimeout
            }
        case .response:
            self.deadline = now + (self.exchange?.plan?.responseTimeout ?? .seconds(30))
        }
        guard let deadline = self.deadline, !self.state.isClosed else { return }
        // A later deadline keeps the armed timer (it re-arms when it fires); an earlier one
        // replaces it. The timer is never armed more than `timerGranularity` ahead, so the
        // deadline changes of an ordinary request (idle → response → idle) are always later
        // than the armed time: no timer is created or cancelled per request (measured: the
        // reschedule per request cost ~25% throughput at 256 connections).
        if let firesAt = self.timerFiresAt, firesAt <= deadline { return }
        self.timer?.cancel()
        self.schedule(at: min(deadline, now + self.worker.snapshot.timerGranularity), context: context)
    }

    private func schedule(at deadline: NIODeadline, context: ChannelHandlerContext) {
        self.timerFiresAt = deadline
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.timerFired(context: context)
        }
    }

    private func timerFired(context: ChannelHandlerContext) {
        self.timer = nil
        self.timerFiresAt = nil
        guard let deadline = self.deadline, !self.state.isClosed else { return }
        let now = NIODeadline.now()
        if deadline > now {
            self.schedule(at: min(deadline, now + self.worker.snapshot.timerGranularity), context: context)
            return
        }
        self.deadline = nil
        if self.state.isIdle, self.headStartedAt != nil {
            // Slow headers (slowloris): tell the client and close, disturbing nobody else.
            self.exchange = self.bareExchange()
            self.run(self.state.protocolError(.requestTimeout), context: context)
            return
        }
        self.run(self.state.timedOut(), context: context)
    }

    /// Close after the response in flight: the gateway is draining.
    private var mustClose: Bool { self.quiescing || self.worker.shared.health.isDraining }

    private static func isIdempotent(_ method: HTTPMethod) -> Bool {
        switch method {
        case .GET, .HEAD, .OPTIONS, .PUT, .DELETE, .TRACE: return true
        default: return false
        }
    }
}

@available(*, unavailable)
extension ProxyHandler: Sendable {}
