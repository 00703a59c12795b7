import NIOCore
import NIOHPACK
import NIOHTTP1

/// What the HTTP/2 client gets: the backend's response as HEADERS, DATA and (from an HTTP/2
/// backend) trailers, or the gateway's own answer — a problem document, or for gRPC a
/// Trailers-Only response.
extension HTTP2ServerStream {
    /// Writes the held response HEADERS; with `endStream` they end the response (no body).
    func writeHeldHeaders(endStream: Bool) {
        guard let headers = self.responseHeaders else { return }
        self.responseHeaders = nil
        self.write(.headers(.init(headers: headers, endStream: endStream)))
    }

    /// Writes the held response DATA; with `endStream` it ends the response.
    func writeHeldBody(endStream: Bool) {
        guard let body = self.heldBody else { return }
        self.heldBody = nil
        self.write(.data(.init(data: .byteBuffer(body), endStream: endStream)))
    }

    /// The backend's response is complete: END_STREAM on the trailers, on the held HEADERS or
    /// DATA, or on an empty DATA frame.
    func endResponse() {
        if let trailers = self.responseTrailers {
            self.writeHeldHeaders(endStream: false)
            self.writeHeldBody(endStream: false)
            self.write(.headers(.init(headers: trailers, endStream: true)))
        } else if self.responseHeaders != nil {
            self.writeHeldHeaders(endStream: true)
        } else if self.heldBody != nil {
            self.writeHeldBody(endStream: true)
        } else {
            self.write(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)))
        }
        self.responseTrailers = nil
        self.finishExchange(status: self.exchange?.responseStatus ?? 0, error: nil)
        self.server.flushSoon()
        self.stopUnfinishedUpload()
    }

    /// The response is complete while the client is still sending its request (a 401 or 413
    /// before the upload's end, a backend that answered early): RST_STREAM with NO_ERROR asks
    /// it to stop (RFC 9113 §8.1) and closes the stream. Without it the half-closed stream
    /// would hold a `maxConcurrentStreams` slot, and the DATA it withholds, until the client
    /// gave up.
    private func stopUnfinishedUpload() {
        guard !self.requestEnded else { return }
        self.requestEnded = true
        self.write(.rstStream(.noError))
        self.server.flushSoon()
    }

    func respond(with error: GatewayError) {
        let exchange =
            self.exchange ?? Exchange.bare(requestID: self.environment.requestID(forwarded: nil), protocol: .h2)
        exchange.local = exchange.problem(error)
        self.exchange = exchange
        self.writeLocalResponse()
    }

    /// The gateway's own answer ends the stream. gRPC clients get it Trailers-Only (SPEC §4.9).
    func writeLocalResponse() {
        guard let exchange = self.exchange, let response = exchange.local else { return }
        if self.isGRPC {
            let headers = GRPCStatus.trailersOnly(
                response, requestID: exchange.requestID, secrets: self.environment.snapshot.secretHeaders)
            self.write(.headers(.init(headers: headers, endStream: true)))
        } else {
            let sendsBody = exchange.method != .HEAD && !response.body.isEmpty
            let headers = HTTP2Messages.localResponseHeaders(
                response, requestID: exchange.requestID, sendsBody: sendsBody,
                secrets: self.environment.snapshot.secretHeaders)
            self.write(.headers(.init(headers: headers, endStream: !sendsBody)))
            if sendsBody {
                exchange.bytesOut = response.body.utf8.count
                let body = ByteBuffer(string: response.body)
                self.write(.data(.init(data: .byteBuffer(body), endStream: true)))
            }
        }
        self.server.flushSoon()
        self.finishExchange(status: Int(response.status.code), error: response.error)
        self.stopUnfinishedUpload()
    }
}
