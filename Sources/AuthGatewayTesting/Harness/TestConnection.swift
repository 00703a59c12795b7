import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

import AuthGatewayDemo
import AuthGateway

/// One event loop group for every test server and client.
package enum TestGroup {
    package static let shared = MultiThreadedEventLoopGroup(numberOfThreads: 2)
}

package struct TestRequest: Sendable {
    package var method: HTTPMethod = .GET
    package var uri: String
    package var headers: [(String, String)] = []
    package var body: String?

    package init(_ method: HTTPMethod = .GET, _ uri: String, headers: [(String, String)] = [], body: String? = nil) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    package static func get(_ uri: String, token: String? = nil, headers: [(String, String)] = []) -> TestRequest {
        var all = headers
        if let token { all.append(("Authorization", "Bearer \(token)")) }
        return TestRequest(.GET, uri, headers: all)
    }
}

package struct TestResponse: Sendable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: ByteBuffer
    /// Body bytes counted (equals `body.readableBytes` unless the body was only counted).
    package var bodyBytes: Int
    /// For counted downloads: whether every byte matched `EchoBackend.patternByte`.
    package var patternMatched: Bool

    package var text: String { String(buffer: self.body) }
    package var json: JSONValue? { try? JSONValue(parsing: self.text) }

    package func header(_ name: String) -> String? { self.headers.first(name: name) }

    /// The headers the echo backend says it received (lower-cased names).
    package func echoedHeader(_ name: String) -> [String] {
        self.json?["headers"]?[name.lowercased()]?.arrayValue?.compactMap(\.stringValue) ?? []
    }
}

package enum TestClientError: Error {
    case connectionClosed
    case timeout
}

/// An HTTP/1.1 client connection for the integration tests: sequential or pipelined requests,
/// streaming uploads, counted downloads.
package final class TestConnection: Sendable {
    package let channel: Channel
    private let collector: ResponseCollector

    private init(channel: Channel, collector: ResponseCollector) {
        self.channel = channel
        self.collector = collector
    }

    package static func connect(
        port: Int, countOnly: Bool = false, tls: NIOSSLContext? = nil, group: EventLoopGroup = TestGroup.shared
    ) async throws -> TestConnection {
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                do {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: "localhost"))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector(countOnly: countOnly))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        let collector = try await channel.pipeline.handler(type: ResponseCollector.self).get()
        return TestConnection(channel: channel, collector: collector)
    }

    package func send(_ request: TestRequest, timeout: TimeAmount = .seconds(30)) async throws -> TestResponse {
        try await self.sendPipelined([request], timeout: timeout)[0]
    }

    /// Writes all requests at once, then collects their responses in order.
    package func sendPipelined(
        _ requests: [TestRequest], timeout: TimeAmount = .seconds(30)
    ) async throws -> [TestResponse] {
        let futures = try await self.channel.eventLoop.submit { [collector, channel] in
            var futures: [EventLoopFuture<TestResponse>] = []
            for request in requests {
                futures.append(collector.expectResponse(on: channel.eventLoop))
                var headers = HTTPHeaders(request.headers)
                if !headers.contains(name: "host") { headers.add(name: "Host", value: "127.0.0.1") }
                if let body = request.body, !headers.contains(name: "content-length"),
                    !headers.contains(name: "transfer-encoding")
                {
                    headers.add(name: "Content-Length", value: String(body.utf8.count))
                }
                channel.write(
                    HTTPClientRequestPart.head(
                        HTTPRequestHead(version: .http1_1, method: request.method, uri: request.uri, headers: headers)),
                    promise: nil)
                if let body = request.body {
                    channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: body))), promise: nil)
                }
                channel.write(HTTPClientRequestPart.end(nil), promise: nil)
            }
            channel.flush()
            return futures
        }.get()
        var responses: [TestResponse] = []
        for future in futures {
            responses.append(try await Self.withTimeout(timeout, on: self.channel.eventLoop, future))
        }
        return responses
    }

    /// Streams `totalBytes` of `EchoBackend.patternByte` as the body of a POST, waiting for each
    /// chunk to be written (so the client never holds more than one chunk).
    package func upload(
        _ uri: String, totalBytes: Int, headers: [(String, String)] = [], chunkSize: Int = 64 * 1024
    ) async throws -> TestResponse {
        var headers = HTTPHeaders(headers)
        headers.add(name: "Host", value: "127.0.0.1")
        headers.add(name: "Content-Length", value: String(totalBytes))
        let head = headers
        let response = try await self.channel.eventLoop.submit { [collector, channel] in
            channel.write(
                HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .POST, uri: uri, headers: head)),
                promise: nil)
            return collector.expectResponse(on: channel.eventLoop)
        }.get()
        var sent = 0
        while sent < totalBytes {
            let size = min(chunkSize, totalBytes - sent)
            var buffer = self.channel.allocator.buffer(capacity: size)
            let start = sent
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { pointer in
                for index in 0..<size { pointer[index] = EchoBackend.patternByte(at: start + index) }
                return size
            }
            try await self.channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(buffer)))
            sent += size
        }
        try await self.channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        return try await Self.withTimeout(.seconds(120), on: self.channel.eventLoop, response)
    }

    package func close() async {
        try? await self.channel.close()
    }

    /// Whether the server closed the connection within `timeout`.
    package func waitForClose(timeout: TimeAmount = .seconds(30)) async -> Bool {
        let closed = self.channel.closeFuture.map { true }
        return (try? await Self.withTimeout(timeout, on: self.channel.eventLoop, closed)) ?? false
    }

    package static func withTimeout<T: Sendable>(
        _ timeout: TimeAmount, on eventLoop: EventLoop, _ future: EventLoopFuture<T>
    ) async throws -> T {
        let promise = eventLoop.makePromise(of: T.self)
        let timer = eventLoop.scheduleTask(in: timeout) { promise.fail(TestClientError.timeout) }
        future.whenComplete { result in
            timer.cancel()
            promise.completeWith(result)
        }
        return try await promise.futureResult.get()
    }
}

