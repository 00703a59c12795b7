import NIOCore
import NIOHTTP1

/// A request head's decision (route, authenticate, plan), the upstream lease, and the request
/// going upstream.
extension HTTP1ServerConnection {
    func receivedHead(
        _ head: HTTPRequestHead, framing: Result<BodyFraming, GatewayError>, context: ChannelHandlerContext
    ) {
        let requestID = self.environment.requestID(forwarded: head.headers.first(name: "x-request-id"))
        self.exchange = Exchange(
            requestID: requestID, method: head.method, uri: head.uri, start: .now(),
            requestChunked: (try? framing.get()) == .chunked)
        self.startFraming(version: head.version, keepAlive: head.isKeepAlive)
        if let tracing = self.environment.tracing { self.exchange?.trace = tracing.start(head, protocol: .http1) }
        if self.environment.isDraining { self.state.requestClose() }
        let hasBody: Bool
        switch framing {
        case .success(let body): hasBody = body != .none
        case .failure: hasBody = false
        }
        let expectsContinue = head.headers[canonicalForm: "expect"].contains {
            ASCII.equalsIgnoringCase($0, "100-continue")
        }
        let replayable = !hasBody && head.method.isIdempotent
        let action = self.state.requestHead(
            keepAlive: head.isKeepAlive, expectsContinue: expectsContinue, replayable: replayable, hasBody: hasBody)
        guard case .decide = action else {
            self.run(action, context: context)
            return
        }
        switch framing {
        case .failure(let error):
            // Ambiguous framing: answer and close, never forward (docs/forwarding.md).
            self.exchange?.local = .problem(error, requestID: requestID)
            self.run(self.state.decidedToRespondLocally(forceClose: true), context: context)
        case .success(let body):
            self.decide(head, framing: body, requestID: requestID, context: context)
        }
    }

    func adopt(_ plan: RequestPlan, context: ChannelHandlerContext) {
        switch plan {
        case .respond(let response, let close, let route):
            self.exchange?.routeName = route
            self.exchange?.local = response
            self.run(self.state.decidedToRespondLocally(forceClose: close), context: context)
        case .forward(let forward):
            self.exchange?.plan = forward
            self.exchange?.routeName = forward.route.name
            self.run(self.state.decidedToForward(), context: context)
        }
    }

    func sendRequest(body: [ByteBuffer], end: Bool, context: ChannelHandlerContext) {
        guard let upstream = self.upstream, let plan = self.exchange?.plan else { return }
        upstream.sendHead(
            plan.head, chunkedBody: self.exchange?.requestChunked ?? false, upgrade: plan.upgrade != nil,
            secrets: RequestSecrets(names: plan.secretHeaders))
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
        self.run(.exchange(.resumeClientReads), context: context)
    }
}
