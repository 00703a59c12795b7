import NIOCore

/// One configured backend as a (re)load resolved it: everything about it that is the same on
/// every event loop — its configuration, TLS, availability, timeouts and health record keys.
///
/// Built once per configuration (`RuntimeSnapshot.backends`) so that a request reaches all
/// of it through its route (`ResolvedRoute.backendIndex`) and never looks a backend up by
/// name. Each event loop's pool for it lives in that loop's `UpstreamRegistry`, at `index`.
final class ResolvedBackend: Sendable {
    /// Its position in `RuntimeSnapshot.backends` (and in each loop's `UpstreamRegistry`).
    let index: Int
    let configuration: BackendConfiguration
    /// For `https` URLs (docs/forwarding.md); nil for a backend without any.
    let tls: UpstreamTLS?
    /// Which URLs are in rotation: process-wide, kept across reloads while the backend's
    /// URLs and checks are unchanged (`BackendAvailabilities`).
    let availability: TargetAvailability
    let connectTimeout: TimeAmount
    let responseTimeout: TimeAmount
    /// Where `HealthState` keeps each URL's connect results, by URL index.
    let healthKeys: [DependencyKey]

    init(index: Int, configuration: BackendConfiguration, tls: UpstreamTLS?, availability: TargetAvailability) {
        self.index = index
        self.configuration = configuration
        self.tls = tls
        self.availability = availability
        self.connectTimeout = .milliseconds(Int64(configuration.connectTimeoutMilliseconds))
        self.responseTimeout = .milliseconds(Int64(configuration.responseTimeoutMilliseconds))
        self.healthKeys = configuration.urls.map { DependencyKey(upstream: .backend(configuration.name), url: $0) }
    }

    var name: String { self.configuration.name }

    /// `backends` in order, each with the TLS and availability at the same position (as
    /// `UpstreamTLS.backends` and `BackendAvailabilities.update` return them).
    static func resolve(
        _ backends: [BackendConfiguration], tls: [UpstreamTLS?], availabilities: [TargetAvailability]
    ) -> [ResolvedBackend] {
        precondition(tls.count == backends.count && availabilities.count == backends.count)
        return backends.indices.map { index in
            ResolvedBackend(
                index: index, configuration: backends[index], tls: tls[index], availability: availabilities[index])
        }
    }
}
