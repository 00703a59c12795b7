import Testing

@testable import AuthGateway

@Suite("DatabaseAvailability")
struct DatabaseAvailabilityTests {
    static let failure = SharedStateFailure(operation: .claim, reason: "no answer within 1000 ms")

    @Test func startsUnusedWithAProbeDueAtOnce() {
        let availability = DatabaseAvailability(now: 100)
        #expect(availability.status == .starting)
        #expect(!availability.usesDatabase)
        #expect(availability.isProbeDue(now: 100))
    }

    @Test func aSuccessfulProbeOpensTheDatabaseToRefreshes() {
        var availability = DatabaseAvailability(now: 100)
        let recovered = availability.succeeded(now: 100.1)
        #expect(recovered)
        #expect(availability.status == .up)
        #expect(availability.usesDatabase)
        #expect(!availability.isProbeDue(now: 1000))
        let again = availability.succeeded(now: 101)
        #expect(!again, "already up: not a recovery")
    }

    @Test func failuresAtStartKeepStartingWithGrowingBackoff() {
        var availability = DatabaseAvailability(now: 0)
        let outage = availability.failed(Self.failure, now: 0)
        #expect(!outage)
        #expect(availability.status == .starting)
        #expect(!availability.isProbeDue(now: 0.2))
        #expect(availability.isProbeDue(now: 0.25))
        availability.failed(Self.failure, now: 0.25)
        #expect(availability.probeAt == 0.75)
        availability.failed(Self.failure, now: 0.75)
        #expect(availability.probeAt == 1.75)
        for _ in 0..<20 { availability.failed(Self.failure, now: 10) }
        #expect(availability.probeAt == 10 + DatabaseAvailability.maximumBackoff)
        #expect(
            availability.lastFailure
                == SharedStateFailureRecord(operation: .claim, reason: "no answer within 1000 ms", at: 10))
    }

    @Test func aFailureWhileUpFallsBackAtOnceUntilAProbeSucceeds() {
        var availability = DatabaseAvailability(now: 0)
        availability.succeeded(now: 0)
        let started = availability.failed(Self.failure, now: 50)
        #expect(started, "the start of an outage")
        #expect(availability.status == .down)
        #expect(!availability.usesDatabase)
        let same = availability.failed(Self.failure, now: 50.1)
        #expect(!same, "the same outage")
        // A statement begun before the outage and answered late does not end it.
        let late = availability.succeeded(now: 50.2)
        #expect(!late)
        #expect(availability.status == .down)
        #expect(availability.isProbeDue(now: 50.6))
        let probed = availability.succeeded(now: 50.6)
        #expect(probed)
        #expect(availability.usesDatabase)
        #expect(availability.consecutiveFailures == 0)
        // The backoff starts over after a recovery.
        availability.failed(Self.failure, now: 60)
        #expect(availability.probeAt == 60.25)
    }
}
