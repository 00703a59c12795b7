/// A configured route with its backend resolved: what route matching returns.
///
/// Resolved when the table is built (docs/configuration.md: a validated configuration's
/// routes only name configured backends), so a request goes from its route to its backend
/// (`RuntimeSnapshot.backends[backendIndex]`) and that backend's pool on its loop
/// (`UpstreamRegistry`) by position, never by name.
///
/// A class, made once per route when the table is built: a request carries it by reference
/// (`AuthRequest`, `AllowedRequest`), where a copy of the whole `RouteConfiguration` at each step
/// cost a memmove and a retain per field (measured: ~5 % of a cached-token request's CPU).
package final class ResolvedRoute: Sendable {
    /// The route as configured; what authentication, rate limits and forwarding read.
    let configuration: RouteConfiguration
    /// Its backend's position in the configuration's backends (`RuntimeSnapshot.backends`).
    let backendIndex: Int

    init(configuration: RouteConfiguration, backendIndex: Int) {
        self.configuration = configuration
        self.backendIndex = backendIndex
    }
}
