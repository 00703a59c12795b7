import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Peers that stop reading, to force the gateway's backpressure on HTTP/1.1 (docs/forwarding.md): a
/// backend that streams a body as fast as it is taken, or reads an upload only when told, and
/// a client that reads its response only when told. Each counts the bytes the kernel took from
/// it or gave it, and pins its own socket buffers small (SO_SNDBUF / SO_RCVBUF: no kernel
/// auto-tuning on its side), so that what piles up between the two counts is what the gateway
/// and its own sockets hold.
enum SlowPeers {
    /// What a peer's socket buffers are pinned to (the kernel doubles it for its bookkeeping).
    static let socketBuffer = 64 * 1024

    /// How long a count must stand still before `stall` calls its peer stuck.
    static let stillFor: Duration = .milliseconds(300)

    /// Polls `count` until it has not moved for `stillFor` (its peer is blocked: nothing
    /// drains it) or `done` holds (there was nothing left to send); returns the count then,
    /// or nil when neither happened within `timeout`.
    ///
    /// Not a sleep that orders events: a gateway that withholds reads keeps the count still
    /// from some point on, forever, so this returns whenever it looks; a gateway that reads
    /// regardless lets the count run to the end of the body, so `done` ends the wait.
    static func stall(
        timeout: Duration = .seconds(60), _ count: () -> Int, done: () -> Bool
    ) async -> Int? {
        let deadline = ContinuousClock.now + timeout
        var last = count()
        var since = ContinuousClock.now
        while ContinuousClock.now < deadline {
            if done() { return count() }
            try? await Task.sleep(for: .milliseconds(10))
            let now = count()
            if now != last {
                last = now
                since = ContinuousClock.now
            } else if ContinuousClock.now - since >= Self.stillFor {
                return now
            }
        }
        return nil
    }
}

/// An HTTP/1.1 backend: `GET /stream/<n>` answers `n` bytes, written only while its channel is
/// writable and counted (`sent`) once the kernel took them; `POST /sink` counts the body bytes
/// it reads (`received`) and, while `paused`, stops reading after the request head until
/// `resume()`. Answers the sink with its count once the body ended.
final class SlowBackend: Sendable {
    private let channel: Channel
    private let counters: Counters

    final class Counters: Sendable {
        let sent = Atomic<Int>(0)
        let received = Atomic<Int>(0)
        let streamed = Atomic<Bool>(false)
        let paused = Atomic<Bool>(false)
        let held = NIOLockedValueBox<[Channel]>([])
    }

    private init(channel: Channel, counters: Counters) {
        self.channel = channel
        self.counters = counters
    }

    static func start(group: EventLoopGroup, paused: Bool = false) async throws -> SlowBackend {
        let counters = Counters()
        counters.paused.store(paused, ordering: .relaxed)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(SlowPeers.socketBuffer))
            .childChannelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(SlowPeers.socketBuffer))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(SlowBackendHandler(counters: counters))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return SlowBackend(channel: channel, counters: counters)
    }

    var baseURL: String { "http://127.0.0.1:\(self.channel.localAddress?.port ?? 0)" }
    /// Response body bytes the kernel took.
    var sent: Int { self.counters.sent.load(ordering: .relaxed) }
    /// Whether the whole `/stream/<n>` body was handed to the kernel.
    var streamed: Bool { self.counters.streamed.load(ordering: .relaxed) }
    /// Upload bytes read.
    var received: Int { self.counters.received.load(ordering: .relaxed) }

    /// Reads the held uploads again (and every later one at once).
    func resume() {
        self.counters.paused.store(false, ordering: .relaxed)
        for channel in self.counters.held.withLockedValue({ $0 }) {
            channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in channel.read() }
        }
    }

    func close() async {
        try? await self.channel.close()
    }
}

