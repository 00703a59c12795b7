import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// An HTTP/2 client for frame-level tests, on NIOHTTP2: opens streams, writes the frames a test
/// chooses — with header validation off when a test sends what a well-behaved client never
/// would — and collects what comes back on each stream.
package final class H2TestClient: Sendable {
    private let channel: Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let connectionFrames: NIOLockedValueBox<[HTTP2Frame.FramePayload]>

    private init(
        channel: Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer,
        connectionFrames: NIOLockedValueBox<[HTTP2Frame.FramePayload]>
    ) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.connectionFrames = connectionFrames
    }

    /// `validateHeaders: false` lets the client send malformed header blocks (uppercase names,
    /// CR/LF, connection-specific fields, bad pseudo-headers). `tls`: HTTP/2 over TLS (the
    /// context offers ALPN `h2`), the server named `serverName`; else h2c by prior knowledge.
    package static func connect(
        port: Int, validateHeaders: Bool = true, tls: NIOSSLContext? = nil, serverName: String = "localhost"
    ) async throws -> H2TestClient {
        let connectionFrames = NIOLockedValueBox<[HTTP2Frame.FramePayload]>([])
        let channel = try await ClientBootstrap(group: TestGroup.shared)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    configuration.headerBlockValidation = validateHeaders ? .enabled : .disabled
                    configuration.contentLengthValidation = validateHeaders ? .enabled : .disabled
                    let sync = channel.pipeline.syncOperations
                    if let tls { try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName)) }
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .client, eventLoop: channel.eventLoop, connectionConfiguration: configuration
                        ) { $0.close() })
                    try sync.addHandler(FrameRecorder(frames: connectionFrames))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        let multiplexer = try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: NIOHTTP2Handler.self).syncMultiplexer()
        }.get()
        return H2TestClient(channel: channel, multiplexer: multiplexer, connectionFrames: connectionFrames)
    }

    /// What came back on one stream.
    package struct StreamResult: Sendable {
        package var frames: [HTTP2Frame.FramePayload] = []

        /// The first HEADERS block.
        package var headers: HPACKHeaders? {
            for frame in self.frames { if case .headers(let headers) = frame { return headers.headers } }
            return nil
        }

        package var status: Int? { self.headers?.first(name: ":status").flatMap(Int.init) }

        package var body: ByteBuffer {
            var body = ByteBuffer()
            for frame in self.frames {
                if case .data(let data) = frame, case .byteBuffer(var bytes) = data.data { body.writeBuffer(&bytes) }
            }
            return body
        }

        /// The stream was reset (RST_STREAM), with its code.
        package var resetCode: HTTP2ErrorCode? {
            for frame in self.frames { if case .rstStream(let code) = frame { return code } }
            return nil
        }

        /// The HEADERS frame that ended the stream (Trailers-Only or trailers).
        package var finalHeaders: HPACKHeaders? {
            for frame in self.frames.reversed() {
                if case .headers(let headers) = frame, headers.endStream { return headers.headers }
            }
            return nil
        }
    }

    /// Opens a stream, writes `frames`, and waits (up to `timeout`) until the stream closes.
    package func exchange(
        _ frames: [HTTP2Frame.FramePayload], timeout: TimeAmount = .seconds(30)
    ) async throws -> StreamResult {
        let recorded = NIOLockedValueBox(StreamResult())
        let stream = try await self.multiplexer.createStreamChannel { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(StreamRecorder(result: recorded))
            }
        }.get()
        for frame in frames { stream.write(frame, promise: nil) }
        stream.flush()
        let closed = stream.closeFuture
        let timer = stream.eventLoop.scheduleTask(in: timeout) { stream.close(promise: nil) }
        try? await closed.get()
        timer.cancel()
        return recorded.withLockedValue { $0 }
    }

    /// Frames on stream 0 so far (SETTINGS, GOAWAY…).
    package var connectionLevelFrames: [HTTP2Frame.FramePayload] { self.connectionFrames.withLockedValue { $0 } }

    package var goAwayReceived: Bool {
        self.connectionLevelFrames.contains { if case .goAway = $0 { return true } else { return false } }
    }

    package var isActive: Bool { self.channel.isActive }

    package func close() async {
        try? await self.channel.close()
    }

    /// A request HEADERS block: pseudo-headers first, then `fields` as given.
    package static func request(
        _ method: String = "GET", path: String, authority: String = "127.0.0.1", scheme: String = "http",
        fields: [(String, String)] = []
    ) -> HPACKHeaders {
        var headers = HPACKHeaders([
            (":method", method), (":scheme", scheme), (":authority", authority), (":path", path),
        ])
        for (name, value) in fields { headers.add(name: name, value: value) }
        return headers
    }
}

private final class StreamRecorder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame.FramePayload
    let result: NIOLockedValueBox<H2TestClient.StreamResult>

    init(result: NIOLockedValueBox<H2TestClient.StreamResult>) { self.result = result }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        self.result.withLockedValue { $0.frames.append(frame) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

private final class FrameRecorder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame
    let frames: NIOLockedValueBox<[HTTP2Frame.FramePayload]>

    init(frames: NIOLockedValueBox<[HTTP2Frame.FramePayload]>) { self.frames = frames }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        self.frames.withLockedValue { $0.append(frame.payload) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
