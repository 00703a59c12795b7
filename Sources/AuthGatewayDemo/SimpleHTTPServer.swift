import AuthGateway
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A complete request as a small server sees it.
public struct SimpleRequest: Sendable {
    public var method: HTTPMethod
    public var uri: String
    public var headers: HTTPHeaders
    public var body: ByteBuffer

    public var path: String { String(self.uri.split(separator: "?", maxSplits: 1).first ?? "") }
    public var bodyText: String { String(buffer: self.body) }
    public var json: JSONValue? { try? JSONValue(parsing: self.bodyText) }
}

public struct SimpleResponse: Sendable {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: ByteBuffer
    /// Close the connection instead of answering (a peer that went away mid-call; tests).
    public var hangsUp = false

    public init(status: HTTPResponseStatus, headers: HTTPHeaders = [:], body: ByteBuffer = ByteBuffer()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(
        _ status: HTTPResponseStatus, _ document: JSONValue, headers: HTTPHeaders = [:]
    ) -> SimpleResponse {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return SimpleResponse(status: status, headers: headers, body: ByteBuffer(string: document.jsonText))
    }
}

/// A small HTTP/1.1 server for the demo's auth service and for the tests' scripted services:
/// buffers each request, asks `handler` for the response (possibly later), keeps connections
/// alive. Not for the gateway's own traffic.
public final class SimpleHTTPServer: Sendable {
    public typealias Handler = @Sendable (SimpleRequest, EventLoop) -> EventLoopFuture<SimpleResponse>

    private let channel: Channel

    private init(channel: Channel) {
        self.channel = channel
    }

    public var port: Int { self.channel.localAddress?.port ?? 0 }
    public var baseURL: String { "http://127.0.0.1:\(self.port)" }

    /// Starts the server; with `tls`, it speaks HTTPS.
    public static func start(
        group: EventLoopGroup, host: String = "127.0.0.1", port: Int = 0, tls: NIOSSLContext? = nil,
        handler: @escaping Handler
    ) async throws -> SimpleHTTPServer {
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                do {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(SimpleRequestHandler(handler: handler))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .bind(host: host, port: port)
            .get()
        return SimpleHTTPServer(channel: channel)
    }

    /// Convenience for handlers that answer at once.
    public static func start(
        group: EventLoopGroup, host: String = "127.0.0.1", port: Int = 0,
        respond: @escaping @Sendable (SimpleRequest) -> SimpleResponse
    ) async throws -> SimpleHTTPServer {
        try await Self.start(group: group, host: host, port: port) { request, eventLoop in
            eventLoop.makeSucceededFuture(respond(request))
        }
    }

    public func close() async {
        try? await self.channel.close()
    }
}

private final class SimpleRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let handler: SimpleHTTPServer.Handler
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(handler: @escaping SimpleHTTPServer.Handler) {
        self.handler = handler
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            self.body.clear()
        case .body(var part):
            self.body.writeBuffer(&part)
        case .end:
            guard let head = self.head else { return }
            let request = SimpleRequest(method: head.method, uri: head.uri, headers: head.headers, body: self.body)
            let keepAlive = head.isKeepAlive
            self.handler(request, context.eventLoop).hop(to: context.eventLoop).assumeIsolated().whenComplete {
                result in
                let response = (try? result.get()) ?? SimpleResponse(status: .internalServerError)
                if response.hangsUp {
                    context.close(promise: nil)
                    return
                }
                var headers = response.headers
                headers.replaceOrAdd(name: "Content-Length", value: String(response.body.readableBytes))
                if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
                context.write(
                    self.wrapOutboundOut(
                        .head(HTTPResponseHead(version: head.version, status: response.status, headers: headers))),
                    promise: nil)
                if head.method != .HEAD {
                    context.write(self.wrapOutboundOut(.body(.byteBuffer(response.body))), promise: nil)
                }
                let done = context.writeAndFlush(self.wrapOutboundOut(.end(nil)))
                if !keepAlive { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
            }
        }
    }
}

@available(*, unavailable)
extension SimpleRequestHandler: Sendable {}
