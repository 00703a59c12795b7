import NIOCore
import NIOHPACK
import NIOHTTP2

/// The stream as a long-lived stream (docs/streams.md): registered when its response goes on
/// after its head, its credential's deadline watched by the connection's one timer, and ended
/// as HTTP/2 ends one — a gRPC call with `grpc-status: 16` (UNAUTHENTICATED) to the client and
/// RST_STREAM(CANCEL) to the backend, any other stream with RST_STREAM(CANCEL) both ways. The
/// connection's other streams go on.
extension HTTP2ServerStream: StreamOwner {
    /// The response goes on after the backend's read burst that brought its head.
    func streamStarted(context: ChannelHandlerContext) {
        guard !self.streamOpen else { return }
        let deadline = self.openStream()
        guard self.streamOpen, let deadline else { return }
        self.deadlines.credential = deadline
        self.server.streamDeadlineSet(deadline)
    }

    /// The registry ends the stream (a revocation, a reload), or its credential ran out.
    func endStream(_ reason: StreamCloseReason) {
        self.streamOpen = false
        self.deadlines.credential = nil
        self.closeReason = reason
        guard let context = self.context else { return }
        self.run(self.state.credentialEnded(), context: context)
    }

    /// A gRPC call cut short: the backend's stream reset, then what the client was still owed
    /// and the gateway's trailers.
    func endCall(held: HTTP2StreamStateMachine.HeldFrame, trailersOnly: Bool, stopUpload: Bool) {
        self.dropUpstream(after: nil)
        self.stopsUploadAfterLastFrame = stopUpload
        self.writeHeld(held)
        let trailers = GRPCStatus.unauthenticated(
            message: self.closeReason.closeText, trailersOnly: trailersOnly,
            requestID: self.exchange?.requestID)
        self.writeLast(.headers(.init(headers: trailers, endStream: true)))
        self.finishExchange(status: trailersOnly ? 200 : (self.exchange?.responseStatus ?? 200), error: nil)
        self.server.flushSoon()
    }
}

extension GRPCStatus {
    /// The trailers that end a call whose credential no longer holds (docs/streams.md):
    /// `grpc-status: 16` and its message; Trailers-Only (`:status`, `content-type` first) when
    /// no response had begun.
    static func unauthenticated(message: String, trailersOnly: Bool, requestID: String?) -> HPACKHeaders {
        var headers = HPACKHeaders()
        if trailersOnly {
            headers.add(name: ":status", value: "200")
            headers.add(name: "content-type", value: "application/grpc")
        }
        headers.add(name: "grpc-status", value: "16")
        headers.add(name: "grpc-message", value: Self.percentEncoded(message))
        if trailersOnly, let requestID { headers.add(name: "x-request-id", value: requestID, indexing: .nonIndexable) }
        return headers
    }
}
