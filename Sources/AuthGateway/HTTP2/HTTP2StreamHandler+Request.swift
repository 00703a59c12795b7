import NIOCore
import NIOHPACK
import NIOHTTP1

/// The stream's request: its HEADERS translated and decided (`RequestPlanner`), the lease, the
/// request going upstream.
extension HTTP2StreamHandler {
    func receivedHead(_ block: HPACKHeaders, endStream: Bool, context: ChannelHandlerContext) {
        let limits = self.worker.snapshot.configuration.limits
        let requestID = self.worker.requestID(forwarded: block.first(name: "x-request-id"))
        let translated = HTTP2Messages.request(block, endStream: endStream, maxBodyBytes: limits.maxRequestBodyBytes)
        let request: HTTP2Messages.Request
        switch translated {
        case .success(let value):
            request = value
        case .failure(let error):
            self.exchange = Exchange.bare(requestID: requestID, protocol: .h2)
            self.isGRPC = GRPCStatus.isGRPC(contentType: block.first(name: "content-type"))
            self.run(self.state.protocolError(error), context: context)
            return
        }
        self.isGRPC = request.isGRPC
        self.grpcTimeout = request.grpcTimeout
        if case .contentLength(let length) = request.framing { self.declaredLength = length }
        let head = request.head
        self.exchange = Exchange(
            requestID: requestID, protocol: .h2, method: head.method, uri: head.uri, version: .http1_1, keepAlive: false, start: .now(),
            requestChunked: request.framing == .chunked
        )
        if let tracing = self.worker.shared.tracing { self.exchange?.trace = tracing.start(head, protocol: .h2) }
        let hasBody = request.framing != .none
        let action = self.state.requestHead(keepAlive: false, expectsContinue: false, replayable: !hasBody && ProxyHandler.isIdempotent(head.method), hasBody: hasBody)
        guard case .decide = action else {
            self.run(action, context: context)
            return
        }
        let planner = RequestPlanner(worker: self.worker, snapshot: self.worker.snapshot, connection: self.connection)
        switch planner.plan(head: head, framing: request.framing, requestID: requestID, now: self.worker.shared.clock(), trace: self.exchange?.trace) {
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

    private func adopt(_ plan: RequestPlan, context: ChannelHandlerContext) {
        switch plan {
        case .respond(let response, _, let route):
            self.exchange?.routeName = route
            self.exchange?.local = response
            self.run(self.state.decidedToRespondLocally(), context: context)
        case .forward(let forward):
            self.exchange?.plan = forward
            self.exchange?.routeName = forward.route.name
            if self.isGRPC && !forward.pool.wireProtocol.isHTTP2 {
                // gRPC needs HTTP/2 end to end (trailers): an HTTP/1.1 backend cannot carry it.
                self.exchange?.local = .problem(.upstreamUnreachable, requestID: self.exchange?.requestID ?? "")
                self.run(self.state.decidedToRespondLocally(), context: context)
                return
            }
            if forward.upgrade != nil {
                // RFC 8441 WebSockets over HTTP/2 are not supported: no `Upgrade` on HTTP/2.
                self.exchange?.local = .problem(.upgradeUnsupported, requestID: self.exchange?.requestID ?? "")
                self.run(self.state.decidedToRespondLocally(), context: context)
                return
            }
            self.run(self.state.decidedToForward(), context: context)
        }
    }

    func lease(context: ChannelHandlerContext) {
        guard let pool = self.exchange?.plan?.pool else { return }
        switch pool.lease(for: self) {
        case .leased(let lease, let reused):
            self.leaseSucceeded(lease, reused: reused)
        case .pending:
            self.leasingPool = pool
        }
    }

    func cancelLease() {
        if let pool = self.leasingPool {
            self.leasingPool = nil
            pool.cancelLease(for: self)
        }
    }

    func sendRequest(body: [ByteBuffer], end: Bool, context: ChannelHandlerContext) {
        guard let upstream = self.upstream, let plan = self.exchange?.plan else { return }
        upstream.sendHead(plan.head, chunkedBody: self.exchange?.requestChunked ?? false, upgrade: false)
        self.exchange?.upstreamSentAt = .now()
        for part in body { upstream.sendBody(part) }
        if end { upstream.sendEnd() }
        upstream.flush()
        self.run(.resumeClientReads, context: context)
    }

    func releaseUpstream(reusable: Bool) {
        guard let upstream = self.upstream else { return }
        self.upstream = nil
        upstream.release(reusable: reusable)
    }
}
