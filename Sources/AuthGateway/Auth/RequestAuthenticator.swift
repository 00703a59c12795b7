import Crypto
import Logging
import NIOCore
import NIOHTTP1
import Tracing

/// A verified caller, as far as the backend is concerned.
struct Identity {
    let token: VerifiedToken
    /// The access token as the client sent it.
    let accessToken: ExtractedToken
    /// The issuer that verified it (profiles are cached per issuer and subject).
    let issuer: String
    var profile: JSONObject?
    /// After a transparent refresh: the new access token to forward instead of the old one.
    var replacementAccessToken: String?
    /// Headers for the client's response (new tokens after a refresh).
    var responseHeaders: [(name: String, value: String)] = []
    /// The thumbprint of the key whose DPoP proof came with a bound token (`dpop.jkt`).
    var dpopThumbprint: String?
}

enum AuthOutcome {
    /// No identity: a route with `auth: none`, or `optional` without a token.
    case anonymous
    case authenticated(Identity)
    /// Refused; `headers` go on the error response (e.g. cookies cleared after a sign-out).
    case rejected(GatewayError, headers: [(name: String, value: String)])

    static func reject(_ error: GatewayError) -> AuthOutcome { .rejected(error, headers: []) }
}

enum AuthDecision {
    case done(AuthOutcome)
    /// Waiting on the auth service or a JWKS refetch; completes on the request's event loop.
    case pending(EventLoopFuture<AuthOutcome>)
}

/// The request being authenticated, as far as authentication cares.
struct AuthRequest {
    let headers: HTTPHeaders
    let route: RouteConfiguration
    /// The keys of the request's event loop when it arrived.
    let keys: KeySnapshot
    let now: Double
    let isTLS: Bool
    /// The request's trace, when it is traced: the slow phases open child spans in it.
    var trace: RequestTrace? = nil
    /// For DPoP proofs (`htm`, `htu`): the method, the request target as sent, and whether the
    /// peer's `X-Forwarded-Proto`/`-Host` are to be believed.
    var method: HTTPMethod = .GET
    var uri: String = "/"
    var peerIsTrustedProxy = false
}

/// What one event loop lends every request's authentication: its caches and clients. Made
/// once per loop (and per configuration), not per request.
struct AuthServices {
    let eventLoop: EventLoop
    let verifiedTokens: VerifiedTokenCache
    /// The loop's memo in front of `verifiedTokens`.
    let recentTokens: RecentTokens
    let keyStore: KeyStore
    /// Where the loop sends refresh calls and profile fetches.
    let endpoints: AuthServiceEndpoints
    /// The loop's client for an URL's origin (JWKS, discovery documents and their endpoints).
    let clients: (UpstreamURL) -> UpstreamClient?
    let metrics: WorkerMetrics
    /// Where the loop sends introspection calls now: `tokens.introspection.url` on the loop's
    /// client for it, or the discovered `introspection_endpoint` (nil without introspection).
    /// Asked only when a call is made.
    var introspectionEndpoint: (() -> UpstreamEndpoint?)? = nil
    /// The loop's memo of active introspection answers (with `tokens.introspection`).
    var recentIntrospections: RecentIntrospections? = nil
    /// The process's DPoP replay cache.
    var dpopReplay: DPoPReplayCache? = nil
    /// With `sharedState`: the replay check across instances, behind `dpopReplay`.
    var sharedDPoPReplay: SharedDPoPReplay? = nil
    /// The process's `DPoP-Nonce` key (used when `tokens.dpop.nonce` is on).
    var dpopNonceKey: SymmetricKey? = nil
}

