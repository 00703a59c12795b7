/// The arithmetic of one limit's token buckets: GCRA (the generic cell rate algorithm), a
/// bucket as one number per key, the "theoretical arrival time" (TAT). No timer per key:
/// refill is implied by the clock passing the TAT.
///
/// Exact integer arithmetic, no floating drift. Time is scaled so one request's emission
/// interval is a whole number: the rate is held in billionths of a request per second (`m`),
/// a clock reading of `n` nanoseconds is `n × m` scaled units, and one request costs
/// `10⁹ × 10⁹` units (1 s × 10⁹). `Int128` holds `n × m` for centuries of uptime at any
/// configurable rate (≤ 10⁹/s: `m` ≤ 10¹⁸). A pure value: the clock comes in as an argument (nanoseconds of a
/// monotonic clock).
struct TokenBucket: Sendable, Equatable {
    /// Scaled units per request: 10⁹ ns × 10⁹ (rate in billionths).
    static let interval: Int128 = 1_000_000_000_000_000_000
    /// Scaled units per second, per unit of `rate`: 10⁹ ns.
    static let nanosPerSecond: Int128 = 1_000_000_000

    /// Requests per second × 10⁹, ≥ 1.
    let rate: Int128
    let burst: Int
    /// `burst` requests' worth of scaled time: how far ahead of now the TAT may run.
    let capacity: Int128

    init(requestsPerSecond: Double, burst: Int) {
        self.rate = max(1, Int128((requestsPerSecond * 1_000_000_000).rounded()))
        self.burst = max(1, burst)
        self.capacity = Int128(self.burst) * Self.interval
    }

    /// A fresh key's state: a TAT in the past is a full bucket.
    static let full: Int128 = 0

    /// What one request does to a bucket.
    enum Outcome: Equatable {
        /// Admitted: store `tat`; `remaining` more requests would be admitted right now;
        /// the bucket is full again after `resetSeconds` (rounded up).
        case admitted(tat: Int128, remaining: Int, resetSeconds: Int)
        /// Refused, nothing consumed: the next request is admitted after `retryAfterSeconds`
        /// (whole seconds, rounded up, ≥ 1).
        case refused(retryAfterSeconds: Int)
    }

    func scaled(_ nanoseconds: UInt64) -> Int128 { Int128(nanoseconds) * self.rate }

    /// One request at `now` against a bucket whose TAT is `tat`.
    func consume(tat: Int128, now: UInt64) -> Outcome {
        let t = self.scaled(now)
        let next = max(tat, t) + Self.interval
        let ahead = next - t
        guard ahead <= self.capacity else {
            return .refused(retryAfterSeconds: max(1, self.seconds(roundingUp: ahead - self.capacity)))
        }
        return .admitted(
            tat: next, remaining: Int((self.capacity - ahead) / Self.interval),
            resetSeconds: self.seconds(roundingUp: ahead))
    }

    /// Gives back one admitted request (another limit refused it): the inverse of `consume`'s
    /// addition, correct whatever else was consumed since. Never below a full bucket.
    func refund(tat: Int128) -> Int128 { tat - Self.interval }

    /// Debits `requests` consumed elsewhere (other instances) from a bucket at `now`.
    func debit(tat: Int128, requests: Int, now: UInt64) -> Int128 {
        max(tat, self.scaled(now)) + Int128(requests) * Self.interval
    }

    /// Whether a bucket with this TAT is full at `now` (its entry can be forgotten).
    func isFull(tat: Int128, now: UInt64) -> Bool { tat <= self.scaled(now) }

    /// `RateLimit-Policy` window: the seconds over which `burst` is the quota (burst / rate),
    /// rounded up, ≥ 1.
    var windowSeconds: Int { max(1, self.seconds(roundingUp: self.capacity)) }

    /// Whole seconds, rounded up, of a scaled duration.
    private func seconds(roundingUp scaled: Int128) -> Int {
        guard scaled > 0 else { return 0 }
        let perSecond = self.rate * Self.nanosPerSecond
        let whole = (scaled + perSecond - 1) / perSecond
        return whole > Int128(Int32.max) ? Int(Int32.max) : Int(whole)
    }
}
