import NIOCore
import Synchronization

/// One event loop's open client connections: admitted against `limits.maxConnections`
/// (counted process-wide, `ClientConnectionCount`), shown in the loop's
/// `auth_gateway_open_connections` gauge, and within reach for a drain (docs/operations.md).
///
/// Only ever touched on its loop; a connection costs one atomic add when it opens and one
/// when it closes, nothing per request.
final class ConnectionRegistry {
    private let count: ClientConnectionCount
    private let metrics: WorkerMetrics
    private var channels: [ObjectIdentifier: Channel] = [:]
    /// The long-lived streams among them, by what can revoke them (docs/streams.md).
    let streams: LoopStreams

    init(count: ClientConnectionCount, metrics: WorkerMetrics) {
        self.count = count
        self.metrics = metrics
        self.streams = LoopStreams(metrics: metrics)
        // Scraped as 0 from the start, not absent until the first client connects (a series
        // that appears only later breaks `rate`, alerts and dashboards).
        self.metrics.addGauge(.openConnections, 0)
    }

    /// Counts `channel` in when the process is under `limit`, and keeps it until it closes;
    /// false (and nothing kept) at the limit.
    func admit(_ channel: Channel, limit: Int) -> Bool {
        guard self.count.admit(limit: limit) else { return false }
        self.channels[ObjectIdentifier(channel)] = channel
        self.metrics.addGauge(.openConnections, 1)
        return true
    }

    /// `channel` closed: counted out, if it was admitted.
    func closed(_ channel: Channel) {
        if self.channels.removeValue(forKey: ObjectIdentifier(channel)) != nil {
            self.metrics.addGauge(.openConnections, -1)
            self.count.release()
        }
    }

    /// The loop's open client connections.
    var openCount: Int { self.channels.count }

    /// Asks every connection to finish its request in flight and close (drain).
    func quiesce() {
        for channel in self.channels.values {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    func closeAll() {
        for channel in self.channels.values { channel.close(promise: nil) }
    }
}

@available(*, unavailable)
extension ConnectionRegistry: Sendable {}

/// The process's open client connections, all loops together (`limits.maxConnections`, and
/// `openConnections` in `/healthz`).
final class ClientConnectionCount: Sendable {
    private let value = Atomic<Int>(0)

    init() {}

    /// Counts a new connection against `limit`; false when the limit is reached. One atomic
    /// add per connection (not per request).
    func admit(limit: Int) -> Bool {
        let count = self.value.wrappingAdd(1, ordering: .relaxed).newValue
        if count > limit {
            self.value.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func release() {
        self.value.wrappingSubtract(1, ordering: .relaxed)
    }

    var current: Int { self.value.load(ordering: .relaxed) }
}