/// One phase of a request's authentication (Pingora's request phases, Envoy's filter
/// statuses): extract → verify → (refetch keys) → check the clock → (refresh → adopt the new
/// token) → profile → requirements. Each phase is a value carrying what the next needs.
enum AuthPhase {
    case extract
    case verify(ExtractedToken, keys: KeySnapshot)
    /// The token's `kid` is unknown to an issuer with a JWKS URL.
    case refetchKeys(ExtractedToken, issuerIndex: Int, keys: KeySnapshot)
    case checkTime(VerifiedToken, ExtractedToken, keys: KeySnapshot)
    /// The token expired, and a refresh token came with it.
    case refresh(VerifiedToken, access: ExtractedToken, refresh: ExtractedToken, keys: KeySnapshot)
    /// `keysRefetched`: the issuer's keys were refetched for the new token's unknown `kid`
    /// already (once per request).
    case adoptRefresh(
        RefreshOutcome, access: ExtractedToken, refresh: ExtractedToken, keys: KeySnapshot, keysRefetched: Bool = false)
    /// An opaque token (or, with `forJWTs`, a verified JWT whose identity is `verified`) goes
    /// to the introspection endpoint.
    case introspect(ExtractedToken, verified: Identity?)
    case adoptIntrospection(IntrospectionOutcome, ExtractedToken, verified: Identity?)
    /// Proof of possession for a DPoP-bound token (SPEC §4.14).
    case proofOfPossession(Identity)
    case profile(Identity)
    case requirements(Identity)
    /// Refused after a wait (a failed refetch or profile fetch).
    case refuse(GatewayError)
}

/// What a phase says to do next.
enum AuthStep {
    case next(AuthPhase)
    /// Authentication is over (authenticated, anonymous or refused).
    case done(AuthOutcome)
    /// Wait for the auth service or a key refetch, then go on with the phase it yields.
    case wait(EventLoopFuture<AuthPhase>)
}

/// Decides who a request is (SPEC §4.1–4.4), phase by phase (`AuthPhase`): each phase is a
/// function from values to an `AuthStep`, tested on its own; `authenticate` runs them.
///
/// Everything synchronous stays synchronous: a cached token on a route without profile needs
/// no future, no allocation of a promise, no hop.
struct RequestAuthenticator: Sendable {
    let sources: [TokenSourceConfiguration]
    let refresh: RefreshConfiguration?
    let refresher: SessionRefresher?
    let profiles: ProfileCache?
    let introspector: TokenIntrospector?
    let dpop: DPoPConfiguration
    /// `algs` of the DPoP challenges: the accepted proof algorithms.
    let dpopAlgorithms: String
    let identityHeadersNeedProfile: Bool
    /// Routes with a rate limit keyed by `profile.*` (SPEC §4.12).
    let rateLimitProfileRoutes: Set<String>
    /// The first cookie source of access tokens: where a refreshed access token goes when the
    /// refresh token came from a cookie.
    let accessTokenCookie: String?

    init(
        configuration: GatewayConfiguration, refresher: SessionRefresher? = nil, profiles: ProfileCache? = nil,
        introspector: TokenIntrospector? = nil
    ) {
        self.sources = configuration.tokens.sources
        self.refresh = configuration.authService?.refresh
        self.refresher = refresher
        self.profiles = profiles
        self.introspector = introspector
        self.dpop = configuration.tokens.dpop
        self.dpopAlgorithms = configuration.tokens.dpop.algorithms.map(\.rawValue).joined(separator: " ")
        self.identityHeadersNeedProfile = configuration.identityHeaders.contains { $0.path.source == .profile }
        self.rateLimitProfileRoutes = configuration.routesWithProfileRateLimits
        self.accessTokenCookie =
            configuration.tokens.sources.lazy.compactMap { source -> String? in
                if case .cookie(let name) = source { return name }
                return nil
            }.first
    }

    /// Runs the phases from `extract` until one is done or must wait.
    func authenticate(_ request: AuthRequest, services: AuthServices) -> AuthDecision {
        self.run(from: .extract, request, services)
    }

    private func run(from start: AuthPhase, _ request: AuthRequest, _ services: AuthServices) -> AuthDecision {
        var phase = start
        while true {
            switch self.step(phase, request, services) {
            case .next(let next):
                phase = next
            case .done(let outcome):
                return .done(outcome)
            case .wait(let future):
                let eventLoop = services.eventLoop
                return .pending(
                    future.hop(to: eventLoop).assumeIsolated().flatMap { next in
                        self.run(from: next, request, services).future(on: eventLoop)
                    }.nonisolated()
                )
            }
        }
    }

