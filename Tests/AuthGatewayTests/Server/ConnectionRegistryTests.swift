import NIOCore
import NIOEmbedded
import Testing

@testable import AuthGateway

/// `ConnectionRegistry` and `ClientConnectionCount`: each loop's open client connections,
/// admitted against a process-wide limit, in the loop's gauge, quiesced and closed on drain.
@Suite("ConnectionRegistry")
struct ConnectionRegistryTests {
    /// Remembers the user events that reach the end of its pipeline.
    final class EventRecorder: ChannelInboundHandler {
        typealias InboundIn = Never
        var quiesceRequests = 0

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is ChannelShouldQuiesceEvent { self.quiesceRequests += 1 }
            context.fireUserInboundEventTriggered(event)
        }
    }

    private static func gauge(_ metrics: WorkerMetrics) -> Double? {
        metrics.values.gauges[.openConnections]
    }

    @Test func theGaugeStartsAtZero() {
        let metrics = WorkerMetrics()
        let registry = ConnectionRegistry(count: ClientConnectionCount(), metrics: metrics)
        #expect(registry.openCount == 0)
        #expect(Self.gauge(metrics) == 0)
    }

    @Test func connectionsAreAdmittedUpToTheLimitAndCountedOutOnceWhenTheyClose() {
        let count = ClientConnectionCount()
        let metrics = WorkerMetrics()
        let registry = ConnectionRegistry(count: count, metrics: metrics)
        let channels = (0..<3).map { _ in EmbeddedChannel() }

        #expect(registry.admit(channels[0], limit: 2))
        #expect(registry.admit(channels[1], limit: 2))
        #expect(!registry.admit(channels[2], limit: 2))
        #expect(registry.openCount == 2)
        #expect(count.current == 2)
        #expect(Self.gauge(metrics) == 2)

        registry.closed(channels[0])
        // Twice, or one never admitted: nothing more is counted out.
        registry.closed(channels[0])
        registry.closed(channels[2])
        #expect(registry.openCount == 1)
        #expect(count.current == 1)
        #expect(Self.gauge(metrics) == 1)
        // Room again.
        #expect(registry.admit(channels[2], limit: 2))
        #expect(count.current == 2)
    }

    /// `limits.maxConnections` is for the process: every loop's registry counts into one.
    @Test func theLimitIsSharedByEveryLoop() {
        let count = ClientConnectionCount()
        let first = ConnectionRegistry(count: count, metrics: WorkerMetrics())
        let second = ConnectionRegistry(count: count, metrics: WorkerMetrics())
        #expect(first.admit(EmbeddedChannel(), limit: 2))
        #expect(second.admit(EmbeddedChannel(), limit: 2))
        #expect(!second.admit(EmbeddedChannel(), limit: 2))
        #expect(!first.admit(EmbeddedChannel(), limit: 2))
        #expect(first.openCount == 1 && second.openCount == 1)
        #expect(count.current == 2)
    }

    @Test func drainingQuiescesEveryConnectionThenClosesThem() throws {
        let registry = ConnectionRegistry(count: ClientConnectionCount(), metrics: WorkerMetrics())
        let recorders = [EventRecorder(), EventRecorder()]
        var channels: [EmbeddedChannel] = []
        for recorder in recorders {
            let channel = EmbeddedChannel(handler: recorder)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            #expect(registry.admit(channel, limit: 10))
            channels.append(channel)
        }

        registry.quiesce()
        #expect(recorders.map(\.quiesceRequests) == [1, 1])
        #expect(channels.map(\.isActive) == [true, true])

        registry.closeAll()
        #expect(channels.map(\.isActive) == [false, false])
    }
}
