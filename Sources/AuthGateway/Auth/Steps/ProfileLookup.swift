import NIOCore

/// The user's profile from the auth service's cache (docs/authentication.md, "Profiles"), when
/// the route's `require`, the identity headers or a rate limit on the route read `profile.*`.
struct ProfileLookup: AuthenticationStep {
    enum Outcome {
        case found(Identity)
        case refused(GatewayError)
        case pending(EventLoopFuture<Result<Identity, GatewayError>>)
    }

    /// nil without `authService.profile`.
    let profiles: ProfileCache?
    /// The identity headers read `profile.*`: every authenticated request needs the profile.
    let identityHeadersNeedProfile: Bool
    /// Routes with a rate limit keyed by `profile.*` (docs/rate-limits.md).
    let rateLimitProfileRoutes: Set<String>
    /// Where a fetch goes now; asked only on a miss or a stale entry.
    let endpoint: () -> UpstreamEndpoint?
    let eventLoop: EventLoop
    let metrics: WorkerMetrics

    init(
        profiles: ProfileCache?, configuration: GatewayConfiguration, endpoint: @escaping () -> UpstreamEndpoint?,
        eventLoop: EventLoop, metrics: WorkerMetrics
    ) {
        self.profiles = profiles
        self.identityHeadersNeedProfile = configuration.identityHeaders.contains { $0.path.source == .profile }
        self.rateLimitProfileRoutes = configuration.routesWithProfileRateLimits
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.metrics = metrics
    }

    init(_ context: StepContext) {
        let endpoints = context.endpoints
        self.init(
            profiles: context.features.profiles, configuration: context.configuration,
            endpoint: { endpoints.profileEndpoint() }, eventLoop: context.eventLoop, metrics: context.metrics)
    }

    /// Every verified caller but an API key's: a fetch presents the caller's credential to the
    /// auth service, and a key never leaves the gateway (docs/policies.md, "API keys").
    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard let identity = state.identity, identity.kind != .apiKey else { return .next }
        switch self.lookup(identity, route: request.route, trace: request.trace) {
        case .found(let identity):
            state.identity = identity
            return .next
        case .refused(let error):
            return .refuse(error)
        case .pending(let fetched):
            return .identity(after: fetched, resuming: state, on: self.eventLoop)
        }
    }

    func needsProfile(on route: RouteConfiguration) -> Bool {
        self.identityHeadersNeedProfile || route.require.readsProfile
            || (!self.rateLimitProfileRoutes.isEmpty && self.rateLimitProfileRoutes.contains(route.name))
    }

    func lookup(_ identity: Identity, route: RouteConfiguration, trace: RequestTrace?) -> Outcome {
        guard self.needsProfile(on: route) else { return .found(identity) }
        guard let profiles = self.profiles, let subject = identity.token.subject else {
            // Without a subject there is no profile to look up: refuse rather than guess.
            return .refused(.tokenRejected(.missingClaim))
        }
        let metrics = self.metrics
        let lookup = profiles.lookup(
            ProfileKey(issuer: identity.issuer, subject: subject), accessToken: identity.currentAccessToken,
            eventLoop: self.eventLoop, endpoint: self.endpoint
        ) { result in
            metrics.increment(.profileCache(result))
        }
        switch lookup {
        case .hit(let profile):
            var identity = identity
            identity.profile = profile
            return .found(identity)
        case .pending(let fetch):
            let span = trace?.child("auth.profile", kind: .client)
            return .pending(
                fetch.map { result in
                    span?.end()
                    return Self.adopt(result, into: identity)
                })
        }
    }

    /// A fetch's result for the identity that waited for it.
    static func adopt(_ result: ProfileCache.FetchResult, into identity: Identity) -> Result<Identity, GatewayError> {
        switch result {
        case .profile(let profile):
            var identity = identity
            identity.profile = profile
            return .success(identity)
        case .unauthorized:
            return .failure(.profileRejected)
        case .unavailable:
            return .failure(.authServiceUnavailable)
        }
    }
}
