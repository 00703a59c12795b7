import Crypto
import Foundation
import NIOHTTP1
import Testing

@testable import AuthGateway

/// The pure part of the rate-limit sync across instances (docs/rate-limits.md): usage drained and
/// merged, rows debited once, and — with an in-memory "database" standing in for PostgreSQL —
/// the over-admission bound docs/rate-limits.md states.
@Suite("RateLimit sync")
struct RateLimitSyncTests {
    static let second: UInt64 = 1_000_000_000
    static let start: UInt64 = 9_000 * 1_000_000_000
    static let key = SymmetricKey(data: Array(repeating: UInt8(3), count: 32))

    static func limiter(rate: Double, burst: Int, syncs: Bool = true) -> RateLimiter {
        var configuration = RateLimiterTests().configuration([
            RateLimitConfiguration(name: "per-user", key: .claim("sub"), requestsPerSecond: rate, burst: burst)
        ])
        configuration.rateLimits[0].routes = nil
        return RateLimiter(configuration: configuration, hashingKey: Self.key, syncsUsage: syncs)
    }

    static func admit(_ limiter: RateLimiter, sub: String, now: UInt64) -> Bool {
        let request = RateLimiterTests().request(sub: sub)
        guard case .admitted = limiter.check(limiter.tables(forRoute: "default")!, request: request, now: now) else {
            return false
        }
        return true
    }

    @Test func usageIsDrainedOncePerKeyAndRefusalsAreNotCounted() {
        let limiter = Self.limiter(rate: 1, burst: 3)
        for _ in 0..<5 { _ = Self.admit(limiter, sub: "alice", now: Self.start) }
        _ = Self.admit(limiter, sub: "bob", now: Self.start)
        let usage = limiter.drainUsage().sorted { $0.requests > $1.requests }
        #expect(usage.map(\.requests) == [3, 1])
        #expect(usage.allSatisfy { $0.limit == "per-user" })
        #expect(limiter.drainUsage().isEmpty, "drained: counting starts afresh")
        // Without a shared state nothing is counted.
        let local = Self.limiter(rate: 1, burst: 3, syncs: false)
        _ = Self.admit(local, sub: "alice", now: Self.start)
        #expect(local.drainUsage().isEmpty)
    }

    @Test func aRefundedRequestIsNotReported() {
        var configuration = RateLimiterTests().configuration([
            RateLimitConfiguration(name: "per-user", key: .claim("sub"), requestsPerSecond: 1, burst: 5),
            RateLimitConfiguration(name: "per-ip", key: .clientIP, requestsPerSecond: 1, burst: 1),
        ])
        configuration.rateLimits[0].routes = nil
        let limiter = RateLimiter(configuration: configuration, hashingKey: Self.key, syncsUsage: true)
        for _ in 0..<4 { _ = Self.admit(limiter, sub: "alice", now: Self.start) }
        let usage = Dictionary(uniqueKeysWithValues: limiter.drainUsage().map { ($0.limit, $0.requests) })
        #expect(usage == ["per-user": 1, "per-ip": 1])
    }

    @Test func mergeSumsPerLimitAndKey() {
        let a = RateLimitKey(high: 1, low: 2)
        let b = RateLimitKey(high: 3, low: 4)
        let merged = RateLimitSyncState.merge([
            .init(limit: "x", key: a, requests: 2), .init(limit: "y", key: a, requests: 1),
            .init(limit: "x", key: a, requests: 3),
            .init(limit: "x", key: b, requests: 0),
        ])
        #expect(merged == [.init(limit: "x", key: a, requests: 5), .init(limit: "y", key: a, requests: 1)])
    }

    @Test func rowsAreDebitedOnceAndOwnRowsNever() {
        let me = UUID()
        let other = UUID()
        let third = UUID()
        var state = RateLimitSyncState(instance: me)
        #expect(state.nextSequence() == 1)
        #expect(state.nextSequence() == 2)
        let key = RateLimitKey(high: 9, low: 9)
        func row(_ instance: UUID, _ sequence: Int64) -> RemoteRateLimitUsage {
            RemoteRateLimitUsage(
                instance: instance, sequence: sequence, limit: "per-user", key: key, requests: 1, ageMilliseconds: 0)
        }
        let first = state.accept([row(other, 1), row(other, 2), row(me, 1), row(third, 7)])
        #expect(first == [row(other, 1), row(other, 2), row(third, 7)])
        #expect(state.watermarks == [other: 2, third: 7])
        // Read again (a stale view): nothing twice; only what is new.
        let second = state.accept([row(other, 2), row(other, 3), row(third, 7)])
        #expect(second == [row(other, 3)])
        #expect(state.watermarks == [other: 3, third: 7])
    }

