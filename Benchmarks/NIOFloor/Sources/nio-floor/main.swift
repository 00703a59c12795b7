// The floor under the gateway's numbers: SwiftNIO and NIOHTTP2 with none of the gateway.
//
// One event-loop thread serves cleartext HTTP/1.1 and h2c (prior knowledge) on one port, as the
// gateway does. Every request is answered at once, without a backend: 200 "ok" when its
// `authorization` field is byte for byte the token in TOKEN_FILE (what a perfect token cache
// would cost), 401 otherwise. HTTP/2 is served the way the gateway serves it: `NIOHTTP2Handler`
// at the frame level (no stream multiplexer), its header validation on, the same SETTINGS, one
// flush per read burst. HTTP/1.1 is a byte scan for the end of each head, no parser at all.
//
// So the HTTP/2 rate here is the most any server built on NIOHTTP2 can reach on this load,
// whatever it does per stream, and the HTTP/1.1 rate the most a SwiftNIO server can reach.
//
//   nio-floor PORT TOKEN_FILE
import FloorSupport
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix

let commandLine = FloorCommandLine.parse(program: "nio-floor", withBackend: false)
let token = commandLine.token
let expectedAuthorization = "Bearer " + token

/// Picks HTTP/1.1 or h2c from the first bytes, as the gateway's `CleartextProtocolDetector`
/// (but from the first read alone: the load generators send the whole preface at once).
final class ProtocolDetector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = Self.unwrapInboundIn(data)
        let isHTTP2 = bytes.readableBytesView.starts(with: "PRI ".utf8)
        let sync = context.pipeline.syncOperations
        do {
            if isHTTP2 {
                var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                configuration.initialSettings = [
                    HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                    HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
                ]
                try sync.addHandler(
                    NIOHTTP2Handler(mode: .server, connectionConfiguration: configuration), position: .after(self))
                try sync.addHandler(HTTP2Responder(), position: .last)
            } else {
                try sync.addHandler(HTTP1Responder(), position: .after(self))
            }
        } catch {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        sync.removeHandler(self, promise: nil)
    }
}

/// Each HEADERS with END_STREAM gets its whole answer; flushed once per read burst.
final class HTTP2Responder: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var flushPending = false
    private let ok: HPACKHeaders = [":status": "200", "content-type": "text/plain", "content-length": "2"]
    private let unauthorized: HPACKHeaders = [":status": "401", "content-length": "0"]
    private let body = ByteBuffer(string: "ok")

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        guard case .headers(let headers) = frame.payload, headers.endStream else { return }
        if headers.headers.first(name: "authorization") == expectedAuthorization {
            context.write(
                Self.wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .headers(.init(headers: self.ok)))),
                promise: nil)
            context.write(
                Self.wrapOutboundOut(
                    HTTP2Frame(
                        streamID: frame.streamID, payload: .data(.init(data: .byteBuffer(self.body), endStream: true)))),
                promise: nil
            )
        } else {
            context.write(
                Self.wrapOutboundOut(
                    HTTP2Frame(
                        streamID: frame.streamID, payload: .headers(.init(headers: self.unauthorized, endStream: true)))
                ),
                promise: nil
            )
        }
        self.flushPending = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.flushPending {
            self.flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }
}

/// Each complete head gets a fixed answer; flushed once per read burst.
final class HTTP1Responder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var pending = ByteBuffer()
    private var flushPending = false
    private let ok = ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
    private let unauthorized = ByteBuffer(string: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
    private let authorizationLine = Array(("\r\nauthorization: " + expectedAuthorization + "\r\n").utf8)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = Self.unwrapInboundIn(data)
        self.pending.writeBuffer(&bytes)
        while let headLength = self.pending.withUnsafeReadableBytes({ HeadBytes.headLength(in: $0) }) {
            let authorized = self.pending.withUnsafeReadableBytes { head in
                HeadBytes.contains(UnsafeRawBufferPointer(rebasing: head[..<headLength]), self.authorizationLine)
            }
            self.pending.moveReaderIndex(forwardBy: headLength)
            context.write(Self.wrapOutboundOut(authorized ? self.ok : self.unauthorized), promise: nil)
            self.flushPending = true
        }
        self.pending.discardReadBytes()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.flushPending {
            self.flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

}

try FloorServer.serve(program: "nio-floor", port: commandLine.port) { ProtocolDetector() }
