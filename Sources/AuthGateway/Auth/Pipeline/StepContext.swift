import Logging
import NIOCore

/// What a step is built from: one event loop's view of one configuration — the configuration,
/// each feature's services (`AuthenticationFeatures`), what the process has learned
/// (`AuthenticationState`), the loop's metrics and clients. `AuthenticationSteps.make` builds
/// every step from it, so a new step reaches what it needs without a change anywhere else.
///
/// Built per loop and configuration (`Worker`, never per request); offline for `check
/// --request`, where nothing may be contacted.
struct StepContext {
    let eventLoop: EventLoop
    let configuration: GatewayConfiguration
    let features: AuthenticationFeatures
    let state: AuthenticationState
    let metrics: WorkerMetrics
    /// The loop's client for an upstream URL's origin; nil for every URL offline.
    let clients: (UpstreamURL) -> UpstreamClient?
    /// Where refresh calls and profile fetches go.
    let endpoints: AuthServiceEndpoints
    /// Where an introspection call goes now.
    let introspectionEndpoint: () -> UpstreamEndpoint?

    let logger: Logger
    /// Wall-clock seconds since 1970 now (injectable: tests move time).
    let clock: @Sendable () -> Double
    /// `check --request`: nothing is contacted (every client and endpoint is nil), and the
    /// steps note what explains their answer; nil live, where nothing is noted.
    var notes: StepNotes? = nil
}

/// What steps note for `check --request` (docs/policies.md, "check --request"): the answers
/// the report explains beyond the decision itself.
final class StepNotes {
    /// The route's requirement, clause by clause, as `RequirementCheck` decided it.
    var requirements: RequirementExplanation?
    /// The exchange that would be made (`TokenExchange`).
    var exchange: ExchangeConfiguration?
    /// What the backend's assertion would say (`SignedAssertion`).
    var assertion: AssertionInput?
}

/// How each worker builds its authentication pipeline from its `StepContext`: the registered
/// steps (`AuthenticationSteps`), or — for the test that shows a new step runs in every mode —
/// those steps and one more, registered the same way.
package struct AuthenticationAssembly: Sendable {
    let build: @Sendable (StepContext) -> RequestAuthenticator

    init(build: @escaping @Sendable (StepContext) -> RequestAuthenticator) { self.build = build }

    package static let standard = AuthenticationAssembly { RequestAuthenticator($0) }
}
