import Testing

@testable import AuthGateway

/// `HealthState`: the facts behind `/livez`, `/readyz` and `/healthz` (SPEC §4.6).
@Suite("HealthState")
struct HealthStateTests {
    @Test func startsNotActiveNotDrainingAndEachFlagOnlyTurnsOn() {
        let health = HealthState()
        #expect(!health.isConfigActive)
        #expect(!health.isDraining)
        health.markConfigActive()
        health.startDraining()
        #expect(health.isConfigActive)
        #expect(health.isDraining)
    }

    @Test func aDependencyFailsUntilItsNextSuccessWhichClearsTheError() {
        let health = HealthState()
        #expect(health.status(of: "backend api") == nil)

        health.record("backend api", success: true, now: 100)
        #expect(health.status(of: "backend api")?.isFailing == false)

        health.record("backend api", success: false, error: "connection refused", now: 101)
        let failing = health.status(of: "backend api")
        #expect(failing?.isFailing == true)
        #expect(failing?.lastError == "connection refused")
        #expect(failing?.lastSuccess == 100)

        health.record("backend api", success: true, now: 102)
        let recovered = health.status(of: "backend api")
        #expect(recovered?.isFailing == false)
        #expect(recovered?.lastError == nil)
        #expect(recovered?.lastFailure == 101)
        // Another dependency is tracked apart.
        #expect(health.status(of: "auth service") == nil)
    }

    /// A failure and a success at the same instant: the failure counts (it may be the later one).
    @Test func aFailureAtTheSameInstantAsTheLastSuccessIsFailing() {
        let health = HealthState()
        health.record("jwks", success: true, now: 5)
        health.record("jwks", success: false, error: "timeout", now: 5)
        #expect(health.status(of: "jwks")?.isFailing == true)
    }
}
