import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The echo backend's WebSocket side, for the demo's live page (docs/streams.md, "The demo"):
/// `GET /live/` is a page that opens a tunnel to `/live/socket` through the gateway with the
/// browser's session cookie and shows each tick and how the tunnel closed; signing out in
/// another tab closes it with 1008 on the spot.
enum EchoWebSocket {
    /// The page's path and the tunnel's (the demo's route `live` forwards them unchanged).
    static let pagePath = DemoRunner.livePath
    static let socketPath = DemoRunner.livePath + "socket"

    /// The `Sec-WebSocket-Accept` of a request's `Sec-WebSocket-Key` (RFC 6455 §4.2.2).
    static func acceptValue(key: String) -> String {
        Data(Insecure.SHA1.hash(data: Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    /// After the 101 went out: the WebSocket handlers go to the front of the pipeline, between
    /// the socket and the HTTP handlers, which then leave (the echo handler left already). Done
    /// by hand rather than with NIO's upgrade handler, which looks only at a connection's first
    /// request: the gateway may send the upgrade on a pooled connection that carried others.
    static func switchToWebSocket(_ pipeline: ChannelPipeline.SynchronousOperations) throws {
        typealias Position = ChannelPipeline.SynchronousOperations.Position
        let encoder = WebSocketFrameEncoder()
        let decoder = ByteToMessageHandler(WebSocketFrameDecoder())
        let errors = WebSocketProtocolErrorHandler()
        try pipeline.addHandler(encoder, position: Position.first)
        try pipeline.addHandler(decoder, position: Position.after(encoder))
        try pipeline.addHandler(errors, position: Position.after(decoder))
        try pipeline.addHandler(EchoWebSocketHandler(), position: Position.after(errors))
        try pipeline.removeHandler(pipeline.handler(type: HTTPServerProtocolErrorHandler.self), promise: nil)
        try pipeline.removeHandler(pipeline.handler(type: HTTPServerPipelineHandler.self), promise: nil)
        try pipeline.removeHandler(
            pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self), promise: nil)
        try pipeline.removeHandler(pipeline.handler(type: HTTPResponseEncoder.self), promise: nil)
    }

    /// The live page. Its script asks for nothing but the tunnel and, every 10 s, `/live/keepalive`
    /// (a request that lets the gateway refresh the session, which moves the tunnel's deadline).
    static let page = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Live tunnel · auth-gateway demo</title>
        <style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}
        #status{font-weight:bold}ol{font-family:monospace}</style>
        </head><body>
        <h1>A WebSocket through the gateway</h1>
        <p>This page opened a WebSocket tunnel to the echo backend at <code>\(socketPath)</code>,
        let in by your session cookie. The backend sends a tick every second.</p>
        <p>Tunnel: <span id="status">connecting…</span></p>
        <p><a id="sign-out" href="/.gateway/sign-out" target="_blank">Sign out in a new tab</a>:
        the gateway closes this tunnel at once with close code 1008 — on every instance.</p>
        <ol id="ticks" reversed></ol>
        <script>
        const status = document.getElementById("status");
        const ticks = document.getElementById("ticks");
        const socket = new WebSocket(location.origin.replace(/^http/, "ws") + "\(socketPath)");
        socket.onopen = () => { status.textContent = "open"; };
        socket.onmessage = (event) => {
          const item = document.createElement("li");
          item.textContent = event.data;
          ticks.prepend(item);
          while (ticks.children.length > 10) ticks.lastElementChild.remove();
        };
        socket.onclose = (event) => {
          status.textContent = "closed by the gateway: " + event.code + (event.reason ? " (" + event.reason + ")" : "");
          status.dataset.code = String(event.code);
          clearInterval(keepalive);
        };
        const keepalive = setInterval(() => { fetch("/live/keepalive", { headers: { Accept: "application/json" } }); }, 10000);
        </script>
        </body></html>

        """
}

/// One tunnel's backend: a text frame `tick <i>` every second; text frames echoed; a ping
/// answered; a close frame answered with the same code, then the connection closed.
final class EchoWebSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var index = 0
    private var closing = false

    func handlerAdded(context: ChannelHandlerContext) {
        self.tick(context: context)
    }

    private func tick(context: ChannelHandlerContext) {
        guard !self.closing, context.channel.isActive else { return }
        self.send(.text, context.channel.allocator.buffer(string: "tick \(self.index)"), context: context)
        self.index += 1
        context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) { self.tick(context: context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        switch frame.opcode {
        case .connectionClose:
            guard !self.closing else {
                context.close(promise: nil)
                return
            }
            self.closing = true
            var received = frame.unmaskedData
            var reply = context.channel.allocator.buffer(capacity: 2)
            reply.write(webSocketErrorCode: received.readWebSocketErrorCode() ?? .normalClosure)
            context.writeAndFlush(
                self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reply))
            ).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        case .ping:
            self.send(.pong, frame.unmaskedData, context: context)
        case .text where !self.closing:
            self.send(.text, frame.unmaskedData, context: context)
        default:
            break
        }
    }

    private func send(_ opcode: WebSocketOpcode, _ data: ByteBuffer, context: ChannelHandlerContext) {
        context.writeAndFlush(self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: opcode, data: data)), promise: nil)
    }
}
