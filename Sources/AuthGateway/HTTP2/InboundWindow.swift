/// The receive window of one HTTP/2 stream, given back to the client as its body is consumed
/// (RFC 9113 §6.9). NIOHTTP2 in frame mode tracks the windows and refuses a peer that
/// overruns them, but sends no WINDOW_UPDATE itself: that is the gateway's part, and it is
/// how an upload is held back — while the backend cannot take more, nothing is given back,
/// so the client can send at most one window more.
///
/// Bytes are given back in one WINDOW_UPDATE once half the window is consumed (the rule
/// NIOHTTP2's own stream channels follow), so a fast upload costs one small frame per 32 KiB.
struct InboundWindow {
    /// The window the gateway advertised (SETTINGS_INITIAL_WINDOW_SIZE).
    let target: Int
    /// Received and not yet given back.
    private(set) var unacknowledged = 0
    /// The request's consumer cannot take more: nothing is given back until `resume`.
    private(set) var isWithheld = false

    init(target: Int) {
        self.target = target
    }

    /// DATA arrived (its flow-controlled length, padding included) and was handed on: the
    /// WINDOW_UPDATE increment to send now, if any.
    mutating func received(_ bytes: Int) -> Int? {
        self.unacknowledged += bytes
        return self.increment()
    }

    /// The consumer stopped taking more.
    mutating func withhold() {
        self.isWithheld = true
    }

    /// The consumer takes more again: the increment to send now, if any.
    mutating func resume() -> Int? {
        self.isWithheld = false
        return self.increment()
    }

    private mutating func increment() -> Int? {
        guard !self.isWithheld, self.unacknowledged > 0, self.unacknowledged * 2 >= self.target else { return nil }
        defer { self.unacknowledged = 0 }
        return self.unacknowledged
    }

    /// The connection's own window (stream 0): refilled to `target` as soon as it is half
    /// used, whatever the streams do — backpressure is per stream, so one slow upload never
    /// stalls the others.
    static func connectionIncrement(windowSize: Int, target: Int) -> Int? {
        guard windowSize * 2 <= target else { return nil }
        return target - windowSize
    }
}