    func step(_ phase: AuthPhase, _ request: AuthRequest, _ services: AuthServices) -> AuthStep {
        switch phase {
        case .extract:
            return self.extract(request)
        case .verify(let token, let keys):
            // Not a compact JWS: an opaque token, for the introspection endpoint when there is
            // one (a JWS-shaped token never goes there unverified).
            if self.introspector != nil && !CompactJWS.hasCompactShape(token.value) {
                return .next(.introspect(token, verified: nil))
            }
            guard let trace = request.trace else { return self.verify(token, keys: keys, services) }
            return self.tracedVerify(token, keys: keys, services, trace: trace)
        case .refetchKeys(let token, let issuerIndex, let keys):
            return self.refetchKeys(token, issuerIndex: issuerIndex, keys: keys, services)
        case .checkTime(let verified, let token, let keys):
            return self.checkTime(verified, token, keys: keys, request)
        case .refresh(let verified, let access, let refresh, let keys):
            return self.startRefresh(
                verified, access: access, refresh: refresh, keys: keys, services, trace: request.trace)
        case .adoptRefresh(let outcome, let access, let refresh, let keys, let keysRefetched):
            return self.adoptRefresh(
                outcome, access: access, refresh: refresh, keys: keys, keysRefetched: keysRefetched, request, services)
        case .introspect(let token, let verified):
            return self.introspect(token, verified: verified, services, now: request.now, trace: request.trace)
        case .adoptIntrospection(let outcome, let token, let verified):
            return self.adoptIntrospection(outcome, token, verified: verified, memo: services.recentIntrospections)
        case .proofOfPossession(let identity):
            return self.checkProofOfPossession(identity, request, services)
        case .profile(let identity):
            return self.profile(identity, request, services)
        case .requirements(let identity):
            return .done(Self.checkRequirements(identity, route: request.route))
        case .refuse(let error):
            return .done(.reject(error))
        }
    }

    // MARK: Phases

    /// The token from the configured sources; none on an `optional` route is anonymous.
    func extract(_ request: AuthRequest) -> AuthStep {
        guard request.route.auth != .none else { return .done(.anonymous) }
        switch TokenExtractor.extract(from: request.headers, sources: self.sources) {
        case .conflict:
            return .done(.reject(.ambiguousToken))
        case .none:
            return .done(request.route.auth == .optional ? .anonymous : .reject(.tokenMissing))
        case .found(let token):
            return .next(.verify(token, keys: request.keys))
        }
    }

    /// Signature and clock-independent claims, through the loop's memo and the shared cache.
    func verify(_ token: ExtractedToken, keys: KeySnapshot, _ services: AuthServices) -> AuthStep {
        self.verify(
            services.recentTokens.verify(token.value, keys: keys, through: services.verifiedTokens), token: token,
            keys: keys)
    }

    private func verify(
        _ result: Result<VerifiedToken, TokenRejection>, token: ExtractedToken, keys: KeySnapshot
    ) -> AuthStep {
        switch result {
        case .success(let verified):
            return .next(.checkTime(verified, token, keys: keys))
        case .failure(let rejection):
            guard rejection.failure == .unknownKey, let issuerIndex = rejection.issuerIndex,
                keys.issuers[issuerIndex].hasRemoteKeys
            else {
                return .done(.reject(.tokenRejected(rejection.failure)))
            }
            return .next(.refetchKeys(token, issuerIndex: issuerIndex, keys: keys))
        }
    }

    /// `verify`, with a span when the signature had to be checked (a cache miss).
    private func tracedVerify(
        _ token: ExtractedToken, keys: KeySnapshot, _ services: AuthServices, trace: RequestTrace
    ) -> AuthStep {
        let start = DefaultTracerClock.now
        var checkedSignature = false
        let result = services.recentTokens.verify(
            token.value, keys: keys, through: services.verifiedTokens, checkedSignature: &checkedSignature)
        if checkedSignature {
            let span = trace.child("auth.verify", startedAt: start)
            if case .failure(let rejection) = result { span.attributes["auth.failure"] = rejection.failure.rawValue }
            span.end()
        }
        return self.verify(result, token: token, keys: keys)
    }

    /// An unknown `kid` of an issuer with a JWKS URL: refetch once (if the cooldown allows),
    /// then verify again against the new keys.
    func refetchKeys(_ token: ExtractedToken, issuerIndex: Int, keys: KeySnapshot, _ services: AuthServices) -> AuthStep
    {
        guard
            let refetch = services.keyStore.refetchForUnknownKey(
                issuerIndex: issuerIndex, on: services.eventLoop, clients: services.clients)
        else {
            // No refetch allowed now. If the issuer's keys were never fetched we cannot check
            // anything: 503, not the 401 Envoy answers when its JWKS fetch fails.
            let neverFetched = keys.issuers[issuerIndex].remoteKeysFetchedAt == nil
            return .done(.reject(neverFetched ? .keysUnavailable : .tokenRejected(.unknownKey)))
        }
        let cache = services.verifiedTokens
        return .wait(
            refetch.map { snapshot -> AuthPhase in
                guard let snapshot else { return .refuse(.keysUnavailable) }
                switch cache.verify(token.value, keys: snapshot) {
                case .success(let verified): return .checkTime(verified, token, keys: snapshot)
                case .failure(let rejection): return .refuse(.tokenRejected(rejection.failure))
                }
            }
        )
    }

