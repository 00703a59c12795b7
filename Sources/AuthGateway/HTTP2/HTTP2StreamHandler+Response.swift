import NIOCore
import NIOHPACK
import NIOHTTP1

/// What the HTTP/2 client gets: the backend's response as HEADERS, DATA and (from an HTTP/2
/// backend) trailers, or the gateway's own answer — a problem document, or for gRPC a
/// Trailers-Only response.
extension HTTP2StreamHandler {
    /// Writes the held response HEADERS; with `endStream` they end the response (no body).
    func writeHeldHeaders(endStream: Bool, context: ChannelHandlerContext) {
        guard let headers = self.responseHeaders else { return }
        self.responseHeaders = nil
        context.write(self.wrapOutboundOut(.headers(.init(headers: headers, endStream: endStream))), promise: nil)
    }

    /// The backend's response is complete: END_STREAM on the held HEADERS, on the trailers, or
    /// on an empty DATA frame.
    func endResponse(context: ChannelHandlerContext) {
        if self.responseHeaders != nil {
            if let trailers = self.responseTrailers {
                self.writeHeldHeaders(endStream: false, context: context)
                context.write(self.wrapOutboundOut(.headers(.init(headers: trailers, endStream: true))), promise: nil)
            } else {
                self.writeHeldHeaders(endStream: true, context: context)
            }
        } else if let trailers = self.responseTrailers {
            context.write(self.wrapOutboundOut(.headers(.init(headers: trailers, endStream: true))), promise: nil)
        } else {
            context.write(self.wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))), promise: nil)
        }
        self.responseTrailers = nil
        self.finishExchange(status: self.exchange?.responseStatus ?? 0, error: nil)
        context.flush()
        self.stopUnfinishedUpload(context: context)
    }

    /// The response is complete while the client is still sending its request (a 401 or 413
    /// before the upload's end, a backend that answered early): RST_STREAM with NO_ERROR asks
    /// it to stop (RFC 9113 §8.1) and closes the stream. Without it the half-closed stream
    /// would hold a `maxConcurrentStreams` slot, and the DATA it withholds, until the client
    /// gave up.
    private func stopUnfinishedUpload(context: ChannelHandlerContext) {
        guard !self.requestEnded else { return }
        self.requestEnded = true
        context.writeAndFlush(self.wrapOutboundOut(.rstStream(.noError)), promise: nil)
    }

    func respond(with error: GatewayError, context: ChannelHandlerContext) {
        let exchange = self.exchange ?? Exchange.bare(requestID: self.worker.requestID(forwarded: nil), protocol: .h2)
        exchange.local = exchange.problem(error)
        self.exchange = exchange
        self.writeLocalResponse(context: context)
    }

    /// The gateway's own answer ends the stream. gRPC clients get it Trailers-Only (SPEC §4.9).
    func writeLocalResponse(context: ChannelHandlerContext) {
        guard let exchange = self.exchange, let response = exchange.local else { return }
        if self.isGRPC {
            let headers = GRPCStatus.trailersOnly(response, requestID: exchange.requestID, secrets: self.worker.snapshot.secretHeaders)
            context.writeAndFlush(self.wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
        } else {
            let sendsBody = exchange.method != .HEAD && !response.body.isEmpty
            let headers = HTTP2Messages.localResponseHeaders(response, requestID: exchange.requestID, sendsBody: sendsBody, secrets: self.worker.snapshot.secretHeaders)
            context.write(self.wrapOutboundOut(.headers(.init(headers: headers, endStream: !sendsBody))), promise: nil)
            if sendsBody {
                exchange.bytesOut = response.body.utf8.count
                let body = context.channel.allocator.buffer(string: response.body)
                context.write(self.wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
            }
            context.flush()
        }
        self.finishExchange(status: Int(response.status.code), error: response.error)
        self.stopUnfinishedUpload(context: context)
    }
}
