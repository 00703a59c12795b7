import Testing

@testable import AuthGateway

/// `HealthState`: the facts behind `/livez`, `/readyz` and `/healthz` (docs/operations.md).
@Suite("HealthState")
struct HealthStateTests {
    private static let url = UpstreamURL(scheme: .http, host: "10.0.0.1", port: 80, pathAndQuery: "")
    private static let api = DependencyKey(upstream: .backend("api"), url: url)

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
        #expect(health.status(of: Self.api) == nil)

        health.record(Self.api, success: true, now: 100)
        #expect(health.status(of: Self.api)?.isFailing == false)

        health.record(Self.api, success: false, error: "connection refused", now: 101)
        let failing = health.status(of: Self.api)
        #expect(failing?.isFailing == true)
        #expect(failing?.lastError == "connection refused")
        #expect(failing?.lastSuccess == 100)

        health.record(Self.api, success: true, now: 102)
        let recovered = health.status(of: Self.api)
        #expect(recovered?.isFailing == false)
        #expect(recovered?.lastError == nil)
        #expect(recovered?.lastFailure == 101)
        // Another dependency is tracked apart: another upstream on the same URL, another URL.
        #expect(health.status(of: DependencyKey(upstream: .authService, url: Self.url)) == nil)
        #expect(health.status(of: DependencyKey(upstream: .backend("other"), url: Self.url)) == nil)
        let otherURL = UpstreamURL(scheme: .http, host: "10.0.0.2", port: 80, pathAndQuery: "")
        #expect(health.status(of: DependencyKey(upstream: .backend("api"), url: otherURL)) == nil)
    }

    /// A failure and a success at the same instant: the failure counts (it may be the later one).
    @Test func aFailureAtTheSameInstantAsTheLastSuccessIsFailing() {
        let health = HealthState()
        let jwks = DependencyKey(upstream: .jwks, url: Self.url)
        health.record(jwks, success: true, now: 5)
        health.record(jwks, success: false, error: "timeout", now: 5)
        #expect(health.status(of: jwks)?.isFailing == true)
    }
}
