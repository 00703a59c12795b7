import NIOCore
import NIOHPACK

/// What `HTTP2StreamStateMachine` asks of its stream.
extension HTTP2StreamStateMachine {
    enum Action: Equatable {
        case none
        /// Plan the new request (route, authenticate), then report `decided…`.
        case decide
        /// Run the exchange's action as both framings do.
        case exchange(ExchangeStateMachine.Action)
        /// Write the frame the response held back (a newer DATA part took its place, or the
        /// backend's read burst ended): `bodyBytes` more of the response body went to the
        /// stream.
        case writeHeld(HeldFrame, bodyBytes: Int)
        /// The backend's response is complete and ends with `last`; the upstream is released
        /// (reusable or not: the exchange's `finishResponse`), or kept while the request body
        /// is not complete (nil: `finishResponseOnly`); then, when `stopUpload`, RST_STREAM
        /// NO_ERROR asks the client to stop sending (RFC 9113 §8.1), once the response's last
        /// frame has been written (a reset any sooner would make NIOHTTP2 drop what it holds).
        case endResponse(last: LastFrames, reuseUpstream: Bool?, stopUpload: Bool)
        /// The exchange ended with this action (the gateway's own answer, a failure, the client
        /// gone); then, when `stopUpload`, RST_STREAM NO_ERROR asks the client to stop sending,
        /// once the answer's last frame has been written.
        case endExchange(ExchangeStateMachine.Action, stopUpload: Bool)
        /// A gRPC call whose credential ended (docs/streams.md): the backend's stream is reset,
        /// `held` goes to the client, then trailers with `grpc-status: 16` (with `:status` and
        /// `content-type` when `trailersOnly`: no response had begun), which end the stream;
        /// then, when `stopUpload`, RST_STREAM NO_ERROR stops the client's upload.
        case endCall(held: HeldFrame, trailersOnly: Bool, stopUpload: Bool)
    }

    /// What to do with a DATA frame: hand its bytes on (`requestBody`, then `requestEnd` on
    /// END_STREAM), or nothing but `refuse`'s action, when they break `content-length`.
    enum DataCheck: Equatable {
        case deliver
        case refuse(Action)
    }
}
