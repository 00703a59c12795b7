/// The response bytes of one HTTP/2 stream written but not yet sent: DATA that NIOHTTP2 holds
/// while the client's flow-control window for the stream is closed. Past `highWatermark` the
/// stream is not writable (the backend is no longer read for it) until the backlog falls to
/// `lowWatermark` (NIOHTTP2's frame delegate reports each frame as it goes out).
struct OutboundBacklog {
    let highWatermark: Int
    let lowWatermark: Int
    private(set) var pending = 0
    private(set) var isWritable = true

    init(highWatermark: Int = 64 * 1024, lowWatermark: Int = 32 * 1024) {
        precondition(lowWatermark < highWatermark)
        self.highWatermark = highWatermark
        self.lowWatermark = lowWatermark
    }

    /// `bytes` of DATA were written: whether the stream just stopped being writable.
    mutating func wrote(_ bytes: Int) -> Bool {
        self.pending += bytes
        guard self.isWritable, self.pending > self.highWatermark else { return false }
        self.isWritable = false
        return true
    }

    /// `bytes` of DATA went out: whether the stream just became writable again.
    mutating func sent(_ bytes: Int) -> Bool {
        self.pending = max(0, self.pending - bytes)
        guard !self.isWritable, self.pending <= self.lowWatermark else { return false }
        self.isWritable = true
        return true
    }
}
