import Logging
import NIOCore
import NIOHTTP1

/// A verified caller, as far as the backend is concerned.
struct Identity {
    let token: VerifiedToken
    /// The access token as the client sent it.
    let accessToken: ExtractedToken
    var profile: JSONObject?
    /// After a transparent refresh: the new access token to forward instead of the old one.
    var replacementAccessToken: String?
    /// Headers for the client's response (new tokens after a refresh).
    var responseHeaders: [(name: String, value: String)] = []
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

/// What one event loop lends the authenticator for one request.
struct AuthEnvironment {
    let keys: KeySnapshot
    let now: Double
    let isTLS: Bool
    let eventLoop: EventLoop
    let verifiedTokens: VerifiedTokenCache
    /// The loop's memo in front of `verifiedTokens`.
    let recentTokens: RecentTokens
    let keyStore: KeyStore
    /// The loop's client for the auth service (nil without `authService`).
    let authServiceClient: UpstreamClient?
    /// The loop's client for a JWKS URL.
    let jwksClient: (UpstreamURL) -> UpstreamClient?
    let metrics: WorkerMetrics
}

/// Decides who a request is (SPEC §4.1–4.4): extract the token, verify it (cache first), maybe
/// refetch keys for an unknown `kid`, maybe refresh an expired session, maybe look up the
/// profile, then check the route's requirements.
///
/// Everything synchronous stays synchronous: a cached token on a route without profile needs
/// no future, no allocation of a promise, no hop.
struct RequestAuthenticator: Sendable {
    let sources: [TokenSourceConfiguration]
    let refresh: RefreshConfiguration?
    let refresher: SessionRefresher?
    let profiles: ProfileCache?
    let identityHeadersNeedProfile: Bool
    /// The first cookie source of access tokens: where a refreshed access token goes when the
    /// refresh token came from a cookie.
    let accessTokenCookie: String?

    init(configuration: GatewayConfiguration, refresher: SessionRefresher? = nil, profiles: ProfileCache? = nil) {
        self.sources = configuration.tokens.sources
        self.refresh = configuration.authService?.refresh
        self.refresher = refresher
        self.profiles = profiles
        self.identityHeadersNeedProfile = configuration.identityHeaders.contains { $0.path.source == .profile }
        self.accessTokenCookie = configuration.tokens.sources.lazy.compactMap { source -> String? in
            if case .cookie(let name) = source { return name }
            return nil
        }.first
    }

    func authenticate(headers: HTTPHeaders, route: RouteConfiguration, environment: AuthEnvironment) -> AuthDecision {
        guard route.auth != .none else { return .done(.anonymous) }
        let token: ExtractedToken
        switch TokenExtractor.extract(from: headers, sources: self.sources) {
        case .conflict:
            return .done(.reject(.ambiguousToken))
        case .none:
            return .done(route.auth == .optional ? .anonymous : .reject(.tokenMissing))
        case .found(let found):
            token = found
        }
        switch environment.recentTokens.verify(token.value, keys: environment.keys, through: environment.verifiedTokens) {
        case .success(let verified):
            return self.checkTime(verified, token: token, headers: headers, route: route, environment: environment)
        case .failure(let rejection):
            return self.handleRejection(rejection, token: token, headers: headers, route: route, environment: environment)
        }
    }

    // MARK: Steps

    /// A refused token: for an unknown `kid` of an issuer with a JWKS URL, refetch the keys
    /// once (if the cooldown allows) and verify again; otherwise 401.
    private func handleRejection(_ rejection: TokenRejection, token: ExtractedToken, headers: HTTPHeaders, route: RouteConfiguration, environment: AuthEnvironment) -> AuthDecision {
        guard rejection.failure == .unknownKey, let issuerIndex = rejection.issuerIndex,
            environment.keys.issuers[issuerIndex].hasRemoteKeys
        else {
            return .done(.reject(.tokenRejected(rejection.failure)))
        }
        guard let refetch = environment.keyStore.refetchForUnknownKey(issuerIndex: issuerIndex, using: environment.jwksClient) else {
            // No refetch allowed now. If the issuer's keys were never fetched we cannot check
            // anything: 503, not the 401 Envoy answers when its JWKS fetch fails.
            let neverFetched = environment.keys.issuers[issuerIndex].remoteKeysFetchedAt == nil
            return .done(.reject(neverFetched ? .keysUnavailable : .tokenRejected(.unknownKey)))
        }
        return self.afterRefetch(refetch, token: token, headers: headers, route: route, environment: environment)
    }

