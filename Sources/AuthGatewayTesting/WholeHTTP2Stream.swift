import AuthGateway
import NIOCore
import NIOEmbedded

extension GatewayBenchmarkSupport {
    /// One whole request as an HTTP/2 stream through the real client pipeline
    /// (`EmbeddedGateway`): the counterpart of `WholeRequest`, so that a stream's cost
    /// compares with a request's — the gateway's own work only, without system calls.
    ///
    /// The client is raw bytes, as `WholeRequest`'s is: one HEADERS frame whose HPACK block
    /// needs no client state (static-table names, literals never indexed — the token arrives
    /// as nghttp2 sends `authorization`, to be decoded every time), written with a new stream
    /// ID per run; the response frames are counted, not decoded. One WINDOW_UPDATE at the start
    /// opens the connection's window for good.
    public final class WholeHTTP2Stream {
        private let gateway: EmbeddedGateway
        private let server: EmbeddedChannel
        private var headersFrame: ByteBuffer
        private let response: ByteBuffer
        private var nextStream: UInt32 = 1

        /// `configuration`: gateway JSON whose backend `api` is never really dialled.
        /// `response`: the backend's raw HTTP/1.1 answer.
        public init(configuration: String, token: String, response: String, now: Double) throws {
            self.gateway = try EmbeddedGateway(configuration: configuration, clock: { now })
            self.server = try self.gateway.connectClient()
            self.response = ByteBuffer(string: response)
            var block = ByteBuffer()
            block.writeBytes([0x82, 0x86, 0x84])  // :method GET, :scheme http, :path / (static table)
            Self.writeLiteral(nameIndex: 1, value: "127.0.0.1:18090", neverIndexed: false, into: &block)  // :authority
            // authorization
            Self.writeLiteral(nameIndex: 23, value: "Bearer \(token)", neverIndexed: true, into: &block)
            // END_STREAM | END_HEADERS
            self.headersFrame = Self.frame(type: 0x1, flags: 0x5, stream: 1, payload: block)
            var preface = ByteBuffer(string: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            preface.writeImmutableBuffer(Self.frame(type: 0x4, flags: 0, stream: 0, payload: ByteBuffer()))  // SETTINGS
            // its ACK
            preface.writeImmutableBuffer(Self.frame(type: 0x4, flags: 0x1, stream: 0, payload: ByteBuffer()))
            var increment = ByteBuffer()
            increment.writeInteger(UInt32(Int32.max) - 65_535)
            // WINDOW_UPDATE
            preface.writeImmutableBuffer(Self.frame(type: 0x8, flags: 0, stream: 0, payload: increment))
            try self.server.writeInbound(preface)
            _ = try self.drain()
        }

        /// Runs one stream; returns the number of response bytes (frames) the client got.
        public func run() throws -> Int {
            self.headersFrame.setInteger(self.nextStream, at: self.headersFrame.readerIndex + 5)
            self.nextStream += 2
            try self.server.writeInbound(self.headersFrame)
            guard let upstream = self.gateway.upstreams.last else { return 0 }
            while try upstream.readOutbound(as: ByteBuffer.self) != nil {}
            try upstream.writeInbound(self.response)
            return try self.drain()
        }

        private func drain() throws -> Int {
            self.gateway.loop.run()
            var bytes = 0
            while let data = try self.server.readOutbound(as: IOData.self) { bytes += data.readableBytes }
            return bytes
        }

        private static func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: ByteBuffer) -> ByteBuffer {
            var frame = ByteBuffer()
            frame.writeInteger(UInt8(payload.readableBytes >> 16))
            frame.writeInteger(UInt16(payload.readableBytes & 0xFFFF))
            frame.writeInteger(type)
            frame.writeInteger(flags)
            frame.writeInteger(stream)
            frame.writeImmutableBuffer(payload)
            return frame
        }

        /// RFC 7541 §6.2.2 / §6.2.3: a literal with an indexed name, not Huffman-coded.
        private static func writeLiteral(
            nameIndex: Int, value: String, neverIndexed: Bool, into block: inout ByteBuffer
        ) {
            self.writeInteger(nameIndex, prefixBits: 4, first: neverIndexed ? 0x10 : 0x00, into: &block)
            self.writeInteger(value.utf8.count, prefixBits: 7, first: 0x00, into: &block)
            block.writeString(value)
        }

        private static func writeInteger(_ value: Int, prefixBits: Int, first: UInt8, into block: inout ByteBuffer) {
            let limit = (1 << prefixBits) - 1
            guard value >= limit else {
                block.writeInteger(first | UInt8(value))
                return
            }
            block.writeInteger(first | UInt8(limit))
            var rest = value - limit
            while rest >= 128 {
                block.writeInteger(UInt8(rest & 0x7F | 0x80))
                rest >>= 7
            }
            block.writeInteger(UInt8(rest))
        }
    }
}
