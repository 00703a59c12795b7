import NIOCore
import Testing

@testable import AuthGateway

/// `TargetHealth` event by event (docs/forwarding.md): the connect-failure sit-out, outlier
/// ejection and health-check thresholds, decided in one place.
@Suite("TargetHealth")
struct TargetHealthTests {
    private let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func outlier(failures: Int = 3, base: Int = 10, percent: Int = 50) -> OutlierDetectionConfiguration {
        var outlier = OutlierDetectionConfiguration()
        outlier.consecutiveFailures = failures
        outlier.baseEjectionSeconds = base
        outlier.maxEjectionPercent = percent
        return outlier
    }

    static func healthCheck(unhealthy: Int = 3, healthy: Int = 2) -> HealthCheckConfiguration {
        var check = HealthCheckConfiguration()
        check.unhealthyThreshold = unhealthy
        check.healthyThreshold = healthy
        return check
    }

    @Test("a refused connect sits out the cooldown; a successful connect ends it at once")
    func connectCooldown() {
        var health = TargetHealth(count: 2, cooldown: .seconds(2))
        #expect(health.connectFailed(0, now: start) == [])  // no outlier detection: no ejection
        #expect(!health.isInRotation(0, now: start + .seconds(1)))
        #expect(health.outOfRotation(now: start + .seconds(1)) == 0b01)
        #expect(health.nextExpiry == start + .seconds(2))
        #expect(health.isInRotation(0, now: start + .seconds(2)))
        #expect(health.connectFailed(0, now: start) == [])
        health.connectSucceeded(0)
        #expect(health.isInRotation(0, now: start))
        #expect(health.nextExpiry == nil)
    }

    @Test("connect failures, resets, timeouts and 502/503/504 count; consecutiveFailures in a row eject")
    func everyKindOfFailureCounts() {
        var health = TargetHealth(count: 4, outlier: Self.outlier(failures: 4, base: 10))
        #expect(health.connectFailed(0, now: start) == [])
        #expect(health.failed(0, .reset, now: start) == [])
        #expect(health.failed(0, .timeout, now: start) == [])
        #expect(health.streaks == 0b0001)
        #expect(health.failed(0, .status(503), now: start) == [.ejected(0, for: .seconds(10))])
        #expect(health.state(of: 0, now: start + .seconds(5)) == .ejected(until: start + .seconds(10)))
        #expect(!health.isInRotation(0, now: start + .seconds(5)))
        #expect(health.streaks == 0)
    }

    @Test("a success resets the count")
    func successResets() {
        var health = TargetHealth(count: 2, outlier: Self.outlier(failures: 3))
        _ = health.failed(0, .status(502), now: start)
        _ = health.failed(0, .status(502), now: start)
        health.succeeded(0)
        #expect(health.streaks == 0)
        #expect(health.failed(0, .status(502), now: start) == [])
        #expect(health.failed(0, .status(502), now: start) == [])
        #expect(health.failed(0, .status(502), now: start) == [.ejected(0, for: .seconds(10))])
    }

    @Test("ejections last base × n, capped at 300 s, and end by themselves")
    func ejectionGrowsAndExpires() {
        var health = TargetHealth(count: 2, outlier: Self.outlier(failures: 1, base: 100))
        var now = start
        #expect(health.failed(0, .reset, now: now) == [.ejected(0, for: .seconds(100))])
        // While ejected (traffic may still reach it in panic routing) failures do not count.
        #expect(health.failed(0, .reset, now: now + .seconds(1)) == [])
        #expect(health.expire(now: now + .seconds(99)) == [])
        now = now + .seconds(100)
        #expect(health.expire(now: now) == [.returned(0)])
        #expect(health.isInRotation(0, now: now))
        #expect(health.failed(0, .reset, now: now) == [.ejected(0, for: .seconds(200))])
        now = now + .seconds(200)
        _ = health.expire(now: now)
        #expect(health.failed(0, .reset, now: now) == [.ejected(0, for: .seconds(300))])
        now = now + .seconds(300)
        _ = health.expire(now: now)
        #expect(health.failed(0, .reset, now: now) == [.ejected(0, for: .seconds(300))])
    }

    @Test("at most maxEjectionPercent of the URLs are ejected, rounded down, but one always can be")
    func maxEjectionPercent() {
        var health = TargetHealth(count: 5, outlier: Self.outlier(failures: 1, percent: 40))
        #expect(health.maxEjected == 2)
        #expect(health.failed(0, .reset, now: start) == [.ejected(0, for: .seconds(10))])
        #expect(health.failed(1, .reset, now: start) == [.ejected(1, for: .seconds(10))])
        // A third would exceed 40 % of 5: URL 2 stays in, and its next failure asks again.
        #expect(health.failed(2, .reset, now: start) == [])
        #expect(health.isInRotation(2, now: start))
        #expect(health.ejectedCount(now: start) == 2)
        _ = health.expire(now: start + .seconds(10))
        #expect(health.failed(2, .reset, now: start + .seconds(10)) == [.ejected(2, for: .seconds(10))])

        let small = TargetHealth(count: 3, outlier: Self.outlier(percent: 10))
        #expect(small.maxEjected == 1)
        let half = TargetHealth(count: 3, outlier: Self.outlier(percent: 50))
        #expect(half.maxEjected == 1)
    }

    @Test("URLs start healthy and change only by the thresholds")
    func healthThresholds() {
        var health = TargetHealth(count: 2, healthCheck: Self.healthCheck(unhealthy: 3, healthy: 2))
        #expect(health.state(of: 0, now: start) == .healthy)
        #expect(health.probed(0, passed: false) == [])
        #expect(health.probed(0, passed: false) == [])
        // A pass in between starts the count again.
        #expect(health.probed(0, passed: true) == [])
        #expect(health.probed(0, passed: false) == [])
        #expect(health.probed(0, passed: false) == [])
        #expect(health.probed(0, passed: false) == [.unhealthy(0)])
        #expect(health.state(of: 0, now: start) == .unhealthy)
        #expect(health.outOfRotation(now: start) == 0b01)
        #expect(health.probed(0, passed: false) == [])
        #expect(health.probed(0, passed: true) == [])
        #expect(health.probed(0, passed: false) == [])
        #expect(health.probed(0, passed: true) == [])
        #expect(health.probed(0, passed: true) == [.healthy(0)])
        #expect(health.isInRotation(0, now: start))
    }

    @Test("without healthCheck, probes change nothing; without outlierDetection, failures eject nothing")
    func offMeansOff() {
        var health = TargetHealth(count: 1)
        for _ in 0..<10 {
            #expect(health.probed(0, passed: false) == [])
            #expect(health.failed(0, .status(503), now: start) == [])
        }
        #expect(health.isInRotation(0, now: start))
    }
}