/// Collects responses in order and completes the oldest waiting promise with each.
private final class ResponseCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPClientResponsePart

    private struct State {
        var waiting: [EventLoopPromise<TestResponse>] = []
        var head: HTTPResponseHead?
        var body = ByteBuffer()
        var bodyBytes = 0
        var patternMatched = true
        var closed = false
    }

    private let countOnly: Bool
    private let state = NIOLockedValueBox(State())

    init(countOnly: Bool) { self.countOnly = countOnly }

    func expectResponse(on eventLoop: EventLoop) -> EventLoopFuture<TestResponse> {
        let promise = eventLoop.makePromise(of: TestResponse.self)
        let closed = self.state.withLockedValue { state in
            if !state.closed { state.waiting.append(promise) }
            return state.closed
        }
        // Asked for after the server closed the connection: no response will come.
        if closed { promise.fail(TestClientError.connectionClosed) }
        return promise.futureResult
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let countOnly = self.countOnly
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.state.withLockedValue { state in
                state.head = head
                state.body.clear()
                state.bodyBytes = 0
                state.patternMatched = true
            }
        case .body(var part):
            let size = part.readableBytes
            self.state.withLockedValue { state in
                if countOnly {
                    let offset = state.bodyBytes
                    part.withUnsafeReadableBytes { bytes in
                        for index in 0..<bytes.count where bytes[index] != EchoBackend.patternByte(at: offset + index) {
                            state.patternMatched = false
                            break
                        }
                    }
                } else {
                    state.body.writeBuffer(&part)
                }
                state.bodyBytes += size
            }
        case .end:
            let completed: (EventLoopPromise<TestResponse>, TestResponse)? = self.state.withLockedValue { state in
                guard let head = state.head, !state.waiting.isEmpty else { return nil }
                let bytes = countOnly ? state.bodyBytes : state.body.readableBytes
                let response = TestResponse(
                    status: Int(head.status.code), headers: head.headers, body: state.body, bodyBytes: bytes,
                    patternMatched: state.patternMatched)
                state.head = nil
                return (state.waiting.removeFirst(), response)
            }
            if let (promise, response) = completed { promise.succeed(response) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let waiting = self.state.withLockedValue { state in
            state.closed = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for promise in waiting { promise.fail(TestClientError.connectionClosed) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