    @Test func hexKeysRoundTrip() {
        let key = RateLimitKey(high: 0x0123_4567_89AB_CDEF, low: 0x10)
        #expect(key.description == "0123456789abcdef0000000000000010")
        #expect(RateLimitKey(hex: key.description) == key)
        #expect(RateLimitKey(hex: "xyz") == nil)
    }

    @Test func debitsUseTheRowsAgeAndTheirLimitsName() {
        let limiter = Self.limiter(rate: 1, burst: 4)
        let key = limiter.key(for: .claim("sub"), request: RateLimiterTests().request(sub: "alice"))
        // Another instance admitted 3 for alice just now, and 4 ten seconds ago (refilled since).
        limiter.debit(
            [
                RemoteRateLimitUsage(
                    instance: UUID(), sequence: 1, limit: "per-user", key: key, requests: 4, ageMilliseconds: 10_000),
                RemoteRateLimitUsage(
                    instance: UUID(), sequence: 1, limit: "per-user", key: key, requests: 3, ageMilliseconds: 0),
                RemoteRateLimitUsage(
                    instance: UUID(), sequence: 1, limit: "removed-limit", key: key, requests: 100, ageMilliseconds: 0),
            ],
            now: Self.start
        )
        var admitted = 0
        for _ in 0..<10 where Self.admit(limiter, sub: "alice", now: Self.start) { admitted += 1 }
        #expect(admitted == 1)
        #expect(limiter.drainUsage().map(\.requests) == [1], "debits are not this instance's usage")
    }

    /// Two instances, each syncing every `interval` through an in-memory table, one request
    /// every 10 ms alternating between them for 20 s: all together admit at most
    /// burst + rate × t plus what the other admitted in one sync interval (docs/rate-limits.md),
    /// and far fewer than two unsynced instances would.
    @Test func twoInstancesStayWithinTheDocumentedBound() {
        let rate = 5.0
        let burst = 10
        let interval: UInt64 = 200_000_000
        let instances = [Self.limiter(rate: rate, burst: burst), Self.limiter(rate: rate, burst: burst)]
        var states = [RateLimitSyncState(instance: UUID()), RateLimitSyncState(instance: UUID())]
        var table: [RemoteRateLimitUsage] = []
        var admitted = 0
        var admittedSince = [0, 0]
        var worstInterval = 0
        let step: UInt64 = 10_000_000
        let steps = 2000
        var now = Self.start
        for index in 0..<steps {
            let which = index % 2
            if Self.admit(instances[which], sub: "alice", now: now) {
                admitted += 1
                admittedSince[which] += 1
            }
            now += step
            if (now - Self.start) % interval == 0 {
                for (position, limiter) in instances.enumerated() {
                    let sequence = states[position].nextSequence()
                    for usage in RateLimitSyncState.merge(limiter.drainUsage()) {
                        table.append(
                            RemoteRateLimitUsage(
                                instance: states[position].instance, sequence: sequence, limit: usage.limit,
                                key: usage.key, requests: usage.requests, ageMilliseconds: 0))
                    }
                    limiter.debit(states[position].accept(table), now: now)
                    worstInterval = max(worstInterval, admittedSince[position])
                    admittedSince[position] = 0
                }
            }
        }
        let seconds = Double(UInt64(steps) * step) / 1e9
        let bound = Double(burst) + rate * seconds + Double(worstInterval)
        #expect(Double(admitted) <= bound, "admitted \(admitted), bound \(bound)")
        // Unsynced, the two would admit 2 × (burst + rate × t) = 220.
        #expect(Double(admitted) < 0.7 * 2 * (Double(burst) + rate * seconds), "admitted \(admitted)")
        #expect(Double(admitted) >= rate * seconds, "the limit still admits its rate: \(admitted)")
    }
}
