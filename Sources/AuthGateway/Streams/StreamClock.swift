import NIOCore

/// Credentials expire on the wall clock (Unix seconds: `exp`, a session's end); the event
/// loops' timers run on the monotonic clock. Converted once, when a stream opens or its
/// deadline is renewed.
enum StreamClock {
    /// The monotonic deadline of `wall` (Unix seconds), given both clocks now; a time already
    /// past is `now`.
    static func deadline(at wall: Double, wallNow: Double, now: NIODeadline) -> NIODeadline {
        let seconds = wall - wallNow
        guard seconds > 0 else { return now }
        // Beyond a year is as good as never (and stays far from NIODeadline's range).
        let bounded = min(seconds, 365 * 86_400)
        return now + .nanoseconds(Int64(bounded * 1_000_000_000))
    }
}
