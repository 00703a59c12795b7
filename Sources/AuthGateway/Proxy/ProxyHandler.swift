import NIOCore
import NIOHTTP1

/// One client connection's requests: feeds `ProxyStateMachine` with channel and upstream
/// events and runs the actions it returns (DESIGN.md habit 2: one place runs actions).
///
/// Everything happens on the connection's event loop: planning (routing, token verification,
/// header rewriting) is synchronous unless the auth service must be asked; the upstream
/// connection comes from this loop's pool. Bodies are relayed without buffering: reads are
/// withheld from one side while the other cannot take more (`read(context:)`), and resumed
/// on writability changes.
final class ProxyHandler: ChannelDuplexHandler, UpstreamLeaseRequester, UpstreamConnectionDelegate {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The request in flight and what has been learned about it.
    private struct Exchange {
        let requestID: String
        let method: HTTPMethod
        let uri: String
        let version: HTTPVersion
        let keepAlive: Bool
        let start: NIODeadline
        let snapshot: RuntimeSnapshot
        var plan: ForwardPlan?
        var local: LocalResponse?
        var responseHead: HTTPResponseHead?
        var responseStatus = 0
        var closeAfterResponse = false
        var upstreamSentAt: NIODeadline?
        var bytesIn = 0
        var bytesOut = 0
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
    /// Parts (and decoder errors) of pipelined requests, waiting for the response in flight.
    private var pipelined = CircularBuffer<Pipelined>()
    /// Draining: close after the response in flight.
    private var quiescing = false

    private enum Pipelined {
        case part(HTTPServerRequestPart)
        case error(Error)
    }
    private var upstreamNeedsFlush = false
    private var deadline: NIODeadline?
    private var timer: Scheduled<Void>?
    /// When `timer` fires.
    private var timerFiresAt: NIODeadline?
    /// When the first byte of the next request head arrived on an idle connection.
    private var headStartedAt: NIODeadline?

    init(worker: Worker, connection: ClientConnectionInfo) {
        self.worker = worker
        self.connection = connection
        self.state = ProxyStateMachine(maxBodyBytes: worker.snapshot.configuration.limits.maxRequestBodyBytes)
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
        let part = self.unwrapInboundIn(data)
        // A pipelined request waits until the response in flight has ended (RFC 9112 §9.3.2).
        if !self.pipelined.isEmpty || (!self.state.isIdle && Self.isHead(part)) {
            self.pipelined.append(.part(part))
            return
        }
        self.handle(part, context: context)
    }

