import NIOCore

/// The clients for the gateway's own calls. The auth service, JWKS and discovery endpoints are
/// upstreams like any other (one pool kind for everything behind the gateway); each client is
/// found by its origin, so a JWKS URL on the auth service's origin shares its client.
extension UpstreamRegistry {
    /// The clients `configuration` names, keeping each one that is unchanged (with its
    /// connections), and the clients made for discovered endpoints the current discovery
    /// documents still name.
    func applyClients(_ configuration: GatewayConfiguration) {
        let timeout = TimeAmount.milliseconds(Int64(configuration.authService?.timeoutMilliseconds ?? 3000))
        var clients: [String: OriginClient] = [:]
        var authClient: UpstreamClient?
        if let url = configuration.authService?.url {
            let client = self.makeClient(
                .authService, url: url, timeout: timeout, reuse: self.clients[Self.origin(url)]?.client)
            clients[Self.origin(url)] = OriginClient(client: client, upstream: .authService)
            authClient = client
        }
        for issuer in configuration.tokens.issuers {
            guard let source = issuer.jwks?.source, clients[Self.origin(source.fetchURL)] == nil else { continue }
            let upstream: DependencyKey.Upstream = if case .discovery = source { .discovery } else { .jwks }
            let origin = Self.origin(source.fetchURL)
            let client = self.makeClient(
                upstream, url: source.fetchURL, timeout: timeout, reuse: self.clients[origin]?.client)
            clients[origin] = OriginClient(client: client, upstream: upstream)
        }
        // Clients for what the current discovery documents name stay (with their connections).
        for url in self.shared.keyStore.discoveredURLs {
            let origin = Self.origin(url)
            guard clients[origin] == nil, let existing = self.clients[origin], existing.client.timeout == timeout,
                existing.upstream == .discovered
            else { continue }
            clients[origin] = existing
        }
        for old in self.clients.values where !clients.values.contains(where: { $0.client === old.client }) {
            old.client.pool.shutdown()
        }
        self.clients = clients
        self.clientTimeout = timeout
        self.authServiceClient = authClient
        let introspection = configuration.tokens.introspection
        // A discovered endpoint's client is made (or kept) when a call needs it.
        let introspectionClient = introspection.flatMap { introspection in
            guard let url = introspection.url else {
                return introspection.discoveryIssuer == nil ? nil : self.introspectionClient
            }
            return self.makeClient(
                .introspection, url: url, timeout: .milliseconds(Int64(introspection.timeoutMilliseconds)),
                reuse: self.introspectionClient
            )
        }
        if let old = self.introspectionClient, old !== introspectionClient { old.pool.shutdown() }
        self.introspectionClient = introspectionClient
    }

    /// The loop's client for `url`'s origin: a configured one, or one made now for an endpoint
    /// of a discovery document (a provider's `jwks_uri`, `token_endpoint` and
    /// `userinfo_endpoint` may live on other origins than anything configured). Nil for an
    /// `https` URL when the gateway has no client TLS.
    func client(for url: UpstreamURL) -> UpstreamClient? {
        let origin = Self.origin(url)
        if let existing = self.clients[origin] { return existing.client }
        if url.isTLS && self.shared.clientTLS == nil { return nil }
        self.pruneDiscoveredClients()
        let base = UpstreamURL(scheme: url.scheme, host: url.host, port: url.port, pathAndQuery: "")
        let client = self.makeClient(.discovered, url: base, timeout: self.clientTimeout, reuse: nil)
        self.clients[origin] = OriginClient(client: client, upstream: .discovered)
        return client
    }

    /// The key `/healthz` finds `url`'s connect results under, when the loop has a client for
    /// its origin.
    func dependencyKey(for url: UpstreamURL) -> DependencyKey? {
        self.clients[Self.origin(url)].map { DependencyKey(upstream: $0.upstream, url: $0.client.pool.targets[0]) }
    }

    /// Drops clients made for endpoints no accepted discovery document names any more, so a
    /// provider that moves its endpoints around does not grow the loop's clients.
    private func pruneDiscoveredClients() {
        guard self.clients.values.count(where: { $0.upstream == .discovered }) >= 8 else { return }
        let current = Set(self.shared.keyStore.discoveredURLs.map(Self.origin))
        for (origin, entry) in self.clients where entry.upstream == .discovered && !current.contains(origin) {
            self.clients.removeValue(forKey: origin)
            entry.client.pool.shutdown()
        }
    }

    /// Where an introspection call goes now: the configured `url` on its client, or the
    /// `introspection_endpoint` of the issuer's accepted discovery document on a client for its
    /// origin (made on first use, replaced when the document moves it). Nil without a
    /// document yet, or for `https` without client TLS. Asked only when a call is made.
    func introspectionEndpoint(_ introspection: IntrospectionConfiguration?) -> UpstreamEndpoint? {
        guard let introspection else { return nil }
        if let url = introspection.url {
            return self.introspectionClient.map { UpstreamEndpoint(client: $0, path: url.pathAndQuery) }
        }
        guard let issuer = introspection.discoveryIssuer,
            let url = self.shared.keyStore.discoveryDocument(issuer: issuer)?.introspectionEndpoint,
            !url.isTLS || self.shared.clientTLS != nil
        else { return nil }
        let base = UpstreamURL(scheme: url.scheme, host: url.host, port: url.port, pathAndQuery: "")
        let timeout = TimeAmount.milliseconds(Int64(introspection.timeoutMilliseconds))
        let client = self.makeClient(.introspection, url: base, timeout: timeout, reuse: self.introspectionClient)
        if let old = self.introspectionClient, old !== client { old.pool.shutdown() }
        self.introspectionClient = client
        return UpstreamEndpoint(client: client, path: url.pathAndQuery)
    }

    /// `existing` when it is already this upstream's client for `url` with `timeout`, else a
    /// new one (a pool of its own, with the gateway's client TLS).
    private func makeClient(
        _ upstream: DependencyKey.Upstream, url: UpstreamURL, timeout: TimeAmount, reuse existing: UpstreamClient?
    ) -> UpstreamClient {
        let name = upstream.poolName
        if let existing, existing.pool.name == name, existing.pool.targets == [url], existing.timeout == timeout {
            return existing
        }
        let tls = self.shared.clientTLS.map { UpstreamTLS(context: $0, serverName: nil) }
        let pool = self.makePool(
            name: name, targets: [url], healthKeys: [DependencyKey(upstream: upstream, url: url)], maxConnections: 64,
            connectTimeout: timeout, tls: tls)
        return UpstreamClient(pool: pool, timeout: timeout, hostHeader: url.hostHeader)
    }

    static func origin(_ url: UpstreamURL) -> String { "\(url.scheme.rawValue)://\(url.hostHeader)" }
}
