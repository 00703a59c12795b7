import NIOCore

/// Which protocol a cleartext connection speaks, from its first bytes (docs/http2.md: h2c by prior
/// knowledge, anything else HTTP/1.1). Pure: bytes in, a verdict out.
enum CleartextProtocol: Equatable {
    case http1
    case http2
    /// The bytes so far are a prefix of the HTTP/2 connection preface: wait for more.
    case undecided

    /// The client connection preface of RFC 9113 §3.4.
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func classify(_ bytes: ByteBuffer) -> CleartextProtocol {
        let count = min(bytes.readableBytes, Self.preface.count)
        let matches = bytes.withUnsafeReadableBytes { raw in
            (0..<count).allSatisfy { raw[$0] == Self.preface[$0] }
        }
        guard matches else { return .http1 }
        return count == Self.preface.count ? .http2 : .undecided
    }
}

/// The first handler of a cleartext connection when HTTP/2 is on: reads until the first bytes
/// tell HTTP/2's preface from an HTTP/1.1 request, then puts that protocol's handlers in its
/// place and hands them the bytes. An HTTP/1.1 request is recognised by its first byte (no
/// method starts with "PRI * HTTP/2.0"), so it costs nothing but this handler's removal.
///
/// A client that sends nothing, or stops inside the preface, is closed after
/// `idleSeconds` / `requestHeaderSeconds`, as the HTTP/1.1 handler would.
final class CleartextProtocolDetector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let configureHTTP1: (Channel) throws -> Void
    private let configureHTTP2: (Channel) throws -> Void
    private let idleTimeout: TimeAmount
    private let headTimeout: TimeAmount
    private var buffered: ByteBuffer?
    private var timer: Scheduled<Void>?
    private var decided = false

    init(
        idleTimeout: TimeAmount, headTimeout: TimeAmount, configureHTTP1: @escaping (Channel) throws -> Void,
        configureHTTP2: @escaping (Channel) throws -> Void
    ) {
        self.idleTimeout = idleTimeout
        self.headTimeout = headTimeout
        self.configureHTTP1 = configureHTTP1
        self.configureHTTP2 = configureHTTP2
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.arm(self.idleTimeout, context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = self.unwrapInboundIn(data)
        if var buffered = self.buffered {
            buffered.writeBuffer(&bytes)
            bytes = buffered
        }
        switch CleartextProtocol.classify(bytes) {
        case .undecided:
            if self.buffered == nil { self.arm(self.headTimeout, context: context) }
            self.buffered = bytes
        case .http1:
            self.hand(bytes, to: self.configureHTTP1, context: context)
        case .http2:
            self.hand(bytes, to: self.configureHTTP2, context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !self.decided {
            // Draining: nothing was asked on this connection yet.
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func hand(_ bytes: ByteBuffer, to configure: (Channel) throws -> Void, context: ChannelHandlerContext) {
        self.decided = true
        self.buffered = nil
        self.timer?.cancel()
        self.timer = nil
        do {
            try configure(context.channel)
        } catch {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(self.wrapInboundOut(bytes))
        context.fireChannelReadComplete()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func arm(_ timeout: TimeAmount, context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            if !self.decided { context.close(promise: nil) }
        }
    }
}

@available(*, unavailable)
extension CleartextProtocolDetector: Sendable {}
