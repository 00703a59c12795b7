/// Where one event loop sends refresh calls and profile fetches (docs/authentication.md):
/// a configured path on `authService.url`, or an endpoint of the `discoveryIssuer`'s
/// discovery document.
///
/// A discovered endpoint is resolved when a call is made, because the document can change at
/// any refetch and may point at another origin than `authService.url`: the key store is read
/// (a short lock) and the loop's client for that origin looked up or made. Only refresh calls
/// and profile fetches (cache misses and background refreshes) ask — never an ordinary request;
/// without discovery the endpoint is fixed when the configuration is applied.
final class AuthServiceEndpoints {
    enum Source {
        /// Not configured (no `authService`, or no `refresh`/`profile` section).
        case none
        case fixed(UpstreamEndpoint)
        /// A field of the issuer's accepted discovery document.
        case discovered(issuer: String, KeyPath<DiscoveryDocument, UpstreamURL?>)
    }

    let refresh: Source
    let profile: Source
    private let keyStore: KeyStore?
    private let clients: (UpstreamURL) -> UpstreamClient?

    init(refresh: Source, profile: Source, keyStore: KeyStore?, clients: @escaping (UpstreamURL) -> UpstreamClient?) {
        self.refresh = refresh
        self.profile = profile
        self.keyStore = keyStore
        self.clients = clients
    }

    /// No endpoints at all (tests of phases that never call out).
    convenience init() {
        self.init(refresh: .none, profile: .none, keyStore: nil, clients: { _ in nil })
    }

    /// The sources `configuration` asks for, with `authClient` as the loop's client for
    /// `authService.url`.
    convenience init(
        configuration: AuthServiceConfiguration?, authClient: UpstreamClient?, keyStore: KeyStore,
        clients: @escaping (UpstreamURL) -> UpstreamClient?
    ) {
        func source(path: String?, discovered field: KeyPath<DiscoveryDocument, UpstreamURL?>) -> Source {
            if let path {
                guard let authClient else { return .none }
                return .fixed(UpstreamEndpoint(client: authClient, path: path))
            }
            guard let issuer = configuration?.discoveryIssuer else { return .none }
            return .discovered(issuer: issuer, field)
        }
        let refresh: Source = configuration?.refresh.map { source(path: $0.path, discovered: \.tokenEndpoint) } ?? .none
        let profile: Source =
            configuration?.profile.map { source(path: $0.path, discovered: \.userinfoEndpoint) } ?? .none
        self.init(refresh: refresh, profile: profile, keyStore: keyStore, clients: clients)
    }

    /// Where a refresh posts now; nil when there is nowhere (no document yet: 503).
    func refreshEndpoint() -> UpstreamEndpoint? { self.resolve(self.refresh) }

    /// Where a profile is fetched now; nil when there is nowhere.
    func profileEndpoint() -> UpstreamEndpoint? { self.resolve(self.profile) }

    /// The URL a source points at now (for `/healthz`).
    func currentURL(of source: Source) -> UpstreamURL? {
        guard case .discovered(let issuer, let field) = source else { return nil }
        return self.keyStore?.discoveryDocument(issuer: issuer)?[keyPath: field]
    }

    private func resolve(_ source: Source) -> UpstreamEndpoint? {
        switch source {
        case .none:
            return nil
        case .fixed(let endpoint):
            return endpoint
        case .discovered:
            guard let url = self.currentURL(of: source), let client = self.clients(url) else { return nil }
            return UpstreamEndpoint(client: client, path: url.pathAndQuery.isEmpty ? "/" : url.pathAndQuery)
        }
    }
}

@available(*, unavailable)
extension AuthServiceEndpoints: Sendable {}