    private func handle(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            self.headStartedAt = nil
            self.receivedHead(head, context: context)
        case .body(let body):
            self.exchange?.bytesIn += body.readableBytes
            self.run(self.state.requestBody(body), context: context)
        case .end:
            self.run(self.state.requestEnd(), context: context)
        }
        self.updateTimer(context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
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
        self.pipelined.removeAll()
        self.run(self.state.clientClosed(), context: context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A decoder error after the current request's end belongs to a pipelined request.
        if !self.pipelined.isEmpty || self.state.requestEndReceived {
            self.pipelined.append(.error(error))
            return
        }
        self.handleError(error, context: context)
    }

    private func handleError(_ error: Error, context: ChannelHandlerContext) {
        if let parserError = error as? HTTPParserError {
            let gatewayError: GatewayError = parserError == .headerOverflow ? .headersTooLarge : .malformedRequest("Malformed HTTP request")
            self.ensureExchangeForProtocolError(context: context)
            self.run(self.state.protocolError(gatewayError), context: context)
        } else {
            // Connection reset and the like: nothing to answer.
            context.close(promise: nil)
        }
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
            if self.state.isIdle && self.pipelined.isEmpty { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Backpressure towards the client: hold reads while the state machine says so, or while
    /// pipelined requests wait.
    func read(context: ChannelHandlerContext) {
        if self.state.shouldReadFromClient && self.pipelined.isEmpty {
            context.read()
        } else {
            self.pendingRead = true
        }
    }

    /// The response of a request has been written and the connection stays open: feed the
    /// pipelined requests that waited, then read on.
    private func requestFinished(context: ChannelHandlerContext) {
        while let next = self.pipelined.first {
            if case .part(.head) = next, !self.state.isIdle { break }
            self.pipelined.removeFirst()
            switch next {
            case .part(let part): self.handle(part, context: context)
            case .error(let error): self.handleError(error, context: context)
            }
            if self.state.isClosed {
                self.pipelined.removeAll()
                return
            }
        }
        if self.pipelined.isEmpty { self.run(.resumeClientReads, context: context) }
    }

    private static func isHead(_ part: HTTPServerRequestPart) -> Bool {
        if case .head = part { return true }
        return false
    }

    /// Raw bytes arrived (from `ConnectionActivityHandler`): on an idle connection this starts
    /// the `requestHeaderSeconds` clock for the next head.
    func bytesArrived() {
        guard self.state.isIdle, self.headStartedAt == nil else { return }
        // The armed timer fires within `timerGranularity` (≤ requestHeaderSeconds) and finds
        // this: no reschedule for every request's first bytes.
        self.headStartedAt = .now()
        self.deadline = self.headStartedAt! + self.worker.snapshot.requestHeaderTimeout
    }

    // MARK: Request start

    private func receivedHead(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let snapshot = self.worker.snapshot
        let requestID = self.worker.requestID(forwarded: head.headers.first(name: "x-request-id"))
        self.exchange = Exchange(
            requestID: requestID, method: head.method, uri: head.uri, version: head.version,
            keepAlive: head.isKeepAlive, start: .now(), snapshot: snapshot
        )
        let framing = RequestFraming.validate(head, maxBodyBytes: snapshot.configuration.limits.maxRequestBodyBytes)
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
            case .pending(let future):
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
        case .respond(let response, let close):
            self.exchange?.local = response
            self.run(self.state.decidedToRespondLocally(forceClose: close || self.mustClose), context: context)
        case .forward(let forward):
            self.exchange?.plan = forward
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
            self.upstream?.write(.body(.byteBuffer(part)))
            self.upstreamNeedsFlush = true
        case .forwardEnd:
            self.upstream?.write(.end(nil))
            self.upstream?.flush()
            self.upstreamNeedsFlush = false
        case .writeResponseHead:
            if let head = self.exchange?.responseHead {
                context.write(self.wrapOutboundOut(.head(head)), promise: nil)
            }
        case .writeResponseBody(let part):
            self.exchange?.bytesOut += part.readableBytes
            context.write(self.wrapOutboundOut(.body(.byteBuffer(part))), promise: nil)
        case .finishResponse(let reuseUpstream, let closeClient):
            self.finishResponse(reuseUpstream: reuseUpstream, closeClient: closeClient, context: context)
        case .finishResponseOnly:
            self.finishExchange(status: self.exchange?.responseStatus ?? 0, error: nil)
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        case .forwardEndAndRelease(let reuseUpstream, let closeClient):
            if let upstream = self.upstream {
                self.upstream = nil
                upstream.write(.end(nil))
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
            var exchange = self.exchange ?? self.bareExchange()
            exchange.local = .problem(error, requestID: exchange.requestID)
            self.exchange = exchange
            self.writeLocalResponse(close: close, context: context)
        case .failForwarding(let error):
            self.cancelLease()
            self.upstream?.close()
            self.upstream = nil
            if let error {
                self.countUpstreamError(error)
                var exchange = self.exchange ?? self.bareExchange()
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
            if self.pendingRead {
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
            context.writeAndFlush(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
        }
        upstream.write(.head(plan.head))
        self.exchange?.upstreamSentAt = .now()
        for part in body { upstream.write(.body(.byteBuffer(part))) }
        if end { upstream.write(.end(nil)) }
        upstream.flush()
        self.upstreamNeedsFlush = false
        // Body reads were held while waiting for the decision and the connection.
        self.run(.resumeClientReads, context: context)
    }

    private func finishResponse(reuseUpstream: Bool, closeClient: Bool, context: ChannelHandlerContext) {
        if let upstream = self.upstream {
            self.upstream = nil
            if reuseUpstream, let pool = upstream.pool { pool.release(upstream) } else { upstream.close() }
        }
        self.finishExchange(status: self.exchange?.responseStatus ?? 0, error: nil)
        if closeClient {
            context.writeAndFlush(self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        } else {
            // Flush here: the upstream connection is back in its pool, so its read-complete
            // (the usual flush point) no longer reaches this handler.
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            self.requestFinished(context: context)
        }
    }

    private func writeLocalResponse(close: Bool, context: ChannelHandlerContext) {
        guard var exchange = self.exchange, let response = exchange.local else { return }
        var headers = response.headers
        headers.add(name: "X-Request-Id", value: exchange.requestID)
        let body = context.channel.allocator.buffer(string: response.body)
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        if close {
            headers.add(name: "Connection", value: "close")
        } else if exchange.version == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        let version: HTTPVersion = exchange.version == .http1_0 ? .http1_0 : .http1_1
        context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: version, status: response.status, headers: headers))), promise: nil)
        if exchange.method != .HEAD {
            exchange.bytesOut = body.readableBytes
            self.exchange = exchange
            context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        self.finishExchange(status: Int(response.status.code), error: response.error)
        if close {
            context.writeAndFlush(self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        } else {
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            self.requestFinished(context: context)
        }
    }

    // MARK: Upstream lease

    func leaseSucceeded(_ connection: UpstreamConnection, reused: Bool) {
        self.leasingPool = nil
        guard let context = self.context else {
            connection.pool?.returnUnused(connection)
            return
        }
        let action = self.state.leaseSucceeded(reused: reused)
        if case .returnUnusedConnection = action {
            connection.pool?.returnUnused(connection)
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

    func upstreamResponseHead(_ head: HTTPResponseHead) {
        guard let context = self.context, var exchange = self.exchange, let plan = exchange.plan else { return }
        if let sentAt = exchange.upstreamSentAt {
            self.worker.metrics.observeUpstreamDuration(backend: plan.route.backend, seconds: Double((NIODeadline.now() - sentAt).nanoseconds) / 1e9)
        }
        if head.status == .switchingProtocols {
            // Upgrade headers are never forwarded, so a 101 is a backend error.
            self.run(self.state.upstreamProtocolError(), context: context)
            return
        }
        if !head.isKeepAlive { self.upstream?.reusable = false }
        let framing = RequestFraming.responseFraming(head, requestMethod: exchange.method)
        let clientIsHTTP11 = exchange.version == .http1_1
        let closeDelimited = framing == .untilClose && !clientIsHTTP11
        let closeClient = closeDelimited || !exchange.keepAlive || self.mustClose
        var headers = HeaderRewriter.clientResponseHeaders(
            head.headers,
            framing: framing,
            clientSupportsChunked: clientIsHTTP11,
            requestID: exchange.requestID,
            extra: plan.responseHeaders
        )
        if closeClient {
            headers.add(name: "Connection", value: "close")
        } else if !clientIsHTTP11 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        exchange.responseHead = HTTPResponseHead(version: clientIsHTTP11 ? .http1_1 : .http1_0, status: head.status, headers: headers)
        exchange.responseStatus = Int(head.status.code)
        exchange.closeAfterResponse = closeClient
        self.exchange = exchange
        self.run(self.state.responseHead(), context: context)
        self.updateTimer(context: context)
    }

    func upstreamResponseBody(_ body: ByteBuffer) {
        guard let context = self.context else { return }
        self.run(self.state.responseBody(body), context: context)
    }

    func upstreamResponseEnd() {
        guard let context = self.context else { return }
        let keepAlive = self.upstream?.reusable ?? false
        self.run(self.state.responseEnd(upstreamKeepAlive: keepAlive, clientMustClose: self.exchange?.closeAfterResponse ?? true), context: context)
        self.updateTimer(context: context)
    }

    func upstreamReadComplete() {
        self.context?.flush()
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
        let route = exchange.plan?.route.name ?? "-"
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
                route: exchange.plan?.route.name,
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

    /// An exchange for input that never became a request head (decoder error, timeout).
    private func bareExchange() -> Exchange {
        Exchange(requestID: self.worker.requestID(forwarded: nil), method: .GET, uri: "-", version: .http1_1, keepAlive: false, start: .now(), snapshot: self.worker.snapshot)
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
