import NIOCore
import NIOHPACK

/// What the pool and the backend report for this stream's request.
extension HTTP2StreamHandler {
    func leaseSucceeded(_ lease: UpstreamLease, reused: Bool) {
        self.leasingPool = nil
        guard let context = self.context else {
            lease.returnUnused(reused: reused)
            return
        }
        let action = self.state.leaseSucceeded(reused: reused)
        if case .returnUnusedConnection = action {
            lease.returnUnused(reused: reused)
            return
        }
        self.upstream = lease
        lease.delegate = self
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

    func upstreamResponseHead(_ head: UpstreamResponseHead) {
        guard let context = self.context, let exchange = self.exchange, let plan = exchange.plan else { return }
        if let sentAt = exchange.upstreamSentAt {
            self.worker.metrics.observeUpstreamDuration(backend: plan.route.backend, seconds: Double((NIODeadline.now() - sentAt).nanoseconds) / 1e9)
        }
        guard head.status != 101 else {
            self.run(self.state.upstreamProtocolError(), context: context)
            return
        }
        exchange.responseStatus = head.status
        let action = self.state.responseHead()
        if case .writeResponseHead = action {
            self.responseHeaders = HTTP2Messages.responseHeaders(head, requestID: exchange.requestID, extra: plan.responseHeaders)
        }
        self.run(action, context: context)
        self.updateTimer(context: context)
    }

    func upstreamResponseBody(_ body: ByteBuffer) {
        guard let context = self.context else { return }
        self.run(self.state.responseBody(body), context: context)
    }

    func upstreamResponseTrailers(_ trailers: HPACKHeaders) {
        self.responseTrailers = trailers
    }

    func upstreamResponseEnd() {
        guard let context = self.context else { return }
        let reusable = self.upstream?.reusable ?? false
        self.run(self.state.responseEnd(upstreamKeepAlive: reusable, clientMustClose: false), context: context)
        self.updateTimer(context: context)
    }

    func upstreamReadComplete() {
        guard let context = self.context else { return }
        // A response whose body is still to come shows its head now.
        self.writeHeldHeaders(endStream: false, context: context)
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
}
