import NIOCore
import Tracing

/// A compact JWS checked against the issuers' keys (docs/authentication.md, "Keys" and
/// "Claims"): signature and clock-independent claims through the loop's memo and the
/// process-wide cache, an unknown `kid` resolved by refetching the issuer's JWKS, and the
/// clock checked on every request. A token that verified but expired is left to
/// `TokenRefresh` (`AuthState.expired`); an opaque token, with an introspection endpoint
/// configured, to `TokenIntrospection`.
struct JWTVerification: AuthenticationStep {
    enum Outcome {
        case verified(VerifiedToken)
        case refused(GatewayError)
        /// Signed with a `kid` the issuer (whose keys come from a JWKS) does not have.
        case unknownKey(issuerIndex: Int)
    }

    /// Whether the issuer's keys may be refetched now for an unknown `kid`.
    enum Refetch {
        /// In the cooldown (`jwksMinRefetchSeconds`); `neverFetched`: the issuer's keys were
        /// never fetched at all.
        case notAllowed(neverFetched: Bool)
        /// The new keys, or nil when the fetch failed.
        case pending(EventLoopFuture<KeySnapshot?>)
    }

    let cache: VerifiedTokenCache
    /// The loop's memo in front of `cache`.
    let memo: RecentTokens
    let keyStore: KeyStore
    let eventLoop: EventLoop
    /// The loop's client for a JWKS or discovery URL's origin.
    let clients: (UpstreamURL) -> UpstreamClient?
    /// `tokens.introspection` is configured: a token that is not a compact JWS is its business.
    var introspectsOpaqueTokens = false

    init(
        cache: VerifiedTokenCache, memo: RecentTokens, keyStore: KeyStore, eventLoop: EventLoop,
        clients: @escaping (UpstreamURL) -> UpstreamClient?, introspectsOpaqueTokens: Bool = false
    ) {
        self.cache = cache
        self.memo = memo
        self.keyStore = keyStore
        self.eventLoop = eventLoop
        self.clients = clients
        self.introspectsOpaqueTokens = introspectsOpaqueTokens
    }

    init(_ context: StepContext) {
        self.init(
            cache: context.state.verifiedTokens, memo: RecentTokens(), keyStore: context.state.keyStore,
            eventLoop: context.eventLoop, clients: context.clients,
            introspectsOpaqueTokens: context.configuration.tokens.introspection != nil)
    }

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard state.identity == nil, case .token(let token) = state.credential else { return .next }
        if self.introspectsOpaqueTokens && !CompactJWS.hasCompactShape(token.value) { return .next }
        return self.verify(token, &state, request, refetched: false)
    }

    /// `refetched`: the issuer's keys were refetched for this token already (once only).
    private func verify(
        _ token: ExtractedToken, _ state: inout AuthState, _ request: AuthRequest, refetched: Bool
    ) -> StepResult {
        switch self.verify(token.value, keys: state.keys, trace: request.trace) {
        case .verified(let verified):
            // The clock is checked on every request (docs/authentication.md, "Claims").
            switch verified.timeFailure(now: request.now) {
            case nil:
                let issuer = state.keys.issuers[verified.issuerIndex].issuer
                state.identity = Identity(token: verified, accessToken: token, issuer: issuer)
            case .expired?:
                state.expired = verified
            case let failure?:
                return .refuse(.tokenRejected(failure))
            }
            return .next
        case .refused(let error):
            return .refuse(error)
        case .unknownKey where refetched:
            return .refuse(.tokenRejected(.unknownKey))
        case .unknownKey(let issuer):
            let keys = state.keys
            return self.refetching(issuer, keys, &state, inCooldown: nil) { keys, state in
                state.keys = keys
                return self.verify(token, &state, request, refetched: true)
            }
        }
    }

    /// Refetches the issuer's keys (`keys` are the ones that lacked the `kid`) for an unknown
    /// `kid`, then goes on with `retry` under the new keys and `state`. In the cooldown:
    /// `inCooldown` keys when given, else refused (503 when the issuer's keys were never fetched:
    /// nothing can be checked; Envoy answers 401 there).
    func refetching(
        _ issuerIndex: Int, _ keys: KeySnapshot, _ state: inout AuthState, inCooldown: KeySnapshot?,
        then retry: @escaping (KeySnapshot, inout AuthState) -> StepResult
    ) -> StepResult {
        switch self.refetchKeys(issuerIndex: issuerIndex, keys: keys) {
        case .notAllowed(let neverFetched):
            if let inCooldown { return retry(inCooldown, &state) }
            return .refuse(neverFetched ? .keysUnavailable : .tokenRejected(.unknownKey))
        case .pending(let refetched):
            // A failed refetch is 503 with nothing cleared: the client retries.
            return .after(refetched, on: self.eventLoop, resuming: state) { keys, state in
                guard let keys else { return .refuse(.keysUnavailable) }
                return retry(keys, &state)
            }
        }
    }

    /// Verifies `token` against `keys`; a traced request gets a span when the signature had to
    /// be checked (a cache miss).
    func verify(_ token: Substring, keys: KeySnapshot, trace: RequestTrace?) -> Outcome {
        let result: Result<VerifiedToken, TokenRejection>
        if let trace {
            let start = DefaultTracerClock.now
            var checkedSignature = false
            result = self.memo.verify(token, keys: keys, through: self.cache, checkedSignature: &checkedSignature)
            if checkedSignature {
                let span = trace.child("auth.verify", startedAt: start)
                if case .failure(let rejection) = result {
                    span.attributes["auth.failure"] = rejection.failure.rawValue
                }
                span.end()
            }
        } else {
            result = self.memo.verify(token, keys: keys, through: self.cache)
        }
        return Self.outcome(result, keys: keys)
    }

    /// Verifies a token the gateway got itself (a refreshed one) through the shared cache only.
    func verifyFetched(_ token: Substring, keys: KeySnapshot) -> Outcome {
        Self.outcome(self.cache.verify(token, keys: keys), keys: keys)
    }

    private static func outcome(_ result: Result<VerifiedToken, TokenRejection>, keys: KeySnapshot) -> Outcome {
        switch result {
        case .success(let verified):
            return .verified(verified)
        case .failure(let rejection):
            if rejection.failure == .unknownKey, let issuerIndex = rejection.issuerIndex,
                keys.issuers[issuerIndex].hasRemoteKeys
            {
                return .unknownKey(issuerIndex: issuerIndex)
            }
            return .refused(.tokenRejected(rejection.failure))
        }
    }

    /// Refetches the issuer's keys for an unknown `kid`, once per cooldown across the process.
    func refetchKeys(issuerIndex: Int, keys: KeySnapshot) -> Refetch {
        guard
            let refetch = self.keyStore.refetchForUnknownKey(
                issuerIndex: issuerIndex, on: self.eventLoop, clients: self.clients)
        else {
            return .notAllowed(neverFetched: keys.issuers[issuerIndex].remoteKeysFetchedAt == nil)
        }
        return .pending(refetch)
    }

    /// The keys the process holds now (newer than a request's own when a refetch just ran).
    var currentKeys: KeySnapshot { self.keyStore.snapshot }
}
