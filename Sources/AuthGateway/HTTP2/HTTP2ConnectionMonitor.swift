import NIOCore
import NIOHTTP2
import NIOSSL

/// The last handler of an HTTP/2 client connection: counts what NIOHTTP2 reports of abusive
/// peers (rapid reset, CONTINUATION, control-frame and empty-DATA floods, oversized header
/// blocks, too many stream errors or glitches) in `auth_gateway_http2_abuse_total{kind}`, and
/// closes the connection once NIOHTTP2 has sent its GOAWAY — other connections never notice.
/// Stream-level errors (a malformed request on one stream) only reset that stream.
final class HTTP2ConnectionMonitor: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    private let metrics: WorkerMetrics

    init(metrics: WorkerMetrics) {
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Connection-level frames (SETTINGS, PING, GOAWAY…) end here: NIOHTTP2 has acted on them.
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let kind = Self.abuseKind(error) {
            self.metrics.increment(.http2Abuse(kind))
            context.close(promise: nil)
        } else if Self.endsConnection(error) {
            context.close(promise: nil)
        }
    }

    /// The metric label of an error NIOHTTP2 raises against an abusive peer.
    static func abuseKind(_ error: Error) -> HTTP2AbuseKind? {
        switch error {
        case is NIOHTTP2Errors.ExcessiveRSTFrames: return .rapidReset
        case is NIOHTTP2Errors.ExcessiveContinuationFrames: return .continuationFlood
        case is NIOHTTP2Errors.ExcessiveControlFrames: return .controlFrameFlood
        case is NIOHTTP2Errors.ExcessiveEmptyDataFrames: return .emptyDataFlood
        case is NIOHTTP2Errors.ExcessivelyLargeHeaderBlock: return .headerBlockTooLarge
        case is NIOHTTP2Errors.ExcessiveStreamErrors: return .streamErrors
        case is NIOHTTP2Errors.ExcessiveNumberOfGlitches: return .glitches
        case is NIOHTTP2Errors.ExcessiveOutboundFrameBuffering: return .outboundBuffering
        // A stream opened beyond the advertised SETTINGS_MAX_CONCURRENT_STREAMS: NIOHTTP2
        // treats it as a connection error (PROTOCOL_ERROR, RFC 9113 §5.1.2 allows either).
        case is NIOHTTP2Errors.MaxStreamsViolation: return .tooManyStreams
        default: return nil
        }
    }

    /// Errors after which NIOHTTP2 has sent GOAWAY and the connection cannot go on.
    static func endsConnection(_ error: Error) -> Bool {
        switch error {
        case is NIOHTTP2Errors.BadClientMagic, is NIOHTTP2Errors.UnableToParseFrame: return true
        case is NIOSSLError: return true
        default: return error is IOError || error is ChannelError
        }
    }
}

@available(*, unavailable)
extension HTTP2ConnectionMonitor: Sendable {}
