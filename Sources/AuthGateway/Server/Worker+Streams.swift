/// The loop's long-lived streams (docs/streams.md), kept by its connection registry.
extension Worker {
    var streams: LoopStreams { self.connections.streams }
}
