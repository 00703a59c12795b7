import NIOCore
import NIOEmbedded
import Testing

@testable import AuthGateway

@Suite("FlushCoalescer: one flush per tick for an HTTP/2 backend connection")
struct FlushCoalescerTests {
    @Test func theFlushesOfOneTickLeaveTogetherAfterIt() throws {
        let channel = EmbeddedChannel(handler: FlushCoalescer())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.write(ByteBuffer(string: "stream 1"), promise: nil)
        channel.flush()
        channel.write(ByteBuffer(string: "stream 3"), promise: nil)
        channel.flush()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing is flushed within the tick")
        channel.embeddedEventLoop.run()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "stream 1"))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "stream 3"))
    }

    @Test func aCloseFlushesWhatWasWrittenFirst() throws {
        let channel = EmbeddedChannel(handler: FlushCoalescer())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.write(ByteBuffer(string: "GOAWAY"), promise: nil)
        channel.flush()
        _ = try? channel.close().wait()
        #expect(try channel.readOutbound(as: ByteBuffer.self) == ByteBuffer(string: "GOAWAY"))
    }
}