    /// The refreshed token's `kid` is unknown: refetch (if the cooldown allows), then adopt
    /// the outcome again against the new keys (once: a second unknown `kid` signs out).
    func refetchKeys(
        forRefreshed outcome: RefreshOutcome, access: ExtractedToken, refresh: ExtractedToken, issuerIndex: Int,
        keys: KeySnapshot,
        _ services: AuthServices
    ) -> AuthStep {
        let retry = { @Sendable (snapshot: KeySnapshot) in
            AuthPhase.adoptRefresh(outcome, access: access, refresh: refresh, keys: snapshot, keysRefetched: true)
        }
        guard
            let refetch = services.keyStore.refetchForUnknownKey(
                issuerIndex: issuerIndex, on: services.eventLoop, clients: services.clients)
        else {
            // In the cooldown: another request refetched moments ago; its keys are the store's.
            return .next(retry(services.keyStore.snapshot))
        }
        // A failed refetch is 503 with nothing cleared: the client retries with its old pair
        // and gets this same outcome from the grace table.
        return .wait(refetch.map { snapshot in snapshot.map(retry) ?? .refuse(.keysUnavailable) })
    }

    /// The clock checks; an expired token may be refreshed transparently (SPEC §4.3).
    func checkTime(
        _ verified: VerifiedToken, _ token: ExtractedToken, keys: KeySnapshot, _ request: AuthRequest
    ) -> AuthStep {
        guard let failure = verified.timeFailure(now: request.now) else {
            let identity = Identity(
                token: verified, accessToken: token, issuer: keys.issuers[verified.issuerIndex].issuer)
            // `forJWTs`: a verified JWT is introspected too, so that a revoked one is refused.
            if let introspector = self.introspector, introspector.configuration.forJWTs {
                return .next(.introspect(token, verified: identity))
            }
            return .next(.proofOfPossession(identity))
        }
        guard failure == .expired, let refresh = self.refresh, self.refresher != nil,
            verified.secondsSinceExpiry(now: request.now) <= Double(refresh.maxExpiredSeconds)
        else {
            return .done(.reject(.tokenRejected(failure)))
        }
        switch TokenExtractor.extract(from: request.headers, sources: refresh.refreshTokenSources) {
        case .none: return .done(.reject(.tokenRejected(.expired)))
        case .conflict: return .done(.reject(.ambiguousToken))
        case .found(let refreshToken):
            return .next(.refresh(verified, access: token, refresh: refreshToken, keys: keys))
        }
    }

    /// Redeems the refresh token (once per token, process- or fleet-wide: `RefreshStore`).
    func startRefresh(
        _ verified: VerifiedToken, access: ExtractedToken, refresh: ExtractedToken, keys: KeySnapshot,
        _ services: AuthServices, trace: RequestTrace? = nil
    ) -> AuthStep {
        // Resolved here, on the refresh path: a discovered token_endpoint may have changed.
        guard let refresher = self.refresher, let endpoint = services.endpoints.refreshEndpoint() else {
            return .done(.reject(.authServiceUnavailable))
        }
        let span = trace?.child("auth.refresh", kind: .client)
        return .wait(
            refresher.refresh(refreshToken: refresh.value, claims: verified.claims, endpoint: endpoint).map { outcome in
                span?.attributes["auth.refresh.outcome"] = Self.label(outcome)
                span?.end()
                return .adoptRefresh(outcome, access: access, refresh: refresh, keys: keys)
            }
        )
    }

