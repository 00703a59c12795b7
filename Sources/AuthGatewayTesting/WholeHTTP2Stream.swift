import AuthGateway
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2

extension GatewayBenchmarkSupport {
    /// One whole request as an HTTP/2 stream through the real client pipeline
    /// (`EmbeddedGateway`): a NIOHTTP2 client on an embedded channel opens a stream, its bytes
    /// go to the gateway's connection, the backend (embedded HTTP/1.1, pooled) answers, and
    /// the response frames come back to the client. The counterpart of `WholeRequest`, so that
    /// a stream's cost compares with a request's, without system calls.
    public final class WholeHTTP2Stream {
        private let gateway: EmbeddedGateway
        private let server: EmbeddedChannel
        private let client: EmbeddedChannel
        private let sink = FrameSink()
        private let headers: HPACKHeaders
        private let response: ByteBuffer
        private var nextStream = 1

        /// `configuration`: gateway JSON whose backend `api` is never really dialled.
        /// `token`: sent never-indexed (as nghttp2 sends `authorization`), so it is decoded
        /// for every stream. `response`: the backend's raw HTTP/1.1 answer.
        public init(configuration: String, token: String, response: String, now: Double) throws {
            self.gateway = try EmbeddedGateway(configuration: configuration, clock: { now })
            self.server = try self.gateway.connectClient()
            self.client = EmbeddedChannel(loop: self.gateway.loop)
            try self.client.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
            try self.client.pipeline.syncOperations.addHandler(self.sink)
            try self.client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            var headers = HPACKHeaders([(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "127.0.0.1:18090")])
            headers.add(name: "authorization", value: "Bearer \(token)", indexing: .neverIndexed)
            self.headers = headers
            self.response = ByteBuffer(string: response)
            try self.shuttle()
        }

        /// Runs one stream; returns the number of response body bytes the client got.
        public func run() throws -> Int {
            let stream = HTTP2StreamID(self.nextStream)
            self.nextStream += 2
            self.sink.bodyBytes = 0
            self.client.writeAndFlush(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: self.headers, endStream: true))), promise: nil)
            try self.shuttle()
            guard let upstream = self.gateway.upstreams.last else { return 0 }
            while try upstream.readOutbound(as: ByteBuffer.self) != nil {}
            try upstream.writeInbound(self.response)
            try self.shuttle()
            return self.sink.bodyBytes
        }

        /// Moves bytes between client and gateway until both are quiet.
        private func shuttle() throws {
            var moved = true
            while moved {
                moved = false
                self.gateway.loop.run()
                while let data = try self.client.readOutbound(as: IOData.self) {
                    guard case .byteBuffer(let bytes) = data else { continue }
                    moved = true
                    try self.server.writeInbound(bytes)
                }
                while let data = try self.server.readOutbound(as: IOData.self) {
                    guard case .byteBuffer(let bytes) = data else { continue }
                    moved = true
                    try self.client.writeInbound(bytes)
                }
            }
        }

        /// Counts the response body and gives the connection's window back (NIOHTTP2 in frame
        /// mode does not: without it the gateway could send only 64 KiB in all).
        private final class FrameSink: ChannelInboundHandler {
            typealias InboundIn = HTTP2Frame
            typealias OutboundOut = HTTP2Frame
            var bodyBytes = 0
            private var unacknowledged = 0

            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                guard case .data(let data) = self.unwrapInboundIn(data).payload, case .byteBuffer(let bytes) = data.data else { return }
                self.bodyBytes += bytes.readableBytes
                self.unacknowledged += bytes.readableBytes
                if self.unacknowledged >= 16_384 {
                    let frame = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: self.unacknowledged))
                    self.unacknowledged = 0
                    context.writeAndFlush(self.wrapOutboundOut(frame), promise: nil)
                }
            }
        }
    }
}
