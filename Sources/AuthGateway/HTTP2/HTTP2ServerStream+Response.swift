import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// What the HTTP/2 client gets: the backend's response as HEADERS, DATA and (from an HTTP/2
/// backend) trailers, or the gateway's own answer — a problem document, or for gRPC a
/// Trailers-Only response. Which frames go when, and which carries END_STREAM, is the state
/// machine's (`HTTP2StreamStateMachine.Response`); these write them.
extension HTTP2ServerStream {
    /// Writes a frame the response held back, without ending the stream.
    func writeHeld(_ frame: HTTP2StreamStateMachine.HeldFrame) {
        switch frame {
        case .none: break
        case .headers(let headers): self.write(.headers(.init(headers: headers, endStream: false)))
        case .data(let data): self.write(.data(.init(data: .byteBuffer(data), endStream: false)))
        }
    }

    /// The backend's response is complete: its last frames, END_STREAM on the trailers, on the
    /// held HEADERS or DATA, or on an empty DATA frame.
    func endResponse(_ last: HTTP2StreamStateMachine.LastFrames) {
        switch last {
        case .trailers(let trailers, let held):
            self.writeHeld(held)
            self.writeLast(.headers(.init(headers: trailers, endStream: true)))
        case .headers(let headers):
            self.writeLast(.headers(.init(headers: headers, endStream: true)))
        case .data(let data):
            self.writeLast(.data(.init(data: .byteBuffer(data), endStream: true)))
        case .emptyData:
            self.writeLast(.data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)))
        }
        self.finishExchange(status: self.exchange?.responseStatus ?? 0, error: nil)
        self.server.flushSoon()
    }

    /// Writes the response's last frame (END_STREAM). When the response stops an upload, the
    /// RST_STREAM NO_ERROR follows once that frame has left (`stopUpload`).
    func writeLast(_ payload: HTTP2Frame.FramePayload) {
        guard self.stopsUploadAfterLastFrame, let context = self.context else {
            self.write(payload)
            return
        }
        self.stopsUploadAfterLastFrame = false
        let written = context.eventLoop.makePromise(of: Void.self)
        self.write(payload, promise: written)
        // Failed when the stream closed first (the client reset it, or ended its upload after
        // all): then there is nothing to stop.
        written.futureResult.assumeIsolated().whenSuccess { self.reset(.noError) }
    }

    /// The response is complete while the client is still sending its request (a 401 or 413
    /// before the upload's end, a backend that answered early): RST_STREAM with NO_ERROR asks
    /// it to stop (RFC 9113 §8.1) and closes the stream. Without it the half-closed stream
    /// would hold a `maxConcurrentStreams` slot, and the DATA it withholds, until the client
    /// gave up.
    ///
    /// The reset goes out once the response's last frame has been written (`writeLast`), not
    /// with it: NIOHTTP2 holds a stream's DATA (and the HEADERS behind it) in its flow-control
    /// buffer until a flush finds window for it, and drops what it still holds when the stream
    /// closes — a reset written right after the response would cut its body off. Only if no
    /// last frame was written does the reset go now.
    func stopUpload() {
        guard self.stopsUploadAfterLastFrame else { return }
        self.stopsUploadAfterLastFrame = false
        self.reset(.noError)
    }

    func respond(with error: GatewayError) {
        let exchange =
            self.exchange ?? Exchange.bare(requestID: self.environment.requestID(forwarded: nil), protocol: .h2)
        exchange.local = exchange.problem(error)
        self.exchange = exchange
        self.writeLocalResponse()
    }

    /// The gateway's own answer ends the stream. gRPC clients get it Trailers-Only
    /// (docs/http2.md).
    func writeLocalResponse() {
        guard let exchange = self.exchange, let response = exchange.local else { return }
        if self.state.isGRPC {
            let headers = GRPCStatus.trailersOnly(
                response, requestID: exchange.requestID, secrets: self.environment.snapshot.secretHeaders)
            self.writeLast(.headers(.init(headers: headers, endStream: true)))
        } else {
            let sendsBody = exchange.method != .HEAD && !response.body.isEmpty
            let headers = HTTP2Messages.localResponseHeaders(
                response, requestID: exchange.requestID, sendsBody: sendsBody,
                secrets: self.environment.snapshot.secretHeaders)
            if sendsBody {
                self.write(.headers(.init(headers: headers, endStream: false)))
                exchange.bytesOut = response.body.utf8.count
                let body = ByteBuffer(string: response.body)
                self.writeLast(.data(.init(data: .byteBuffer(body), endStream: true)))
            } else {
                self.writeLast(.headers(.init(headers: headers, endStream: true)))
            }
        }
        self.server.flushSoon()
        self.finishExchange(status: Int(response.status.code), error: response.error)
    }
}
