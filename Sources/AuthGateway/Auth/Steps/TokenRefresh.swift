import Logging
import NIOCore
import NIOHTTP1

/// Renews an expired access token (docs/authentication.md, "Transparent refresh";
/// docs/browser-sign-in.md, "Requests with a session"): a JWT that verified but expired
/// (`AuthState.expired`) is redeemed with its refresh token — the request's own (bearer tokens,
/// `authService.refresh`), or the browser session's (the provider's `token_endpoint`) — once per
/// refresh token, process- or fleet-wide (`SessionRefresher` over the `RefreshStore`). The new
/// token is verified like any other and adopted the same way for both (`adopt`, one clock rule);
/// a refused refresh signs the client out.
struct TokenRefresh: AuthenticationStep {
    /// Bearer tokens presented with a refresh token: `authService.refresh`; nil without.
    let bearer: BearerRefresh?
    /// Browser sessions: `browserSignIn`; nil without.
    let session: SessionRefresh?
    let verification: JWTVerification
    let eventLoop: EventLoop
    let metrics: WorkerMetrics
    let logger: Logger
    /// The clock a refreshed token is judged by when it arrives (`adopt`).
    let clock: @Sendable () -> Double

    /// The tokens a request presented: where the new ones go, and which cookies a sign-out clears.
    struct Presented: Sendable {
        let access: ExtractedToken
        let refresh: ExtractedToken
        /// The request came over TLS: cookies set or cleared for it are `Secure`.
        let isTLS: Bool
    }

    /// Whose refresh is under way: where the new token goes, and what a refusal ends.
    enum Ticket {
        case bearer(Presented)
        /// The browser session under this handle digest.
        case session(TokenDigest)
    }

    init(_ context: StepContext) {
        let configuration = context.configuration
        let endpoints = context.endpoints
        self.bearer = context.features.refresh.map {
            BearerRefresh(
                configuration: $0.configuration, refresher: $0, tokenSources: configuration.tokens.sources,
                endpoint: { endpoints.refreshEndpoint() })
        }
        let keyStore = context.state.keyStore
        let clients = context.clients
        self.session = context.features.signIn.map { feature in
            SessionRefresh(
                signIn: feature.browserSignIn, refresher: feature.refresher,
                endpoint: {
                    SessionRefresh.tokenEndpoint(of: feature.browserSignIn, keyStore: keyStore, clients: clients)
                })
        }
        self.verification = JWTVerification(context)
        self.eventLoop = context.eventLoop
        self.metrics = context.metrics
        self.logger = context.logger
        self.clock = context.clock
    }

    init(
        bearer: BearerRefresh?, session: SessionRefresh?, verification: JWTVerification, metrics: WorkerMetrics,
        logger: Logger, clock: @escaping @Sendable () -> Double
    ) {
        self.bearer = bearer
        self.session = session
        self.verification = verification
        self.eventLoop = verification.eventLoop
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
    }

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard let expired = state.expired, case .token(let token) = state.credential else { return .next }
        let ticket: Ticket
        let redeemed: EventLoopFuture<RefreshOutcome>
        let span = request.trace?.child("auth.refresh", kind: .client)
        switch self.redeem(expired, token, request) {
        case .failure(let refusal):
            span?.end()
            return .refuse(refusal.error, headers: refusal.headers)
        case .success(let started):
            (ticket, redeemed) = started
        }
        return .after(redeemed, on: self.eventLoop, resuming: state) { outcome, state in
            span?.attributes["auth.refresh.outcome"] = outcome.label
            span?.end()
            let keys = state.keys
            return self.adopt(outcome, ticket, &state, keys: keys, refetched: false)
        }
    }

    /// A refusal before any call, with the headers it carries.
    struct Refusal: Error {
        let error: GatewayError
        var headers: HeaderFields = []
    }

    /// Sends the refresh token off: the request's own for a bearer token, the session's for a
    /// session's token.
    private func redeem(
        _ expired: VerifiedToken, _ token: ExtractedToken, _ request: AuthRequest
    ) -> Result<(Ticket, EventLoopFuture<RefreshOutcome>), Refusal> {
        if case .session(let digest) = token.location {
            guard let session else { return .failure(Refusal(error: .tokenRejected(.expired))) }
            guard let refreshToken = session.signIn.sessions.held(digest)?.refreshToken else {
                return .failure(self.signOut(.session(digest)))
            }
            guard let endpoint = session.endpoint() else { return .failure(Refusal(error: .authServiceUnavailable)) }
            let redeemed = session.refresher.refresh(
                refreshToken: refreshToken[...], claims: expired.claims, endpoint: endpoint)
            return .success((.session(digest), redeemed))
        }
        guard let bearer else { return .failure(Refusal(error: .tokenRejected(.expired))) }
        let refreshToken: ExtractedToken
        switch bearer.start(expired: expired, headers: request.headers, now: request.now) {
        case .failure(let error): return .failure(Refusal(error: error))
        case .success(let found): refreshToken = found
        }
        guard let endpoint = bearer.endpoint() else { return .failure(Refusal(error: .authServiceUnavailable)) }
        let redeemed = bearer.refresher.refresh(
            refreshToken: refreshToken.value, claims: expired.claims, endpoint: endpoint)
        let presented = Presented(access: token, refresh: refreshToken, isTLS: request.isTLS)
        return .success((.bearer(presented), redeemed))
    }
}

