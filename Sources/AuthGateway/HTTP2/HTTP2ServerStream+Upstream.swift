import NIOCore
import NIOHPACK

/// What the backend sends, on an HTTP/2 stream (the rest of the upstream events:
/// `ExchangeHandler`).
extension HTTP2ServerStream {
    func upstreamResponseHead(_ head: UpstreamResponseHead) {
        guard let context = self.context, let exchange = self.exchange, let plan = exchange.plan else { return }
        self.observeUpstreamLatency(exchange, backend: plan.route.backend)
        guard head.status != 101 else {
            self.run(self.state.upstreamProtocolError(), context: context)
            return
        }
        exchange.responseStatus = head.status
        let headers = HTTP2Messages.responseHeaders(
            head, requestID: exchange.requestID, extra: plan.responseHeaders, secrets: plan.secretHeaders,
            texts: &self.server.fieldTexts, dropsCORSFields: plan.answersCORS)
        self.run(self.state.responseHead(headers), context: context)
        self.updateTimer(context: context)
    }

    func upstreamResponseBody(_ body: ByteBuffer) {
        guard let context = self.context else { return }
        self.run(self.state.responseBody(body), context: context)
    }

    func upstreamResponseTrailers(_ trailers: HPACKHeaders) {
        self.state.responseTrailers(trailers)
    }

    func upstreamResponseEnd() {
        guard let context = self.context else { return }
        let reusable = self.upstream?.reusable ?? false
        self.run(self.state.responseEnd(upstreamReusable: reusable), context: context)
        self.updateTimer(context: context)
    }

    func upstreamReadComplete() {
        guard let context = self.context else { return }
        // A response whose rest is still to come shows what it has now.
        self.run(self.state.upstreamReadComplete(), context: context)
        // One still streaming at the end of the read burst that brought its head is a
        // long-lived stream (docs/streams.md); one that ended in it never was.
        if !self.streamOpen, let exchange = self.exchange, exchange.responseStatus != 0 {
            self.streamStarted(context: context)
        }
        self.server.flushSoon()
    }
}