private final class SlowBackendHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let counters: SlowBackend.Counters
    private let chunk = ByteBuffer(repeating: UInt8(ascii: "s"), count: 64 * 1024)
    private var remaining = 0
    private var sinking = false

    init(counters: SlowBackend.Counters) {
        self.counters = counters
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            let segments = head.uri.split(separator: "/")
            if head.method == .GET, segments.count == 2, segments[0] == "stream", let count = Int(segments[1]) {
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: String(count))
                context.write(
                    self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                    promise: nil)
                self.remaining = count
                self.stream(context: context)
            } else {
                self.sinking = true
                if self.counters.paused.load(ordering: .relaxed) {
                    // Reads no more of the body: what the current read brought is still counted.
                    try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                    self.counters.held.withLockedValue { $0.append(context.channel) }
                }
            }
        case .body(let part):
            if self.sinking { self.counters.received.wrappingAdd(part.readableBytes, ordering: .relaxed) }
        case .end:
            guard self.sinking else { return }
            self.sinking = false
            let body = ByteBuffer(string: "received \(self.counters.received.load(ordering: .relaxed))")
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(body.readableBytes))
            context.write(
                self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                promise: nil)
            context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { self.stream(context: context) }
        context.fireChannelWritabilityChanged()
    }

    /// Writes while the channel takes more (backpressure of its own: it never buffers ahead).
    private func stream(context: ChannelHandlerContext) {
        let counters = self.counters
        while self.remaining > 0 && context.channel.isWritable {
            let size = min(self.chunk.readableBytes, self.remaining)
            self.remaining -= size
            let promise = context.eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenSuccess { counters.sent.wrappingAdd(size, ordering: .relaxed) }
            context.writeAndFlush(
                self.wrapOutboundOut(.body(.byteBuffer(self.chunk.getSlice(at: 0, length: size)!))), promise: promise)
            if self.remaining == 0 {
                context.writeAndFlush(self.wrapOutboundOut(.end(nil))).whenSuccess {
                    counters.streamed.store(true, ordering: .relaxed)
                }
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

/// A raw HTTP/1.1 client connection that reads only when told (`autoRead` off until
/// `startReading()`) and can stream an upload body of any size while its channel is writable;
/// counts the bytes the kernel took from it (`sent`) and gave it (`received`).
final class SlowClient: Sendable {
    private let channel: Channel
    private let counters: Counters

    final class Counters: Sendable {
        let sent = Atomic<Int>(0)
        let received = Atomic<Int>(0)
        let firstBytes = NIOLockedValueBox<String>("")
    }

    private init(channel: Channel, counters: Counters) {
        self.channel = channel
        self.counters = counters
    }

    static func connect(port: Int, group: EventLoopGroup, reading: Bool) async throws -> SlowClient {
        let counters = Counters()
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(SlowPeers.socketBuffer))
            .channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(SlowPeers.socketBuffer))
            .channelOption(.autoRead, value: reading)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SlowClientHandler(counters: counters))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        return SlowClient(channel: channel, counters: counters)
    }

    var sent: Int { self.counters.sent.load(ordering: .relaxed) }
    var received: Int { self.counters.received.load(ordering: .relaxed) }
    /// The first bytes received (the response's status line and headers).
    var firstBytes: String { self.counters.firstBytes.withLockedValue { $0 } }

    func send(_ text: String) async throws {
        try await self.channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// Writes `total` body bytes, as fast as the channel takes them (never more than its
    /// high-water mark ahead of the kernel), in the background.
    func upload(total: Int) {
        let channel = self.channel
        channel.eventLoop.execute {
            guard let handler = try? channel.pipeline.syncOperations.handler(type: SlowClientHandler.self) else {
                return
            }
            handler.upload(total: total, channel: channel)
        }
    }

    func startReading() {
        self.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { [channel] _ in channel.read() }
    }

    func close() async {
        try? await self.channel.close()
    }
}

private final class SlowClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let counters: SlowClient.Counters
    private let chunk = ByteBuffer(repeating: UInt8(ascii: "u"), count: 64 * 1024)
    private var remaining = 0

    init(counters: SlowClient.Counters) {
        self.counters = counters
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        if self.counters.received.load(ordering: .relaxed) < 1024 {
            let text = String(buffer: buffer)
            self.counters.firstBytes.withLockedValue { $0 += text.prefix(1024) }
        }
        self.counters.received.wrappingAdd(buffer.readableBytes, ordering: .relaxed)
    }

    func upload(total: Int, channel: Channel) {
        self.remaining = total
        self.pump(channel: channel)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.pump(channel: context.channel)
        context.fireChannelWritabilityChanged()
    }

    private func pump(channel: Channel) {
        let counters = self.counters
        while self.remaining > 0 && channel.isWritable {
            let size = min(self.chunk.readableBytes, self.remaining)
            self.remaining -= size
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenSuccess { counters.sent.wrappingAdd(size, ordering: .relaxed) }
            channel.writeAndFlush(self.chunk.getSlice(at: 0, length: size)!, promise: promise)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension SlowBackendHandler: Sendable {}

@available(*, unavailable)
extension SlowClientHandler: Sendable {}
