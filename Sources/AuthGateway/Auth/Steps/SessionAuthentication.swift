import NIOCore
import NIOHTTP1

/// A browser session (docs/browser-sign-in.md, "Requests with a session"): the session cookie's
/// handle leads to the session's access token, which is then authenticated exactly as a bearer
/// token would be. An expired access token is refreshed at the provider with the session's
/// refresh token — once per refresh token however many requests wait, across instances with
/// `sharedState` (`SessionRefresher` over the application's `RefreshStore`) — and the session
/// record is updated; the cookie stays the same. A refused refresh ends the session.
struct SessionAuthentication {
    enum Outcome {
        case token(ExtractedToken)
        /// No live session; `headers` clear the stale cookie.
        case refused(GatewayError, headers: [(name: String, value: String)])
        case pending(EventLoopFuture<SessionRecord?>)
    }

    let signIn: BrowserSignIn
    /// This loop's handles and their digests (`RecentSessionDigests`).
    let recentDigests: RecentSessionDigests
    /// Redeems the session's refresh token at the provider's `token_endpoint`.
    let refresher: SessionRefresher
    /// Where a refresh posts now (the discovered `token_endpoint`).
    let endpoint: () -> UpstreamEndpoint?
    let verification: JWTVerification
    let eventLoop: EventLoop
    let metrics: WorkerMetrics

    private var clearing: [(name: String, value: String)] { [("Set-Cookie", self.signIn.cookies.clearingSession)] }

    /// The session's access token, or why there is none (`digest`: the session handle's). An
    /// unsafe method must come from the gateway's own origin (CSRF), checked before anything is
    /// looked up.
    func lookup(_ digest: TokenDigest, _ request: AuthRequest) -> Outcome {
        let configuration = self.signIn.configuration
        guard
            BrowserRequest.isSameOrigin(
                method: request.method, headers: request.headers, publicBaseURL: configuration.publicBaseURL)
        else { return .refused(.signInCSRF, headers: []) }
        switch self.signIn.sessions.lookup(digest, now: request.now, lifetime: self.signIn.lifetime, on: self.eventLoop)
        {
        case .found(let record): return .token(Self.token(of: record, digest: digest))
        case .missing: return .refused(.tokenMissing, headers: self.clearing)
        case .expired:
            self.metrics.increment(.signOut(.expired))
            return .refused(.tokenMissing, headers: self.clearing)
        case .pending(let record): return .pending(record)
        }
    }

    /// The phase after a database lookup.
    func adopt(_ record: SessionRecord?, digest: TokenDigest) -> Outcome {
        guard let record else { return .refused(.tokenMissing, headers: self.clearing) }
        return .token(Self.token(of: record, digest: digest))
    }

    static func token(of record: SessionRecord, digest: TokenDigest) -> ExtractedToken {
        ExtractedToken(value: record.accessTokenSlice, location: .session(digest))
    }

    /// Redeems the session's refresh token; nil when the session has none, or there is nowhere to
    /// send it yet.
    func redeem(_ digest: TokenDigest, verified: VerifiedToken, trace: RequestTrace?) -> RedeemStart {
        guard let record = self.signIn.sessions.held(digest), let refreshToken = record.refreshToken else {
            return self.end(digest)
        }
        guard let endpoint = self.endpoint() else { return .refused(.authServiceUnavailable, headers: []) }
        let span = trace?.child("auth.refresh", kind: .client)
        let redeemed = self.refresher.refresh(
            refreshToken: refreshToken[...], claims: verified.claims, endpoint: endpoint)
        return .pending(
            redeemed.map { outcome in
                span?.attributes["auth.refresh.outcome"] = outcome.label
                span?.end()
                return outcome
            })
    }

    enum RedeemStart {
        case pending(EventLoopFuture<RefreshOutcome>)
        case refused(GatewayError, headers: [(name: String, value: String)])
    }

    /// The refresh's outcome: a verified new access token updates the session; a refusal ends it.
    /// Runs on the request's loop. `refetched`: an unknown `kid` after a key refetch ends it too.
    func adopt(
        _ outcome: RefreshOutcome, digest: TokenDigest, keys: KeySnapshot, refetched: Bool, now: Double
    ) -> RefreshAdoption {
        switch outcome {
        case .unavailable:
            return .refused(.authServiceUnavailable, headers: [])
        case .rejected:
            return self.end(digest)
        case .refreshed(let accessToken, let refreshToken):
            switch self.verification.verifyFetched(accessToken[...], keys: keys) {
            case .verified(let token) where token.timeFailure(now: now) == nil:
                guard var record = self.signIn.sessions.held(digest) else { return self.end(digest) }
                record.accessToken = accessToken
                if let refreshToken { record.refreshToken = refreshToken }
                self.signIn.sessions.update(digest, record)
                let issuer = keys.issuers[token.issuerIndex].issuer
                return .identity(
                    Identity(token: token, accessToken: Self.token(of: record, digest: digest), issuer: issuer))
            case .unknownKey(let issuerIndex) where !refetched:
                return .unknownKey(issuerIndex: issuerIndex)
            case .verified, .unknownKey, .refused:
                // The provider's new token is one this gateway refuses: the session is over.
                return self.end(digest)
            }
        }
    }

    enum RefreshAdoption {
        case identity(Identity)
        case refused(GatewayError, headers: [(name: String, value: String)])
        case unknownKey(issuerIndex: Int)
    }

    /// Ends the session everywhere (its refresh was refused, or it cannot be refreshed): 401,
    /// and the cookie cleared.
    private func end<Refusal: SessionRefusal>(_ digest: TokenDigest) -> Refusal {
        self.signIn.sessions.end(digest)
        self.metrics.increment(.signOut(.refreshRejected))
        return .refused(.refreshRejected, headers: self.clearing)
    }
}

/// The outcomes that can say "refused, with these headers".
protocol SessionRefusal {
    static func refused(_ error: GatewayError, headers: [(name: String, value: String)]) -> Self
}

extension SessionAuthentication.Outcome: SessionRefusal {}
extension SessionAuthentication.RedeemStart: SessionRefusal {}
extension SessionAuthentication.RefreshAdoption: SessionRefusal {}
