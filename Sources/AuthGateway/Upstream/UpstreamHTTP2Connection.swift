import NIOCore
import NIOHTTP2

/// One pooled HTTP/2 connection to a backend (`protocol: "h2"` or `"h2c"`, docs/http2.md): each
/// lease is a stream opened on it (`UpstreamStream`). Used only on its event loop.
final class UpstreamHTTP2Connection: Equatable {
    let channel: Channel
    let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    /// Index of the pool target (URL) it is connected to.
    let targetIndex: Int
    /// `:scheme` of its requests.
    let scheme: String
    weak var pool: UpstreamPool?
    /// Given to each stream: how its exchange went (outlier detection).
    var onOutcome: ((UpstreamOutcome) -> Void)?

    init(channel: Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, targetIndex: Int, scheme: String) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.targetIndex = targetIndex
        self.scheme = scheme
    }

    /// Opens a stream for one exchange; `onClose` runs when it closes (its slot is free).
    func openStream(onClose: @escaping () -> Void) -> EventLoopFuture<UpstreamStream> {
        let handler = UpstreamStreamHandler(scheme: self.scheme, eventLoop: self.channel.eventLoop)
        handler.onClose = onClose
        handler.onOutcome = self.onOutcome
        let stream = UpstreamStream(connection: self, handler: handler)
        let bound = NIOLoopBound(handler, eventLoop: self.channel.eventLoop)
        return self.multiplexer.createStreamChannel { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(bound.value) }
        }.assumeIsolated().map { _ in stream }.nonisolated()
    }

    func close() {
        self.channel.close(promise: nil)
    }

    static func == (lhs: UpstreamHTTP2Connection, rhs: UpstreamHTTP2Connection) -> Bool { lhs === rhs }
}

@available(*, unavailable)
extension UpstreamHTTP2Connection: Sendable {}

/// The connection-level handler of an upstream HTTP/2 connection: tells the pool the peer's
/// stream limit (SETTINGS_MAX_CONCURRENT_STREAMS), a GOAWAY (no new streams) and the close.
final class UpstreamHTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    var onStreamCapacity: ((Int) -> Void)?
    var onGoAway: (() -> Void)?
    /// Called once when the connection closes.
    var onClose: (() -> Void)?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data).payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                self.onStreamCapacity?(setting.value)
            }
        case .goAway:
            self.onGoAway?()
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let onClose = self.onClose
        self.onClose = nil
        self.onStreamCapacity = nil
        self.onGoAway = nil
        onClose?()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension UpstreamHTTP2ConnectionHandler: Sendable {}
