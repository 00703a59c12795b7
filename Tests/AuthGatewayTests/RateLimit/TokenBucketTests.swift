import Testing

@testable import AuthGateway

/// The GCRA arithmetic (docs/rate-limits.md) with an injected clock in nanoseconds.
@Suite("TokenBucket")
struct TokenBucketTests {
    static let second: UInt64 = 1_000_000_000
    /// An arbitrary non-zero start, as a monotonic clock reads.
    static let start: UInt64 = 123_456_789_012_345

    /// Runs `count` requests at `now`; returns how many were admitted and the last outcome.
    func run(
        _ bucket: TokenBucket, tat: inout Int128, count: Int, now: UInt64
    ) -> (admitted: Int, last: TokenBucket.Outcome?) {
        var admitted = 0
        var last: TokenBucket.Outcome?
        for _ in 0..<count {
            let outcome = bucket.consume(tat: tat, now: now)
            last = outcome
            if case .admitted(let next, _, _) = outcome {
                tat = next
                admitted += 1
            }
        }
        return (admitted, last)
    }

    @Test func anIdleKeyGetsItsWholeBurstAtOnceAndNoMore() {
        let bucket = TokenBucket(requestsPerSecond: 20, burst: 40)
        var tat = TokenBucket.full
        var remainders: [Int] = []
        for _ in 0..<40 {
            guard case .admitted(let next, let remaining, _) = bucket.consume(tat: tat, now: Self.start) else {
                Issue.record("refused within the burst")
                return
            }
            tat = next
            remainders.append(remaining)
        }
        #expect(remainders.first == 39)
        #expect(remainders.last == 0)
        #expect(remainders == Array((0..<40).reversed()))
        #expect(bucket.consume(tat: tat, now: Self.start) == .refused(retryAfterSeconds: 1))
    }

    @Test func refillsAtTheConfiguredRate() {
        let bucket = TokenBucket(requestsPerSecond: 20, burst: 40)
        var tat = TokenBucket.full
        #expect(self.run(bucket, tat: &tat, count: 40, now: Self.start).admitted == 40)
        // 50 ms is one request at 20/s: exactly one more, then a refusal.
        let later = Self.start + 50_000_000
        #expect(self.run(bucket, tat: &tat, count: 2, now: later).admitted == 1)
        // 49.999999 ms after that is not yet another one.
        #expect(self.run(bucket, tat: &tat, count: 1, now: later + 49_999_999).admitted == 0)
        #expect(self.run(bucket, tat: &tat, count: 1, now: later + 50_000_000).admitted == 1)
        // A second later: 20 more, never more than the burst after a long pause.
        #expect(self.run(bucket, tat: &tat, count: 25, now: later + 50_000_000 + Self.second).admitted == 20)
        #expect(self.run(bucket, tat: &tat, count: 100, now: later + 3600 * Self.second).admitted == 40)
    }

    @Test func aRefusalConsumesNothing() {
        let bucket = TokenBucket(requestsPerSecond: 1, burst: 1)
        var tat = TokenBucket.full
        #expect(self.run(bucket, tat: &tat, count: 1, now: Self.start).admitted == 1)
        // Refusals every 100 ms change nothing: the next request is due exactly 1 s later.
        for offset in stride(from: UInt64(0), to: Self.second, by: Int(Self.second / 10)) {
            if case .admitted = self.run(bucket, tat: &tat, count: 1, now: Self.start + offset).last {
                Issue.record("admitted at +\(offset) ns")
            }
        }
        #expect(self.run(bucket, tat: &tat, count: 1, now: Self.start + Self.second - 1).admitted == 0)
        #expect(self.run(bucket, tat: &tat, count: 1, now: Self.start + Self.second).admitted == 1)
    }

