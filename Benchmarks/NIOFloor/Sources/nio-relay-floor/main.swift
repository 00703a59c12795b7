// The floor under the gateway's HTTP/1.1 proxy numbers: the least a reverse proxy built on
// SwiftNIO does per request, with none of the gateway (docs/benchmarks.md, "the proxy floor").
//
// One event-loop thread, as the benchmark runs the gateway. Each client connection gets its own
// keep-alive connection to the backend, opened on the same loop when the client connects. A
// client's bytes are scanned for the end of each request head (GET only: no body framing), the
// head's `Authorization` line is compared byte for byte with the token in TOKEN_FILE (what a
// perfect token cache costs; 401 otherwise), and the head goes to the backend unchanged. The
// backend's bytes go back to the client as they arrive: no response parsing, no framing, no
// header rewriting, no routing, no pool. Flushed once per read burst on each side.
//
// So nothing that forwards HTTP/1.1 on SwiftNIO through a backend connection can do less per
// request: a real proxy must also parse, frame, rewrite and pool. Its rate, against HAProxy's
// plain proxy in the same run, is the most the HTTP/1.1 target "gateway ÷ HAProxy plain" can
// reach on SwiftNIO (scripts/bench/proxy-floor.sh).
//
//   nio-relay-floor PORT BACKEND_PORT TOKEN_FILE
import FloorSupport
import NIOCore
import NIOPosix

let commandLine = FloorCommandLine.parse(program: "nio-relay-floor", withBackend: true)
let token = commandLine.token
let authorizationValue = Array((" Bearer " + token + "\r\n").utf8)
let unauthorized = ByteBuffer(string: "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")

/// The client side: complete heads go to the backend, refused ones get a 401.
final class ClientRelay: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let backendPort: Int
    private var backend: Channel?
    private var pending = ByteBuffer()
    private var backendFlushPending = false
    private var clientFlushPending = false

    init(backendPort: Int) { self.backendPort = backendPort }

    func channelActive(context: ChannelHandlerContext) {
        let client = context.channel
        let relay = NIOLoopBound(self, eventLoop: context.eventLoop)
        FloorServer.openBackend(for: context, port: self.backendPort, makeHandler: { BackendRelay(client: client) }) {
            relay.value.backend = $0
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.backend?.close(promise: nil)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let backend = self.backend else { return }
        var bytes = Self.unwrapInboundIn(data)
        if self.pending.readableBytes == 0, let only = bytes.withUnsafeReadableBytes({ HeadBytes.headLength(in: $0) }),
            only == bytes.readableBytes
        {
            // The usual case: exactly one head in the read, relayed without a copy.
            self.relay(bytes, to: backend, context: context)
            return
        }
        self.pending.writeBuffer(&bytes)
        while let headLength = self.pending.withUnsafeReadableBytes({ HeadBytes.headLength(in: $0) }) {
            self.relay(self.pending.readSlice(length: headLength)!, to: backend, context: context)
        }
        self.pending.discardReadBytes()
    }

    private func relay(_ head: ByteBuffer, to backend: Channel, context: ChannelHandlerContext) {
        if head.withUnsafeReadableBytes({ HeadBytes.contains($0, authorizationValue) }) {
            backend.write(head, promise: nil)
            self.backendFlushPending = true
        } else {
            context.write(Self.wrapOutboundOut(unauthorized), promise: nil)
            self.clientFlushPending = true
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.backendFlushPending {
            self.backendFlushPending = false
            self.backend?.flush()
        }
        if self.clientFlushPending {
            self.clientFlushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

}

/// The backend side: its bytes go to the client as they come, flushed once per read burst.
final class BackendRelay: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let client: Channel
    private var flushPending = false

    init(client: Channel) { self.client = client }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.client.write(Self.unwrapInboundIn(data), promise: nil)
        self.flushPending = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.flushPending {
            self.flushPending = false
            self.client.flush()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.client.close(promise: nil)
        context.fireChannelInactive()
    }
}

try FloorServer.serve(
    program: "nio-relay-floor", port: commandLine.port, detail: ", backend 127.0.0.1:\(commandLine.backendPort)"
) { ClientRelay(backendPort: commandLine.backendPort) }