    /// The refresh's outcome: the new token (verified like any other) replaces the old one,
    /// and goes back to the client; a refusal signs the client out.
    func adoptRefresh(
        _ outcome: RefreshOutcome, access oldAccess: ExtractedToken, refresh oldRefresh: ExtractedToken,
        keys: KeySnapshot,
        keysRefetched: Bool = false, _ request: AuthRequest, _ services: AuthServices
    ) -> AuthStep {
        let cookies = SessionCookies(isTLS: request.isTLS)
        switch outcome {
        case .unavailable:
            return .done(.reject(.authServiceUnavailable))
        case .rejected:
            return .done(
                .rejected(
                    .refreshRejected,
                    headers: Self.signOutHeaders(oldAccess: oldAccess, oldRefresh: oldRefresh, cookies: cookies)))
        case .refreshed(let accessToken, let newRefreshToken):
            let verified: VerifiedToken
            switch services.verifiedTokens.verify(accessToken[...], keys: keys) {
            case .success(let token) where token.timeFailure(now: request.now) == nil:
                verified = token
            // The refresh token was spent on a token this gateway refuses: the session is over.
            case .success(let token):
                Self.logMisconfiguration(reason: token.timeFailure(now: request.now)?.rawValue ?? "invalid")
                return .done(
                    .rejected(
                        .refreshRejected,
                        headers: Self.signOutHeaders(oldAccess: oldAccess, oldRefresh: oldRefresh, cookies: cookies)))
            case .failure(let rejection)
            where rejection.failure == .unknownKey && !keysRefetched
                && rejection.issuerIndex.map({ keys.issuers[$0].hasRemoteKeys }) == true:
                // The provider rotated its signing key and the new token is the first to use
                // it: refetch the issuer's keys (cooldown permitting), then verify again —
                // signing the user out for the gateway's own stale keys would waste a
                // refresh token that the auth service has already rotated.
                return self.refetchKeys(
                    forRefreshed: outcome, access: oldAccess, refresh: oldRefresh, issuerIndex: rejection.issuerIndex!,
                    keys: keys, services)
            case .failure(let rejection):
                Self.logMisconfiguration(reason: rejection.failure.rawValue)
                return .done(
                    .rejected(
                        .refreshRejected,
                        headers: Self.signOutHeaders(oldAccess: oldAccess, oldRefresh: oldRefresh, cookies: cookies)))
            }
            var identity = Identity(
                token: verified, accessToken: oldAccess, issuer: keys.issuers[verified.issuerIndex].issuer)
            identity.replacementAccessToken = accessToken
            // A rotated refresh token goes into a header or cookie: only a plain token may.
            let rotated = newRefreshToken.flatMap {
                $0 == String(oldRefresh.value) || !SessionCookies.isSafeValue($0) ? nil : $0
            }
            if case .cookie(let refreshCookie) = oldRefresh.location {
                let accessCookie: String? =
                    if case .cookie(let name) = oldAccess.location { name } else { self.accessTokenCookie }
                if let accessCookie {
                    identity.responseHeaders.append(("Set-Cookie", cookies.setting(accessCookie, to: accessToken)))
                }
                if let rotated {
                    identity.responseHeaders.append(("Set-Cookie", cookies.setting(refreshCookie, to: rotated)))
                }
                if accessCookie == nil, let header = self.refresh?.accessTokenResponseHeader {
                    identity.responseHeaders.append((header, accessToken))
                }
            } else {
                if let header = self.refresh?.accessTokenResponseHeader {
                    identity.responseHeaders.append((header, accessToken))
                }
                if let rotated, let header = self.refresh?.refreshTokenResponseHeader {
                    identity.responseHeaders.append((header, rotated))
                }
            }
            return .next(.proofOfPossession(identity))
        }
    }

    /// Sign-out: `Set-Cookie`s clearing the session cookies the client holds.
    private static func signOutHeaders(
        oldAccess: ExtractedToken, oldRefresh: ExtractedToken, cookies: SessionCookies
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        if case .cookie(let refreshCookie) = oldRefresh.location {
            if case .cookie(let accessCookie) = oldAccess.location {
                headers.append(("Set-Cookie", cookies.clearing(accessCookie)))
            }
            headers.append(("Set-Cookie", cookies.clearing(refreshCookie)))
        }
        return headers
    }