    @Test func retryAfterIsWholeSecondsRoundedUpAndAtLeastOne() {
        // 0.4/s: one request every 2.5 s.
        let slow = TokenBucket(requestsPerSecond: 0.4, burst: 1)
        var tat = TokenBucket.full
        _ = self.run(slow, tat: &tat, count: 1, now: Self.start)
        #expect(slow.consume(tat: tat, now: Self.start) == .refused(retryAfterSeconds: 3))
        #expect(slow.consume(tat: tat, now: Self.start + 500_000_000) == .refused(retryAfterSeconds: 2))
        #expect(slow.consume(tat: tat, now: Self.start + 1_500_000_000) == .refused(retryAfterSeconds: 1))
        #expect(slow.consume(tat: tat, now: Self.start + 2_499_999_999) == .refused(retryAfterSeconds: 1))
        if case .refused = slow.consume(tat: tat, now: Self.start + 2_500_000_000) {
            Issue.record("refused once the interval passed")
        }
        // Fast rates still say at least 1.
        let fast = TokenBucket(requestsPerSecond: 1000, burst: 1)
        tat = TokenBucket.full
        _ = self.run(fast, tat: &tat, count: 1, now: Self.start)
        #expect(fast.consume(tat: tat, now: Self.start) == .refused(retryAfterSeconds: 1))
        // Very slow rates: one request every 1000 s, or about one a day (the rate is held to
        // 10⁻⁹ requests per second: 1/86400 is 0.000011574, one per 86 400.3 s).
        let slower = TokenBucket(requestsPerSecond: 0.001, burst: 1)
        tat = TokenBucket.full
        _ = self.run(slower, tat: &tat, count: 1, now: Self.start)
        #expect(slower.consume(tat: tat, now: Self.start) == .refused(retryAfterSeconds: 1000))
        let daily = TokenBucket(requestsPerSecond: 1.0 / 86400, burst: 1)
        tat = TokenBucket.full
        _ = self.run(daily, tat: &tat, count: 1, now: Self.start)
        #expect(daily.consume(tat: tat, now: Self.start) == .refused(retryAfterSeconds: 86401))
    }

    @Test func resetAndWindowForTheHeaders() {
        let bucket = TokenBucket(requestsPerSecond: 20, burst: 40)
        #expect(bucket.windowSeconds == 2)
        #expect(TokenBucket(requestsPerSecond: 0.5, burst: 3).windowSeconds == 6)
        #expect(TokenBucket(requestsPerSecond: 1000, burst: 1).windowSeconds == 1)
        guard case .admitted(_, let remaining, let reset) = bucket.consume(tat: TokenBucket.full, now: Self.start)
        else {
            Issue.record("refused")
            return
        }
        #expect(remaining == 39)
        // One request (50 ms) to refill: rounds up to a second.
        #expect(reset == 1)
    }

    @Test func refundIsTheInverseOfConsume() {
        let bucket = TokenBucket(requestsPerSecond: 5, burst: 2)
        var tat = TokenBucket.full
        _ = self.run(bucket, tat: &tat, count: 2, now: Self.start)
        tat = bucket.refund(tat: tat)
        #expect(self.run(bucket, tat: &tat, count: 3, now: Self.start).admitted == 1)
    }

    @Test func fractionalRatesDoNotDriftOverAMillionSteps() {
        // 3/s is not a whole number of nanoseconds per request (333 333 333.3…): an interval
        // rounded to the nanosecond, or a floating-point TAT, drifts; the scaled arithmetic
        // admits exactly the burst plus rate × elapsed, whole requests. A million polls, 1 ms
        // apart (999.999 s), burst 2: the n-th request (n > 2) is due at (n − 2) intervals.
        for (rate, expected) in [(3.0, 3001), (0.7, 701), (2.5, 2501), (1.0 / 3, 335)] {
            let bucket = TokenBucket(requestsPerSecond: rate, burst: 2)
            var tat = TokenBucket.full
            var admitted = 0
            var now = Self.start
            for _ in 0..<1_000_000 {
                if case .admitted(let next, _, _) = bucket.consume(tat: tat, now: now) {
                    tat = next
                    admitted += 1
                }
                now += 1_000_000
            }
            #expect(admitted == expected, "rate \(rate)")
        }
    }

    @Test func aSaturatedKeyGetsExactlyTheRateOverALongRun() {
        // Ten requests a second against 7/s (burst 7) for 100 000 s: exactly 7 a second.
        let bucket = TokenBucket(requestsPerSecond: 7, burst: 7)
        var tat = TokenBucket.full
        var admitted = 0
        var now = Self.start
        for _ in 0..<100_000 {
            admitted += self.run(bucket, tat: &tat, count: 10, now: now).admitted
            now += Self.second
        }
        #expect(admitted == 700_000)
    }

    @Test func debitMovesTheBucketAsIfTheRequestsHadComeHere() {
        let bucket = TokenBucket(requestsPerSecond: 10, burst: 10)
        var tat = bucket.debit(tat: TokenBucket.full, requests: 7, now: Self.start)
        #expect(self.run(bucket, tat: &tat, count: 10, now: Self.start).admitted == 3)
        #expect(bucket.isFull(tat: tat, now: Self.start + Self.second))
        #expect(!bucket.isFull(tat: tat, now: Self.start + Self.second - 1))
    }
}
