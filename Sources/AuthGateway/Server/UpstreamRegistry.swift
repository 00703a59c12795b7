import NIOCore

/// One event loop's upstreams (docs/architecture.md: each loop owns its pools, so leasing
/// takes no lock): a pool for each backend of the configuration in force, at the backend's
/// index (`ResolvedBackend.index`), and the clients for the gateway's own calls — the auth
/// service, JWKS URLs, discovery documents, the endpoints those documents name, and
/// introspection (`UpstreamRegistry+Clients.swift`).
///
/// `apply` adopts a (re)loaded configuration: a backend whose configuration and availability
/// are unchanged keeps its pool, and with it its keep-alive connections; so does an unchanged
/// client. Whatever is replaced or gone is shut down. Only ever touched on `eventLoop`.
final class UpstreamRegistry {
    let eventLoop: EventLoop
    /// The connector, client TLS, health records, clock and discovery documents pools and
    /// clients are made with.
    let shared: GatewayShared
    /// Each backend's pool, by `ResolvedBackend.index`, with the backend it was made or kept for.
    private var backends: [BackendPool] = []
    /// The clients for the gateway's own calls, by origin (`origin(_:)`).
    var clients: [String: OriginClient] = [:]
    /// The timeout of the auth service, JWKS, discovery and discovered clients.
    var clientTimeout = TimeAmount.milliseconds(3000)
    /// The client of `authService.url`, nil without one.
    var authServiceClient: UpstreamClient?
    /// The client for the introspection endpoint (`tokens.introspection.url`, or the origin of
    /// the discovered `introspection_endpoint`, made on first use): a pool of its own, with
    /// the introspection timeout.
    var introspectionClient: UpstreamClient?

    private struct BackendPool {
        let backend: ResolvedBackend
        let pool: UpstreamPool
    }

    /// A client for one origin, and which upstream it is (its health records' key).
    struct OriginClient {
        let client: UpstreamClient
        let upstream: DependencyKey.Upstream
    }

    init(eventLoop: EventLoop, shared: GatewayShared) {
        self.eventLoop = eventLoop
        self.shared = shared
    }

    /// The loop's pool for `backend`: the one at its index when `backend` is of the snapshot
    /// last applied (every request planned at once). A request whose decision waited on the
    /// auth service or a key refetch may come back after a reload replaced that snapshot: it
    /// goes to the backend of the same name in the configuration now in force, and gets nil
    /// when the reload removed that name (the caller answers 502).
    func pool(for backend: ResolvedBackend) -> UpstreamPool? {
        if backend.index < self.backends.count, self.backends[backend.index].backend === backend {
            return self.backends[backend.index].pool
        }
        return self.backends.first { $0.backend.name == backend.name }?.pool
    }

    /// Adopts `snapshot`'s backends and the clients its configuration needs; the auth
    /// service's client is `authServiceClient` afterwards.
    func apply(_ snapshot: RuntimeSnapshot) {
        self.applyBackends(snapshot.backends)
        self.applyClients(snapshot.configuration)
    }

    /// Each backend's pool: the one it had while its configuration and availability are the
    /// same (a TLS-only reload is a configuration change too), else a new one.
    private func applyBackends(_ backends: [ResolvedBackend]) {
        var previous: [String: BackendPool] = [:]
        for entry in self.backends { previous[entry.backend.name] = entry }
        var kept: Set<ObjectIdentifier> = []
        self.backends = backends.map { backend in
            if let existing = previous[backend.name], existing.backend.configuration == backend.configuration,
                existing.pool.availability === backend.availability
            {
                kept.insert(ObjectIdentifier(existing.pool))
                return BackendPool(backend: backend, pool: existing.pool)
            }
            let configuration = backend.configuration
            let pool = self.makePool(
                name: DependencyKey.Upstream.backend(backend.name).poolName,
                targets: configuration.urls,
                healthKeys: backend.healthKeys,
                maxConnections: configuration.maxConnectionsPerThread,
                connectTimeout: backend.connectTimeout,
                wireProtocol: configuration.wireProtocol,
                tls: backend.tls,
                availability: backend.availability
            )
            return BackendPool(backend: backend, pool: pool)
        }
        for entry in previous.values where !kept.contains(ObjectIdentifier(entry.pool)) {
            entry.pool.shutdown()
        }
    }

    /// A pool whose connect results go to `HealthState` under `healthKeys[index]` (for
    /// `/healthz`).
    func makePool(
        name: String, targets: [UpstreamURL], healthKeys: [DependencyKey], maxConnections: Int,
        connectTimeout: TimeAmount, wireProtocol: BackendConfiguration.WireProtocol = .http1,
        tls: UpstreamTLS?, availability: TargetAvailability? = nil
    ) -> UpstreamPool {
        let pool = UpstreamPool(
            name: name,
            eventLoop: self.eventLoop,
            targets: targets,
            maxConnections: maxConnections,
            connectTimeout: connectTimeout,
            tls: tls,
            connector: self.shared.connector,
            wireProtocol: wireProtocol,
            availability: availability
        )
        let health = self.shared.health
        let clock = self.shared.clock
        pool.onConnectResult = { index, success, error in
            health.record(healthKeys[index], success: success, error: error, now: clock())
        }
        return pool
    }
}

@available(*, unavailable)
extension UpstreamRegistry: Sendable {}
