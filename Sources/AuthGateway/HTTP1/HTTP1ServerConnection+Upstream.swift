import NIOCore

/// What the backend sends, on an HTTP/1.1 client connection (the rest of the upstream events:
/// `ExchangeHandler`).
extension HTTP1ServerConnection {
    func upstreamResponseHead(_ head: UpstreamResponseHead) {
        guard let context = self.context, let exchange = self.exchange, let plan = exchange.plan else { return }
        self.observeUpstreamLatency(exchange, backend: plan.route.backend)
        if head.status == 101, let upgrade = plan.upgrade {
            guard !self.selectsTokenProtocol(head) else {
                // The backend never saw a token's entry (docs/streams.md): echoing one is no
                // answer to this request.
                self.run(self.state.upstreamProtocolError(), context: context)
                return
            }
            self.startTunnel(head, upgrade: upgrade, exchange: exchange, plan: plan, context: context)
            return
        }
        let framing = ClientResponseFraming.decide(
            upstream: head.framing, clientVersion: self.requestVersion, clientKeepAlive: self.requestKeepAlive,
            mustClose: self.state.closeRequested || self.environment.isDraining
        )
        let clientIsHTTP11 = self.requestVersion == .http1_1
        self.responseChunked = framing.chunked
        var bytes = self.responseHeadBuffer(capacity: head.estimatedBytes + 128, context: context)
        HTTPWriter.clientResponseHead(
            head,
            clientVersion: clientIsHTTP11 ? .http1_1 : .http1_0,
            requestID: exchange.requestID,
            extra: plan.responseHeaders,
            chunked: framing.chunked,
            connection: framing.close ? "close" : (clientIsHTTP11 ? nil : "keep-alive"),
            dropsCORSFields: plan.answersCORS,
            into: &bytes
        )
        exchange.responseStatus = head.status
        self.closeAfterResponse = framing.close
        let action = self.state.responseHead()
        if case .exchange(.writeResponseHead) = action { self.heldResponseHead = bytes }
        self.run(action, context: context)
        self.updateTimer(context: context)
    }

    /// The backend switched protocols (only ever for a WebSocket upgrade the client asked
    /// for): the 101 goes to the client and both connections become a tunnel.
    private func startTunnel(
        _ head: UpstreamResponseHead, upgrade: String, exchange: Exchange, plan: ForwardPlan,
        context: ChannelHandlerContext
    ) {
        var bytes = context.channel.allocator.buffer(capacity: head.estimatedBytes + 128)
        HTTPWriter.clientResponseHead(
            head, clientVersion: .http1_1, requestID: exchange.requestID, extra: plan.responseHeaders, chunked: false,
            connection: "upgrade", upgrade: upgrade, into: &bytes
        )
        exchange.responseStatus = 101
        let action = self.state.upgraded()
        if case .exchange(.writeResponseHead) = action { self.heldResponseHead = bytes }
        self.run(action, context: context)
        // Bytes the client sent after its request (frames that did not wait for the 101)
        // are the tunnel's first.
        if self.state.isTunnel, let early = self.unparsed {
            self.unparsed = nil
            exchange.bytesIn += early.readableBytes
            self.relayFromClient(early, context: context)
            self.upstream?.flush()
        }
        if self.state.isTunnel { self.streamStarted(context: context) }
        self.updateTimer(context: context)
    }

    /// The backend's 101 selects a subprotocol that is a `websocketProtocol` token source's
    /// (only the application's own may reach the browser).
    private func selectsTokenProtocol(_ head: UpstreamResponseHead) -> Bool {
        let sources = self.environment.snapshot.configuration.tokens.sources
        guard sources.contains(where: { if case .websocketProtocol = $0 { true } else { false } }) else { return false }
        let selected = head.httpResponseHead.headers["sec-websocket-protocol"].map { ASCII.trimmingOWS($0[...]) }
        for case .websocketProtocol(let prefix) in sources where selected.contains(where: { $0.hasPrefix(prefix) }) {
            return true
        }
        return false
    }

    func upstreamResponseBody(_ body: ByteBuffer) {
        guard let context = self.context else { return }
        guard self.state.isTunnel else {
            self.run(self.state.responseBody(body), context: context)
            return
        }
        self.relayFromBackend(body, context: context)
        // A tunnel lives while bytes move.
        self.updateTimer(context: context)
    }

    func upstreamResponseEnd() {
        guard let context = self.context else { return }
        let keepAlive = self.upstream?.reusable ?? false
        self.run(
            self.state.responseEnd(
                upstreamKeepAlive: keepAlive, clientMustClose: self.exchange == nil || self.closeAfterResponse),
            context: context)
        self.updateTimer(context: context)
    }

    func upstreamReadComplete() {
        guard let context = self.context else { return }
        // The head of a response whose body is still to come goes out now (a stream's client
        // sees the head without waiting for the first event).
        if self.exchange != nil, let head = self.heldResponseHead {
            self.heldResponseHead = nil
            self.writeResponseHead(head, context: context)
        }
        // A response still streaming at the end of the read burst that brought its head is a
        // long-lived stream (docs/streams.md); one that ended in it never was.
        if !self.streamOpen, let exchange = self.exchange, exchange.responseStatus != 0, !self.state.isTunnel {
            self.streamStarted(context: context)
        }
        context.flush()
    }
}