    /// Asks the introspection endpoint about `token` (SPEC §4.13), through the process-wide
    /// cache and single flight.
    func introspect(
        _ token: ExtractedToken, verified: Identity?, _ services: AuthServices, now: Double, trace: RequestTrace? = nil
    ) -> AuthStep {
        guard let introspector = self.introspector, let endpoint = services.introspectionEndpoint else {
            return .done(.reject(.introspectionUnavailable))
        }
        let metrics = services.metrics
        // The loop's memo: for an opaque token the answer's claims; for a JWT (`forJWTs`) the
        // JWT's own verified claims as `IntrospectedJWT.adopt` left them. A JWT's clock was
        // checked already on this request (`checkTime` comes first).
        if let known = services.recentIntrospections?.lookup(token.value, introspector: introspector, now: now) {
            metrics.increment(.introspectionCached)
            let issuer = verified?.issuer ?? introspector.configuration.identityIssuer
            return .next(.proofOfPossession(Identity(token: known, accessToken: token, issuer: issuer)))
        }
        let lookup = introspector.lookup(token.value, eventLoop: services.eventLoop, endpoint: endpoint) { label in
            metrics.increment(.introspection(outcome: label))
        }
        switch lookup {
        case .known(let outcome):
            return .next(.adoptIntrospection(outcome, token, verified: verified))
        case .pending(let answer):
            let span = trace?.child("auth.introspection", kind: .client)
            return .wait(
                answer.map { outcome in
                    span?.attributes["auth.introspection.outcome"] = outcome.label
                    span?.end()
                    return .adoptIntrospection(outcome, token, verified: verified)
                }
            )
        }
    }

    /// An active answer's members become the request's claims; inactive is 401, unavailable
    /// 503 (fail closed, nothing forwarded).
    ///
    /// For a JWT introspected with `forJWTs`, the JWT's own verified claims stay the request's
    /// claims — the answer only says whether it is still active — and a `cnf.jkt` in the answer
    /// can add a DPoP binding, never remove or change one (`IntrospectedJWT` says why).
    func adoptIntrospection(
        _ outcome: IntrospectionOutcome, _ token: ExtractedToken, verified: Identity?, memo: RecentIntrospections? = nil
    ) -> AuthStep {
        switch outcome {
        case .unavailable:
            return .done(.reject(.introspectionUnavailable))
        case .inactive:
            return .done(.reject(.tokenInactive))
        case .active(let claims, let validUntil):
            if let verified {
                // The provider names another key than the one the JWT is bound to.
                guard let adopted = IntrospectedJWT.adopt(verified.token, answer: claims) else {
                    return .done(.reject(.tokenRejected(.invalidClaim)))
                }
                if let introspector = self.introspector {
                    memo?.remember(token.value, verified: adopted, validUntil: validUntil, introspector: introspector)
                }
                return .next(
                    .proofOfPossession(
                        Identity(token: adopted, accessToken: verified.accessToken, issuer: verified.issuer)))
            }
            // No issuer index: an introspected identity never reaches the phases that use the
            // key snapshot (clock checks and refresh are the endpoint's business).
            let introspected = VerifiedToken(
                issuerIndex: -1, generation: 0, claims: claims, subject: claims["sub"]?.stringValue,
                expiresAt: validUntil, notBefore: nil,
                issuedAt: nil, leewaySeconds: 0
            )
            if let introspector = self.introspector {
                memo?.remember(token.value, verified: introspected, validUntil: validUntil, introspector: introspector)
            }
            let issuer = self.introspector?.configuration.identityIssuer ?? ""
            return .next(.proofOfPossession(Identity(token: introspected, accessToken: token, issuer: issuer)))
        }
    }

