import NIOCore
import NIOHPACK
import NIOHTTP1

/// The stream's request: its HEADERS translated and decided (`RequestPlanner`), the lease, the
/// request going upstream.
extension HTTP2ServerStream {
    func receivedHead(_ block: HPACKHeaders, endStream: Bool, context: ChannelHandlerContext) {
        let limits = self.environment.snapshot.configuration.limits
        let requestID = self.environment.requestID(forwarded: block.first(name: "x-request-id"))
        let translated = HTTP2Messages.request(
            block, endStream: endStream, maxHeaderListSize: limits.maxHeaderBytes,
            maxBodyBytes: limits.maxRequestBodyBytes)
        let request: HTTP2Messages.Request
        switch translated {
        case .success(let value):
            request = value
        case .failure(let error):
            self.exchange = Exchange.bare(requestID: requestID, protocol: .h2)
            let isGRPC = HTTP2Fields.isGRPC(contentType: block.first(name: "content-type"))
            self.run(self.state.requestHeadRefused(error, isGRPC: isGRPC, endStream: endStream), context: context)
            return
        }
        self.grpcTimeout = request.grpcTimeout
        let head = request.head
        self.exchange = Exchange(
            requestID: requestID, protocol: .h2, method: head.method, uri: head.uri, start: .now(),
            requestChunked: request.framing == .chunked
        )
        self.neverIndexedFields = self.environment.snapshot.secretHeaders.peerNeverIndexedNames(in: block)
        if let tracing = self.environment.tracing { self.exchange?.trace = tracing.start(head, protocol: .h2) }
        let hasBody = request.framing != .none
        let contentLength: Int?
        if case .contentLength(let length) = request.framing { contentLength = length } else { contentLength = nil }
        let action = self.state.requestHead(
            replayable: !hasBody && head.method.isIdempotent, hasBody: hasBody, contentLength: contentLength,
            isGRPC: request.isGRPC, endStream: endStream)
        guard case .decide = action else {
            self.run(action, context: context)
            return
        }
        self.decide(head, framing: request.framing, requestID: requestID, context: context)
    }

    func adopt(_ plan: RequestPlan, context: ChannelHandlerContext) {
        switch plan {
        case .respond(let response, _, let route):
            self.exchange?.routeName = route
            self.exchange?.local = response
            self.run(self.state.decidedToRespondLocally(), context: context)
        case .forward(let forward):
            self.exchange?.plan = forward
            self.exchange?.routeName = forward.route.name
            if self.state.isGRPC && !forward.speaksHTTP2 {
                // gRPC needs HTTP/2 end to end (trailers): an HTTP/1.1 backend cannot carry it.
                self.exchange?.local = self.exchange?.problem(.upstreamUnreachable)
                self.run(self.state.decidedToRespondLocally(), context: context)
                return
            }
            if forward.upgrade != nil {
                // RFC 8441 WebSockets over HTTP/2 are not supported: no `Upgrade` on HTTP/2.
                self.exchange?.local = self.exchange?.problem(.upgradeUnsupported)
                self.run(self.state.decidedToRespondLocally(), context: context)
                return
            }
            self.run(self.state.decidedToForward(), context: context)
        }
    }

    func sendRequest(body: [ByteBuffer], end: Bool, context: ChannelHandlerContext) {
        guard let upstream = self.upstream, let plan = self.exchange?.plan else { return }
        let secrets = RequestSecrets(names: plan.secretHeaders, peerNeverIndexed: self.neverIndexedFields)
        upstream.sendHead(
            plan.head, chunkedBody: self.exchange?.requestChunked ?? false, upgrade: false, secrets: secrets)
        self.exchange?.upstreamSentAt = .now()
        for part in body { upstream.sendBody(part) }
        if end { self.endUpstreamRequest(upstream) }
        self.server.upstreamWritten(by: self)
        self.run(.exchange(.resumeClientReads), context: context)
    }

    /// Ends the upstream request: with the client's trailers on an HTTP/2 backend.
    @discardableResult
    func endUpstreamRequest(_ upstream: UpstreamLease) -> Bool {
        let trailers = self.requestTrailers
        self.requestTrailers = nil
        return upstream.sendEnd(trailers: trailers)
    }

    func releaseUpstream(reusable: Bool) {
        guard let upstream = self.upstream else { return }
        self.upstream = nil
        upstream.release(reusable: reusable)
    }
}
