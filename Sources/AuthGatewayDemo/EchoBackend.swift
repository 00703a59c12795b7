import AuthGateway
import Foundation
import Crypto
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// The sample backend of `auth-gateway demo`, also used by the integration tests. It never
/// buffers a body, so it can take and send bodies of any size:
///
/// - any request: answers JSON with the method, target, headers it received and the request
///   body's size and SHA-256 (hashed as it streams in);
/// - `GET /bytes/<n>` (optionally `?chunked=1`): streams `n` bytes of a fixed pattern, with
///   backpressure;
/// - `GET /delay/<ms>`: answers after `ms` milliseconds;
/// - `GET /ticks/<ms>`: an endless `text/event-stream` (`data: tick <i>`, one every `ms`
///   milliseconds) until the client goes: a long-lived response (docs/streams.md);
/// - `GET /live/`: the demo's live page, whose script opens a WebSocket to `GET /live/socket`,
///   which ticks every second (`EchoWebSocket`, docs/streams.md);
/// - `GET /status/<code>`: answers with that status;
/// - `POST /early`: answers at once, then reads and discards the body (as nginx's `return`);
/// - a query with `backend-cors=1`: the answer carries the backend's own CORS fields
///   (`Access-Control-Allow-Origin: *`), which a route with `cors` must replace;
/// - over TLS, `tlsPeerCertificate` names the client certificate presented (mutual TLS);
/// - given an `AssertionCheck` (the demo's), a request carrying its header gets `"assertion"`:
///   the identity assertion's header and claims once verified, or why it was not.
///
/// With `http2: true` it speaks HTTP/2 instead: h2c by prior knowledge, or h2 by ALPN when
/// given `tls` (each stream answered by the same echo logic).
public final class EchoBackend: Sendable {
    private let channel: Channel
    private let counters: EchoCounters

    private init(channel: Channel, counters: EchoCounters) {
        self.channel = channel
        self.counters = counters
    }

    /// Requests received so far (heads), and TCP connections accepted: tests use them to prove
    /// that a rejected request reached no backend and that connections are reused.
    public var requestCount: Int { self.counters.requests.load(ordering: .relaxed) }
    public var connectionCount: Int { self.counters.connections.load(ordering: .relaxed) }

    public var port: Int { self.channel.localAddress?.port ?? 0 }
    public var baseURL: String { "http://127.0.0.1:\(self.port)" }

    public static func start(
        group: EventLoopGroup, host: String = "127.0.0.1", port: Int = 0, http2: Bool = false,
        tls: NIOSSLContext? = nil,
        assertions: AssertionCheck? = nil
    ) async throws -> EchoBackend {
        let counters = EchoCounters()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                counters.connections.wrappingAdd(1, ordering: .relaxed)
                do {
                    let sync = channel.pipeline.syncOperations
                    if let tls { try sync.addHandler(NIOSSLServerHandler(context: tls)) }
                    if http2 {
                        try sync.addHandler(
                            NIOHTTP2Handler(mode: .server, eventLoop: channel.eventLoop) { stream in
                                stream.eventLoop.makeCompletedFuture {
                                    try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                                    try stream.pipeline.syncOperations.addHandler(
                                        EchoHandler(counters: counters, onStream: true, assertions: assertions))
                                }
                            }
                        )
                    } else {
                        try sync.configureHTTPServerPipeline(withErrorHandling: true)
                        try sync.addHandler(EchoHandler(counters: counters, assertions: assertions))
                    }
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .bind(host: host, port: port)
            .get()
        return EchoBackend(channel: channel, counters: counters)
    }

    public func close() async {
        try? await self.channel.close()
    }

    /// The byte at `offset` of `/bytes/<n>` (so tests can check every byte that arrives).
    public static func patternByte(at offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: offset &* 31 &+ offset >> 13)
    }
}

private final class EchoCounters: Sendable {
    let requests = Atomic<Int>(0)
    let connections = Atomic<Int>(0)
}