    private func afterRefetch(_ refetch: EventLoopFuture<KeySnapshot?>, token: ExtractedToken, headers: HTTPHeaders, route: RouteConfiguration, environment: AuthEnvironment) -> AuthDecision {
        let future = refetch.hop(to: environment.eventLoop).assumeIsolated().flatMap { snapshot -> EventLoopFuture<AuthOutcome> in
            guard let snapshot else { return environment.eventLoop.makeSucceededFuture(.reject(.keysUnavailable)) }
            let refreshed = AuthEnvironment(
                keys: snapshot, now: environment.now, isTLS: environment.isTLS, eventLoop: environment.eventLoop,
                verifiedTokens: environment.verifiedTokens, recentTokens: environment.recentTokens, keyStore: environment.keyStore,
                authServiceClient: environment.authServiceClient, jwksClient: environment.jwksClient, metrics: environment.metrics
            )
            switch environment.verifiedTokens.verify(token.value, keys: snapshot) {
            case .success(let verified):
                return self.checkTime(verified, token: token, headers: headers, route: route, environment: refreshed).future(on: environment.eventLoop)
            case .failure(let rejection):
                return environment.eventLoop.makeSucceededFuture(.reject(.tokenRejected(rejection.failure)))
            }
        }
        return .pending(future.nonisolated())
    }

    /// The clock checks; an expired token may be refreshed transparently.
    private func checkTime(_ verified: VerifiedToken, token: ExtractedToken, headers: HTTPHeaders, route: RouteConfiguration, environment: AuthEnvironment) -> AuthDecision {
        guard let failure = verified.timeFailure(now: environment.now) else {
            return self.authorize(Identity(token: verified, accessToken: token), route: route, environment: environment)
        }
        guard failure == .expired, let refresh = self.refresh, let refresher = self.refresher,
            let client = environment.authServiceClient,
            verified.secondsSinceExpiry(now: environment.now) <= Double(refresh.maxExpiredSeconds)
        else {
            return .done(.reject(.tokenRejected(failure)))
        }
        let refreshToken: ExtractedToken
        switch TokenExtractor.extract(from: headers, sources: refresh.refreshTokenSources) {
        case .none: return .done(.reject(.tokenRejected(.expired)))
        case .conflict: return .done(.reject(.ambiguousToken))
        case .found(let found): refreshToken = found
        }
        let future = refresher.refresh(refreshToken: refreshToken.value, claims: verified.claims, client: client)
            .hop(to: environment.eventLoop)
            .assumeIsolated()
            .flatMap { outcome -> EventLoopFuture<AuthOutcome> in
                self.afterRefresh(outcome, oldAccess: token, oldRefresh: refreshToken, route: route, environment: environment)
                    .future(on: environment.eventLoop)
            }
        return .pending(future.nonisolated())
    }