/// Bearer tokens' refresh (`authService.refresh`): where the refresh token is read, where the
/// call goes, and how new tokens go back to the client.
struct BearerRefresh {
    let configuration: RefreshConfiguration
    let refresher: SessionRefresher
    /// Where a refresh posts now: resolved per refresh (a discovered `token_endpoint` moves).
    let endpoint: () -> UpstreamEndpoint?
    /// The first cookie source of access tokens: where a refreshed access token goes when the
    /// refresh token came from a cookie.
    let accessTokenCookie: String?

    init(
        configuration: RefreshConfiguration, refresher: SessionRefresher, tokenSources: [TokenSourceConfiguration],
        endpoint: @escaping () -> UpstreamEndpoint?
    ) {
        self.configuration = configuration
        self.refresher = refresher
        self.endpoint = endpoint
        self.accessTokenCookie =
            tokenSources.lazy.compactMap { source -> String? in
                if case .cookie(let name) = source { return name }
                return nil
            }.first
    }

    /// The refresh token for an access token that expired, or why the request is refused.
    func start(
        expired verified: VerifiedToken, headers: HTTPHeaders, now: Double
    ) -> Result<ExtractedToken, GatewayError> {
        guard verified.secondsSinceExpiry(now: now) <= Double(self.configuration.maxExpiredSeconds) else {
            return .failure(.tokenRejected(.expired))
        }
        switch TokenExtractor.extract(from: headers, sources: self.configuration.refreshTokenSources) {
        case .none: return .failure(.tokenRejected(.expired))
        case .conflict: return .failure(.ambiguousToken)
        case .found(let refreshToken): return .success(refreshToken)
        }
    }
}

/// Browser sessions' refresh: the session's refresh token, at the provider's `token_endpoint`.
struct SessionRefresh {
    let signIn: BrowserSignIn
    let refresher: SessionRefresher
    /// Where a refresh posts now (the discovered `token_endpoint`).
    let endpoint: () -> UpstreamEndpoint?

    /// The sign-in provider's `token_endpoint`, with the loop's client for its origin: where
    /// codes are exchanged and sessions' tokens refreshed; nil before its discovery document.
    static func tokenEndpoint(
        of signIn: BrowserSignIn, keyStore: KeyStore, clients: (UpstreamURL) -> UpstreamClient?
    ) -> UpstreamEndpoint? {
        guard let url = keyStore.discoveryDocument(issuer: signIn.configuration.issuer)?.tokenEndpoint,
            let client = clients(url)
        else { return nil }
        return UpstreamEndpoint(client: client, path: url.pathAndQuery.isEmpty ? "/" : url.pathAndQuery)
    }
}
