import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP connection that sends and receives raw bytes: for malformed framing, slow headers,
/// `Expect: 100-continue` and anything an HTTP client library would refuse to produce.
package final class RawConnection: Sendable {
    package let channel: Channel
    private let sink: ByteSink

    private init(channel: Channel, sink: ByteSink) {
        self.channel = channel
        self.sink = sink
    }

    /// `firstBytes`: written by the event loop the moment the connection is up, not when the
    /// test's task next runs (which on a loaded machine can be seconds later): for a test that
    /// races a server-side timer running from the accept.
    package static func connect(port: Int, firstBytes: String? = nil) async throws -> RawConnection {
        let sink = ByteSink()
        let channel = try await ClientBootstrap(group: TestGroup.shared)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let firstBytes {
                        try channel.pipeline.syncOperations.addHandler(SendOnConnect(bytes: firstBytes))
                    }
                    try channel.pipeline.syncOperations.addHandler(sink)
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
        return RawConnection(channel: channel, sink: sink)
    }

    package func send(_ text: String) async throws {
        try await self.channel.writeAndFlush(ByteBuffer(string: text))
    }

    package func send(bytes: [UInt8]) async throws {
        try await self.channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    /// Everything received so far, as text.
    package var received: String { self.sink.text }

    /// Everything received so far, as bytes.
    package var receivedBytes: [UInt8] { self.sink.bytes }

    package var isClosed: Bool { self.sink.isClosed }
    /// When the connection closed (Unix seconds, taken as the close arrived); nil while open.
    package var closedAt: Double? { self.sink.closedAt }

    /// Waits until `condition` holds for the received text (or the connection closes).
    @discardableResult
    package func waitFor(
        timeout: Duration = .seconds(30), _ condition: @escaping @Sendable (String) -> Bool
    ) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(self.received) { return true }
            if self.isClosed { return condition(self.received) }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(self.received)
    }

    /// Waits for the server to close the connection.
    package func waitForClose(timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if self.isClosed { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return self.isClosed
    }

    package func close() async {
        try? await self.channel.close()
    }

    /// The status code of the first response received, if any.
    package var firstStatus: Int? {
        let text = self.received
        guard text.hasPrefix("HTTP/1."), text.count >= 12 else { return nil }
        return Int(text.dropFirst(9).prefix(3))
    }
}

/// Writes its bytes when the channel becomes active, then removes itself.
private final class SendOnConnect: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let bytes: String

    init(bytes: String) { self.bytes = bytes }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: self.bytes)), promise: nil)
        context.fireChannelActive()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

private final class ByteSink: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private let state = NIOLockedValueBox((bytes: [UInt8](), closed: false, closedAt: Double?.none))

    var text: String { String(decoding: self.state.withLockedValue { $0.bytes }, as: UTF8.self) }
    var bytes: [UInt8] { self.state.withLockedValue { $0.bytes } }
    var isClosed: Bool { self.state.withLockedValue { $0.closed } }
    /// When the close (or end of input) arrived, Unix seconds: read on the connection's own
    /// thread, not when a polling test noticed it.
    var closedAt: Double? { self.state.withLockedValue { $0.closedAt } }

    private func markClosed() {
        self.state.withLockedValue { state in
            if !state.closed { state.closedAt = Date().timeIntervalSince1970 }
            state.closed = true
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = self.unwrapInboundIn(data)
        self.state.withLockedValue { $0.bytes.append(contentsOf: buffer.readableBytesView) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .inputClosed { self.markClosed() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.markClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        self.markClosed()
        context.close(promise: nil)
    }
}