private final class EchoHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let counters: EchoCounters

    /// On an HTTP/2 stream (its TLS is on the parent connection).
    private let onStream: Bool
    private let assertions: EchoBackend.AssertionCheck?

    init(counters: EchoCounters, onStream: Bool = false, assertions: EchoBackend.AssertionCheck? = nil) {
        self.counters = counters
        self.onStream = onStream
        self.assertions = assertions
    }

    private var head: HTTPRequestHead?
    private var hasher = SHA256()
    private var bodyBytes = 0
    /// Bytes still to stream for `/bytes/<n>`.
    private var remaining = 0
    private var sent = 0
    private var chunkSize = 64 * 1024
    /// The response went out before the request body: discard the body, answer nothing more.
    private var answeredEarly = false
    /// The request's trailers (HTTP/2 or chunked HTTP/1.1), echoed as `"trailers"`.
    private var trailers: HTTPHeaders?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.counters.requests.wrappingAdd(1, ordering: .relaxed)
            self.head = head
            self.hasher = SHA256()
            self.bodyBytes = 0
            self.answeredEarly = head.method == .POST && head.uri == "/early"
            if self.answeredEarly {
                let body = context.channel.allocator.buffer(string: "early\n")
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: String(body.readableBytes))
                context.write(
                    self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
                    promise: nil)
                context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
                context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            }
        case .body(let part):
            self.bodyBytes += part.readableBytes
            part.withUnsafeReadableBytes { self.hasher.update(bufferPointer: $0) }
        case .end(let trailers):
            guard let head = self.head, !self.answeredEarly else { return }
            self.trailers = trailers
            self.respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let target = head.uri.split(separator: "?", maxSplits: 1)
        let path = target.first.map(String.init) ?? "/"
        let query = target.count > 1 ? String(target[1]) : ""
        let segments = path.split(separator: "/")
        if head.method == .GET, segments.count == 2, segments[0] == "bytes", let count = Int(segments[1]), count >= 0 {
            self.startStreaming(count: count, chunked: query.contains("chunked=1"), head: head, context: context)
            return
        }
        if head.method == .GET, segments.count == 2, segments[0] == "ticks", let milliseconds = Int64(segments[1]),
            milliseconds > 0
        {
            self.startTicking(every: .milliseconds(milliseconds), head: head, context: context)
            return
        }
        if head.method == .GET, !self.onStream, path == EchoWebSocket.socketPath,
            head.headers[canonicalForm: "upgrade"].contains(where: { $0.lowercased() == "websocket" }),
            let key = head.headers.first(name: "Sec-WebSocket-Key")
        {
            self.upgradeToWebSocket(key: key, head: head, context: context)
            return
        }
        if head.method == .GET, path == EchoWebSocket.pagePath {
            self.writePage(EchoWebSocket.page, head: head, context: context)
            return
        }
        if segments.count == 2, segments[0] == "delay", let milliseconds = Int64(segments[1]) {
            context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(milliseconds)) {
                self.writeEcho(head: head, status: .ok, context: context)
            }
            return
        }
        if segments.count == 2, segments[0] == "status", let code = Int(segments[1]) {
            self.writeEcho(head: head, status: HTTPResponseStatus(statusCode: code), context: context)
            return
        }
        self.writeEcho(head: head, status: .ok, context: context, backendCORS: query.contains("backend-cors=1"))
    }

    private func writeEcho(
        head: HTTPRequestHead, status: HTTPResponseStatus, context: ChannelHandlerContext, backendCORS: Bool = false
    ) {
        var headerObject = JSONObject()
        for (name, value) in head.headers {
            let key = name.lowercased()
            if case .array(var values)? = headerObject[key] {
                values.append(.string(value))
                headerObject[key] = .array(values)
            } else {
                headerObject[key] = [.string(value)]
            }
        }
        let digest = self.hasher.finalize().map { String(format: "%02x", $0) }.joined()
        var document: JSONObject = [
            "method": .string(head.method.rawValue), "uri": .string(head.uri), "headers": .object(headerObject),
            "body": ["bytes": .number(JSONNumber(self.bodyBytes)), "sha256": .string(digest)],
        ]
        // Over TLS, the client certificate the gateway presented (mutual TLS), if any: on the
        // connection, or on an HTTP/2 stream's parent connection.
        let connection = self.onStream ? (context.channel.parent ?? context.channel) : context.channel
        if let certificate = try? connection.pipeline.syncOperations.nioSSL_peerCertificate() {
            document["tlsPeerCertificate"] = .string(certificate.description)
        }
        if let check = self.assertions, let assertion = head.headers.first(name: check.header) {
            document["assertion"] = check.verdict(assertion, now: Date().timeIntervalSince1970)
        }
        if let trailers = self.trailers, !trailers.isEmpty {
            var trailerObject = JSONObject()
            for (name, value) in trailers { trailerObject[name.lowercased()] = .string(value) }
            document["trailers"] = .object(trailerObject)
        }
        let body = context.channel.allocator.buffer(string: JSONValue.object(document).jsonText)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "X-Echo-Backend", value: "1")
        if backendCORS {
            headers.add(name: "Access-Control-Allow-Origin", value: "*")
            headers.add(name: "Access-Control-Expose-Headers", value: "X-Echo-Backend")
        }
        context.write(
            self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        if head.method != .HEAD && status.mayHaveResponseBody {
            context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        self.finish(head: head, context: context)
    }

    private func startStreaming(count: Int, chunked: Bool, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        if chunked {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        } else {
            headers.add(name: "Content-Length", value: String(count))
        }
        context.write(
            self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
            promise: nil)
        self.remaining = count
        self.sent = 0
        self.streamWhileWritable(context: context)
    }

    /// `101 Switching Protocols`, then the connection speaks WebSocket (`EchoWebSocket`).
    private func upgradeToWebSocket(key: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Upgrade", value: "websocket")
        headers.add(name: "Connection", value: "Upgrade")
        headers.add(name: "Sec-WebSocket-Accept", value: EchoWebSocket.acceptValue(key: key))
        context.write(
            self.wrapOutboundOut(
                .head(HTTPResponseHead(version: head.version, status: .switchingProtocols, headers: headers))),
            promise: nil)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        let pipeline = context.pipeline.syncOperations
        pipeline.removeHandler(context: context, promise: nil)
        do {
            try EchoWebSocket.switchToWebSocket(pipeline)
        } catch {
            context.close(promise: nil)
        }
    }

    private func writePage(_ html: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let page = context.channel.allocator.buffer(string: html)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Content-Length", value: String(page.readableBytes))
        context.write(
            self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
            promise: nil)
        context.write(self.wrapOutboundOut(.body(.byteBuffer(page))), promise: nil)
        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Server-sent events, one tick at a time, until the channel closes.
    private func startTicking(every interval: TimeAmount, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-store")
        if !self.onStream { headers.add(name: "Transfer-Encoding", value: "chunked") }
        context.writeAndFlush(
            self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
            promise: nil)
        var index = 0
        let loop = context.eventLoop.assumeIsolated()
        func tick() {
            guard context.channel.isActive else { return }
            let event = context.channel.allocator.buffer(string: "data: tick \(index)\n\n")
            index += 1
            context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(event))), promise: nil)
            loop.scheduleTask(in: interval) { tick() }
        }
        tick()
    }

    private func streamWhileWritable(context: ChannelHandlerContext) {
        while self.remaining > 0 && context.channel.isWritable {
            let size = min(self.chunkSize, self.remaining)
            var buffer = context.channel.allocator.buffer(capacity: size)
            let start = self.sent
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { pointer in
                for index in 0..<size { pointer[index] = EchoBackend.patternByte(at: start + index) }
                return size
            }
            self.sent += size
            self.remaining -= size
            context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        if self.remaining == 0, let head = self.head {
            self.head = nil
            self.finish(head: head, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable && self.remaining > 0 { self.streamWhileWritable(context: context) }
        context.fireChannelWritabilityChanged()
    }

    private func finish(head: HTTPRequestHead, context: ChannelHandlerContext) {
        let done = context.writeAndFlush(self.wrapOutboundOut(.end(nil)))
        if !head.isKeepAlive { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }
}

@available(*, unavailable)
extension EchoHandler: Sendable {}

extension HTTPResponseStatus {
    var mayHaveResponseBody: Bool {
        let code = self.code
        return !(100..<200).contains(code) && code != 204 && code != 304
    }
}
