import Logging
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import AuthGateway

/// `TargetAvailability`: the process-wide shell of `TargetHealth` that every loop's pool of a
/// backend shares — its published mask, and one reported change per change.
@Suite("TargetAvailability")
struct TargetAvailabilityTests {
    static let urls = [
        UpstreamURL(scheme: .http, host: "10.0.0.1", port: 80, pathAndQuery: ""),
        UpstreamURL(scheme: .http, host: "10.0.0.2", port: 80, pathAndQuery: ""),
    ]

    static func make(failures: Int = 2, base: Int = 1) -> (TargetAvailability, NIOLockedValueBox<[TargetHealth.Change]>)
    {
        let changes = NIOLockedValueBox<[TargetHealth.Change]>([])
        var outlier = OutlierDetectionConfiguration()
        outlier.consecutiveFailures = failures
        outlier.baseEjectionSeconds = base
        let availability = TargetAvailability(name: "api", urls: Self.urls, outlier: outlier) { change, _ in
            changes.withLockedValue { $0.append(change) }
        }
        return (availability, changes)
    }

    @Test func anEjectionIsPublishedAndReportedOnceHoweverManyFailuresFollow() {
        let (availability, changes) = Self.make()
        let now = NIODeadline.now()
        availability.failed(0, .status(502), now: now)
        #expect(availability.outOfRotation(now: now) == 0)
        availability.failed(0, .status(503), now: now)
        #expect(availability.outOfRotation(now: now) == 0b01)
        for _ in 0..<20 { availability.failed(0, .timeout, now: now) }
        #expect(changes.withLockedValue { $0 } == [.ejected(0, for: .seconds(1))])
        #expect(!availability.isUp(0, now: now))
        #expect(availability.isUp(1, now: now))
        // The ejection ends by itself: the next read after it publishes the return, once.
        #expect(availability.outOfRotation(now: now + .seconds(1)) == 0)
        #expect(availability.outOfRotation(now: now + .seconds(2)) == 0)
        #expect(changes.withLockedValue { $0 } == [.ejected(0, for: .seconds(1)), .returned(0)])
    }

    @Test func aSuccessEndsAStreak() {
        let (availability, changes) = Self.make(failures: 2)
        let now = NIODeadline.now()
        availability.failed(1, .reset, now: now)
        availability.succeeded(1)
        availability.failed(1, .reset, now: now)
        #expect(availability.outOfRotation(now: now) == 0)
        #expect(changes.withLockedValue { $0 }.isEmpty)
        availability.failed(1, .reset, now: now)
        #expect(availability.outOfRotation(now: now) == 0b10)
    }

    @Test func aRefusedConnectSitsOutForEveryPoolSharingIt() {
        let availability = TargetAvailability(name: "api", urls: Self.urls)
        let now = NIODeadline.now()
        availability.connectFailed(1, now: now)
        #expect(availability.outOfRotation(now: now) == 0b10)
        #expect(availability.outOfRotation(now: now + .milliseconds(1999)) == 0b10)
        #expect(availability.outOfRotation(now: now + .seconds(2)) == 0)
        availability.connectFailed(0, now: now)
        availability.connectSucceeded(0)
        #expect(availability.outOfRotation(now: now) == 0)
        // No outlier detection: a sit-out is all a refused connect costs.
        #expect(availability.isUp(0, now: now) && availability.isUp(1, now: now))
    }

    @Test func aReloadKeepsItWhileURLsAndSettingsHold() {
        let (availability, _) = Self.make()
        var backend = BackendConfiguration(
            name: "api", urls: Self.urls, connectTimeoutMilliseconds: 1000, responseTimeoutMilliseconds: 1000,
            maxConnectionsPerThread: 1)
        var outlier = OutlierDetectionConfiguration()
        outlier.consecutiveFailures = 2
        outlier.baseEjectionSeconds = 1
        backend.outlierDetection = outlier
        #expect(availability.matches(backend))
        backend.healthCheck = HealthCheckConfiguration()
        #expect(!availability.matches(backend))
        backend.healthCheck = nil
        backend.urls = [Self.urls[0]]
        #expect(!availability.matches(backend))
    }

    /// Operators get one log line per change, never one per request.
    @Test func eachChangeIsOneLogLine() {
        let capture = LogCapture()
        let logger = Logger(label: "test") { _ in capture }
        var outlier = OutlierDetectionConfiguration()
        outlier.consecutiveFailures = 1
        outlier.baseEjectionSeconds = 1
        var check = HealthCheckConfiguration()
        check.unhealthyThreshold = 1
        check.healthyThreshold = 1
        let availability = TargetAvailability(
            name: "api", urls: Self.urls, outlier: outlier, healthCheck: check, logger: logger)
        let now = NIODeadline.now()
        for _ in 0..<10 { availability.failed(0, .status(502), now: now) }
        for _ in 0..<10 { availability.succeeded(1) }
        _ = availability.outOfRotation(now: now + .seconds(5))
        for _ in 0..<3 { availability.probed(1, passed: false, now: now + .seconds(5)) }
        for _ in 0..<3 { availability.probed(1, passed: true, now: now + .seconds(5)) }
        let lines = capture.text.split(separator: "\n")
        #expect(lines.count == 4, "\(capture.text)")
        #expect(lines.filter { $0.contains("backend.url_ejected") && $0.contains("http://10.0.0.1") }.count == 1)
        #expect(lines.filter { $0.contains("backend.url_returned") }.count == 1)
        #expect(lines.filter { $0.contains("backend.url_unhealthy") && $0.contains("http://10.0.0.2") }.count == 1)
        #expect(lines.filter { $0.contains("backend.url_healthy") }.count == 1)
    }
}