    /// A token whose claims carry `cnf.jkt` is DPoP-bound (RFC 9449 §6): it must come with
    /// the DPoP scheme and exactly one valid proof by that key. `required` routes refuse
    /// unbound tokens; `off` routes skip all of it.
    func checkProofOfPossession(_ identity: Identity, _ request: AuthRequest, _ services: AuthServices) -> AuthStep {
        let mode = request.route.dpop
        guard mode != .off else { return .next(.profile(identity)) }
        let presented = identity.accessToken
        guard case .object(let confirmation)? = identity.token.claims["cnf"],
            case .string(let boundKey)? = confirmation["jkt"]
        else {
            if mode == .required { return .done(.reject(.dpopRequired(algs: self.dpopAlgorithms))) }
            // RFC 9449 §7.2: the DPoP scheme is for bound tokens only.
            if presented.dpopScheme {
                return .done(
                    .reject(.dpopInvalidProof("the access token is not DPoP-bound", algs: self.dpopAlgorithms)))
            }
            return .next(.profile(identity))
        }
        // A bound token as Bearer, raw or a cookie is refused like one without a proof.
        guard presented.dpopScheme else { return .done(.reject(.dpopRequired(algs: self.dpopAlgorithms))) }
        var proof: Substring?
        var proofs = 0
        for (name, value) in request.headers where ASCII.equalsIgnoringCase(name, "dpop") {
            proofs += 1
            proof = value[...]
        }
        guard proofs > 0, let proof else { return .done(.reject(.dpopRequired(algs: self.dpopAlgorithms))) }
        guard proofs == 1 else {
            return .done(.reject(.dpopInvalidProof("more than one DPoP header", algs: self.dpopAlgorithms)))
        }
        let target = DPoPProof.Request(
            method: request.method.rawValue, url: DPoPTarget.expected(base: self.dpopBase(request), uri: request.uri),
            accessToken: presented.value,
            now: request.now
        )
        switch DPoPProof.verify(ASCII.trimmingOWS(proof), for: target, configuration: self.dpop) {
        case .failure(let failure):
            return .done(.reject(.dpopInvalidProof(failure.check, algs: self.dpopAlgorithms)))
        case .success(let verified):
            guard verified.thumbprint == boundKey else {
                return .done(.reject(.dpopInvalidProof("jkt", algs: self.dpopAlgorithms)))
            }
            var identity = identity
            identity.dpopThumbprint = verified.thumbprint
            // The server nonce (RFC 9449 §8), before the jti is used up: the client answers a
            // refusal with a new proof anyway.
            if self.dpop.nonce, let nonceKey = services.dpopNonceKey {
                let verdict = verified.nonce.map {
                    DPoPNonce.check(
                        $0, key: nonceKey, now: request.now, lifetimeSeconds: Double(self.dpop.maxAgeSeconds),
                        leewaySeconds: Double(self.dpop.leewaySeconds)
                    )
                }
                switch verdict ?? .invalid {
                case .invalid:
                    let nonce = DPoPNonce.issue(key: nonceKey, now: request.now)
                    return .done(.rejected(.dpopUseNonce(algs: self.dpopAlgorithms), headers: [("DPoP-Nonce", nonce)]))
                case .renew:
                    identity.responseHeaders.append(("DPoP-Nonce", DPoPNonce.issue(key: nonceKey, now: request.now)))
                case .fresh:
                    break
                }
            }
            // Last, so that a proof failing another check does not use up its jti.
            let usableUntil = verified.issuedAt + Double(self.dpop.maxAgeSeconds + self.dpop.leewaySeconds)
            guard services.dpopReplay?.firstUse(of: verified, until: usableUntil, now: request.now) ?? true else {
                return .done(.reject(.dpopInvalidProof("jti was used before", algs: self.dpopAlgorithms)))
            }
            // Seen here for the first time: with `sharedState`, the other instances may have
            // seen it (the row outlives the window by the leeway, for clocks that differ).
            let keepSeconds = usableUntil - request.now + Double(self.dpop.leewaySeconds)
            if let shared = services.sharedDPoPReplay,
                let firstUse = shared.firstUse(
                    DPoPReplayCache.digest(of: verified), keepSeconds: keepSeconds, on: services.eventLoop)
            {
                let (algs, accepted) = (self.dpopAlgorithms, identity)
                return .wait(
                    firstUse.map { first in
                        first ? .profile(accepted) : .refuse(.dpopInvalidProof("jti was used before", algs: algs))
                    })
            }
            return .next(.profile(identity))
        }
    }

    /// `scheme://authority` as the client saw it: `publicBaseURL`, else the trusted proxy's
    /// `X-Forwarded-Proto`/`-Host`, else the listener's scheme and `Host` (`:authority`).
    private func dpopBase(_ request: AuthRequest) -> String {
        if let base = self.dpop.publicBaseURL { return base }
        var scheme = request.isTLS ? "https" : "http"
        var authority = request.headers.first(name: "host") ?? ""
        if request.peerIsTrustedProxy {
            if let proto = request.headers.first(name: "x-forwarded-proto")?.split(separator: ",").first {
                scheme = String(ASCII.trimmingOWS(proto))
            }
            if let host = request.headers.first(name: "x-forwarded-host")?.split(separator: ",").first {
                authority = String(ASCII.trimmingOWS(host))
            }
        }
        return DPoPTarget.normalizedBase(scheme: scheme, authority: authority)
    }