    private func afterRefresh(_ outcome: SessionRefresher.Outcome, oldAccess: ExtractedToken, oldRefresh: ExtractedToken, route: RouteConfiguration, environment: AuthEnvironment) -> AuthDecision {
        let cookies = SessionCookies(isTLS: environment.isTLS)
        switch outcome {
        case .unavailable:
            return .done(.reject(.authServiceUnavailable))
        case .rejected:
            // Sign-out: clear the session cookies the client holds.
            var headers: [(name: String, value: String)] = []
            if case .cookie(let refreshCookie) = oldRefresh.location {
                if case .cookie(let accessCookie) = oldAccess.location { headers.append(("Set-Cookie", cookies.clearing(accessCookie))) }
                headers.append(("Set-Cookie", cookies.clearing(refreshCookie)))
            }
            return .done(.rejected(.refreshRejected, headers: headers))
        case .refreshed(let accessToken, let newRefreshToken):
            let verified: VerifiedToken
            switch environment.verifiedTokens.verify(accessToken[...], keys: environment.keys) {
            case .success(let token) where token.timeFailure(now: environment.now) == nil:
                verified = token
            case .success(let token):
                Self.logMisconfiguration(reason: token.timeFailure(now: environment.now)?.rawValue ?? "invalid")
                return .done(.reject(.refreshRejected))
            case .failure(let rejection):
                Self.logMisconfiguration(reason: rejection.failure.rawValue)
                return .done(.reject(.refreshRejected))
            }
            var identity = Identity(token: verified, accessToken: oldAccess)
            identity.replacementAccessToken = accessToken
            // A rotated refresh token goes into a header or cookie: only a plain token may.
            let rotated = newRefreshToken.flatMap { $0 == String(oldRefresh.value) || !SessionCookies.isSafeValue($0) ? nil : $0 }
            if case .cookie(let refreshCookie) = oldRefresh.location {
                let accessCookie: String? = if case .cookie(let name) = oldAccess.location { name } else { self.accessTokenCookie }
                if let accessCookie { identity.responseHeaders.append(("Set-Cookie", cookies.setting(accessCookie, to: accessToken))) }
                if let rotated { identity.responseHeaders.append(("Set-Cookie", cookies.setting(refreshCookie, to: rotated))) }
                if accessCookie == nil, let header = self.refresh?.accessTokenResponseHeader {
                    identity.responseHeaders.append((header, accessToken))
                }
            } else {
                if let header = self.refresh?.accessTokenResponseHeader { identity.responseHeaders.append((header, accessToken)) }
                if let rotated, let header = self.refresh?.refreshTokenResponseHeader { identity.responseHeaders.append((header, rotated)) }
            }
            return self.authorize(identity, route: route, environment: environment)
        }
    }

    /// Profile (when the route or identity headers need it), then the route's requirements.
    private func authorize(_ identity: Identity, route: RouteConfiguration, environment: AuthEnvironment) -> AuthDecision {
        let needsProfile = self.identityHeadersNeedProfile || route.require.contains { $0.path.source == .profile }
        guard needsProfile else { return .done(Self.checkRequirements(identity, route: route)) }
        guard let profiles = self.profiles, let client = environment.authServiceClient, let subject = identity.token.subject else {
            // Without a subject there is no profile to look up: refuse rather than guess.
            return .done(.reject(.tokenRejected(.missingClaim)))
        }
        let key = ProfileKey(issuer: environment.keys.issuers[identity.token.issuerIndex].issuer, subject: subject)
        let accessToken = identity.replacementAccessToken ?? String(identity.accessToken.value)
        let metrics = environment.metrics
        let lookup = profiles.lookup(key, accessToken: accessToken, client: client) { result in
            metrics.increment(MetricKey(MetricName.profileCache, ["result": result]))
        }
        switch lookup {
        case .hit(let profile):
            var identity = identity
            identity.profile = profile
            return .done(Self.checkRequirements(identity, route: route))
        case .pending(let fetch):
            return .pending(fetch.map { result in
                switch result {
                case .profile(let profile):
                    var identity = identity
                    identity.profile = profile
                    return Self.checkRequirements(identity, route: route)
                case .unauthorized:
                    return .reject(.profileRejected)
                case .unavailable:
                    return .reject(.authServiceUnavailable)
                }
            })
        }
    }

    private static let logger = Logger(label: "auth-gateway.auth")

    /// The auth service issued an access token this gateway refuses: its keys, issuer or
    /// audience do not match the configuration. Logged (never the token), then 401.
    private static func logMisconfiguration(reason: String) {
        Self.logger.error("refresh.token_not_accepted", metadata: ["auth.failure": "\(reason)", "hint": "check tokens.issuers against the auth service"])
    }

    static func checkRequirements(_ identity: Identity, route: RouteConfiguration) -> AuthOutcome {
        for requirement in route.require {
            let actual: JSONValue?
            switch requirement.path.source {
            case .claims: actual = IdentityLookup.value(named: requirement.path.name, in: identity.token.claims)
            case .profile: actual = identity.profile.flatMap { IdentityLookup.value(named: requirement.path.name, in: $0) }
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
        "\(name)=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax" + (self.isTLS ? "; Secure" : "")
    }
}
