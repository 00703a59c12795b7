import ServiceLifecycle

/// Refreshes every remote JWKS (and discovery document) after its start-up fetch (made by `GatewayApplication.start`,
/// docs/operations.md: once): until the first success with a short backoff (readiness waits for
/// it), then every `jwksRefreshSeconds`. Not per request, so a `Task` per issuer is fine.
public struct KeyRefreshService: Service {
    let application: GatewayApplication

    public init(application: GatewayApplication) {
        self.application = application
    }

    public func run() async throws {
        let application = self.application
        guard !application.shared.keyStore.remoteIssuers.isEmpty else {
            // Nothing to refresh; a service that returns early would end the whole group.
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                for issuer in application.shared.keyStore.remoteIssuers {
                    group.addTask {
                        var backoff = 1.0
                        // nil: no start-up fetch for this issuer; the loop fetches from here.
                        // (`try?` would flatten that nil into "start failed" and end the loop.)
                        let startup: Bool?
                        do { startup = try await application.startupKeyFetch(issuer: issuer.issuer) } catch { return }
                        var fetched = startup ?? false
                        while !Task.isCancelled {
                            let delay = fetched ? Double(issuer.refreshSeconds) : backoff
                            try? await Task.sleep(for: .seconds(delay))
                            if Task.isCancelled { return }
                            let succeeded = (try? await application.fetchKeys(issuer: issuer.issuer).get()) ?? false
                            fetched = fetched || succeeded
                            backoff = succeeded ? 1 : min(backoff * 2, Double(issuer.refreshSeconds))
                        }
                    }
                }
            }
        }
    }
}

/// Named, never reflected: see `GatewayService`'s description.
extension KeyRefreshService: CustomStringConvertible, CustomReflectable {
    public var description: String { "KeyRefreshService" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}