    /// The profile, when the route or the identity headers need it.
    func profile(_ identity: Identity, _ request: AuthRequest, _ services: AuthServices) -> AuthStep {
        let needsProfile =
            self.identityHeadersNeedProfile || request.route.require.contains { $0.path.source == .profile }
            || (!self.rateLimitProfileRoutes.isEmpty && self.rateLimitProfileRoutes.contains(request.route.name))
        guard needsProfile else { return .next(.requirements(identity)) }
        guard let profiles = self.profiles, let subject = identity.token.subject else {
            // Without a subject there is no profile to look up: refuse rather than guess.
            return .done(.reject(.tokenRejected(.missingClaim)))
        }
        let key = ProfileKey(issuer: identity.issuer, subject: subject)
        let accessToken = identity.replacementAccessToken ?? String(identity.accessToken.value)
        let metrics = services.metrics
        // The endpoint is resolved only when a fetch is made (a miss or a stale entry).
        let lookup = profiles.lookup(
            key, accessToken: accessToken, eventLoop: services.eventLoop, endpoint: services.endpoints.profileEndpoint
        ) { result in
            metrics.increment(.profileCache(result))
        }
        switch lookup {
        case .hit(let profile):
            var identity = identity
            identity.profile = profile
            return .next(.requirements(identity))
        case .pending(let fetch):
            let span = request.trace?.child("auth.profile", kind: .client)
            return .wait(
                fetch.map { result in
                    span?.end()
                    switch result {
                    case .profile(let profile):
                        var identity = identity
                        identity.profile = profile
                        return .requirements(identity)
                    case .unauthorized:
                        return .refuse(.profileRejected)
                    case .unavailable:
                        return .refuse(.authServiceUnavailable)
                    }
                }
            )
        }
    }

    private static func label(_ outcome: RefreshOutcome) -> String {
        switch outcome {
        case .refreshed: return "refreshed"
        case .rejected: return "rejected"
        case .unavailable: return "unavailable"
        }
    }

    private static let logger = Logger(label: "auth-gateway.auth")

    /// The auth service issued an access token this gateway refuses: its keys, issuer or
    /// audience do not match the configuration. Logged (never the token), then 401.
    private static func logMisconfiguration(reason: String) {
        Self.logger.error(
            "refresh.token_not_accepted",
            metadata: ["auth.failure": "\(reason)", "hint": "check tokens.issuers against the auth service"])
    }

    static func checkRequirements(_ identity: Identity, route: RouteConfiguration) -> AuthOutcome {
        for requirement in route.require {
            let actual: JSONValue?
            switch requirement.path.source {
            case .claims: actual = IdentityLookup.value(named: requirement.path.name, in: identity.token.claims)
            case .profile:
                actual = identity.profile.flatMap { IdentityLookup.value(named: requirement.path.name, in: $0) }
            case .dpop: actual = identity.dpopThumbprint.map(JSONValue.string)
            }
            guard IdentityLookup.satisfies(actual, expected: requirement.expected, name: requirement.path.name) else {
                return .rejected(.forbidden(requirement.path.description), headers: identity.responseHeaders)
            }
        }
        return .authenticated(identity)
    }
}

extension AuthDecision {
    func future(on eventLoop: EventLoop) -> EventLoopFuture<AuthOutcome> {
        switch self {
        case .done(let outcome): return eventLoop.makeSucceededFuture(outcome)
        case .pending(let future): return future
        }
    }
}

/// `Set-Cookie` values for session cookies (SPEC §4.3: HttpOnly, Secure when TLS,
/// SameSite=Lax, Path=/).
struct SessionCookies {
    let isTLS: Bool

    func setting(_ name: String, to value: String) -> String {
        "\(name)=\(value); Path=/; HttpOnly; SameSite=Lax" + (self.isTLS ? "; Secure" : "")
    }

    /// Whether `value` can be sent as a cookie value or header value unchanged: visible ASCII
    /// without separators (RFC 6265 §4.1.1 cookie-octets).
    static func isSafeValue(_ value: String) -> Bool {
        !value.isEmpty
            && value.utf8.allSatisfy { byte in
                byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: ",")
                    && byte != UInt8(ascii: ";") && byte != UInt8(ascii: "\\")
            }
    }

    func clearing(_ name: String) -> String {
        "\(name)=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax"
            + (self.isTLS ? "; Secure" : "")
    }
}
