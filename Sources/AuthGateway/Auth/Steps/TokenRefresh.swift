import Logging
import NIOCore
import NIOHTTP1

/// Transparent refresh (docs/authentication.md, "Transparent refresh"): an access token that
/// verified but expired, presented with a refresh token, is redeemed at the auth service (once
/// per refresh token, process- or fleet-wide: `RefreshStore`); the new access token is verified
/// like any other and goes on in the old one's place, and back to the client. A refusal signs
/// the client out.
struct TokenRefresh {
    /// What an expired token leads to.
    enum Start {
        case refresh(ExtractedToken)
        case refused(GatewayError)
    }

    /// The tokens a request presented: where the new ones go, and which cookies a sign-out clears.
    struct Presented: Sendable {
        let access: ExtractedToken
        let refresh: ExtractedToken
    }

    /// What a refresh's outcome leads to.
    enum Adoption {
        case identity(Identity)
        case refused(GatewayError, headers: [(name: String, value: String)])
        /// The new token is signed with a `kid` the issuer's keys lack (a rotation).
        case unknownKey(issuerIndex: Int)
    }

    let configuration: RefreshConfiguration
    let refresher: SessionRefresher
    /// Where a refresh posts now: resolved per refresh (a discovered `token_endpoint` moves).
    let endpoint: () -> UpstreamEndpoint?
    /// The first cookie source of access tokens: where a refreshed access token goes when the
    /// refresh token came from a cookie.
    let accessTokenCookie: String?
    let verification: JWTVerification
    let logger: Logger

    init(
        configuration: RefreshConfiguration, refresher: SessionRefresher, tokenSources: [TokenSourceConfiguration],
        endpoint: @escaping () -> UpstreamEndpoint?, verification: JWTVerification, logger: Logger
    ) {
        self.configuration = configuration
        self.refresher = refresher
        self.endpoint = endpoint
        self.verification = verification
        self.logger = logger
        self.accessTokenCookie =
            tokenSources.lazy.compactMap { source -> String? in
                if case .cookie(let name) = source { return name }
                return nil
            }.first
    }

    /// The refresh token for an access token that expired `secondsSinceExpiry` ago, or why
    /// the request is refused instead.
    func start(expired verified: VerifiedToken, headers: HTTPHeaders, now: Double) -> Start {
        guard verified.secondsSinceExpiry(now: now) <= Double(self.configuration.maxExpiredSeconds) else {
            return .refused(.tokenRejected(.expired))
        }
        switch TokenExtractor.extract(from: headers, sources: self.configuration.refreshTokenSources) {
        case .none: return .refused(.tokenRejected(.expired))
        case .conflict: return .refused(.ambiguousToken)
        case .found(let refreshToken): return .refresh(refreshToken)
        }
    }

    /// Redeems `refreshToken` (`claims`: the expired token's, for a JSON body template); nil
    /// when there is nowhere to send it (no discovery document yet).
    func redeem(
        _ refreshToken: ExtractedToken, claims: JSONObject, trace: RequestTrace?
    ) -> EventLoopFuture<
        RefreshOutcome
    >? {
        guard let endpoint = self.endpoint() else { return nil }
        let span = trace?.child("auth.refresh", kind: .client)
        return self.refresher.refresh(refreshToken: refreshToken.value, claims: claims, endpoint: endpoint).map {
            outcome in
            span?.attributes["auth.refresh.outcome"] = outcome.label
            span?.end()
            return outcome
        }
    }

    /// The refresh's outcome for a request that presented `presented`. `refetched`: the issuer's
    /// keys were refetched for the new token already, so an unknown `kid` now signs out.
    func adopt(
        _ outcome: RefreshOutcome, _ presented: Presented, keys: KeySnapshot, refetched: Bool, request: AuthRequest
    ) -> Adoption {
        let cookies = SessionCookies(isTLS: request.isTLS)
        let (oldAccess, oldRefresh) = (presented.access, presented.refresh)
        switch outcome {
        case .unavailable:
            return .refused(.authServiceUnavailable, headers: [])
        case .rejected:
            return .refused(.refreshRejected, headers: Self.signOutHeaders(presented, cookies: cookies))
        case .refreshed(let accessToken, let newRefreshToken):
            let verified: VerifiedToken
            switch self.verification.verifyFetched(accessToken[...], keys: keys) {
            case .verified(let token) where token.timeFailure(now: request.now) == nil:
                verified = token
            case .unknownKey(let issuerIndex) where !refetched:
                return .unknownKey(issuerIndex: issuerIndex)
            case .verified(let token):
                // The refresh token was spent on a token this gateway refuses: the session is over.
                self.logMisconfiguration(reason: token.timeFailure(now: request.now)?.rawValue ?? "invalid")
                return .refused(.refreshRejected, headers: Self.signOutHeaders(presented, cookies: cookies))
            case .unknownKey:
                self.logMisconfiguration(reason: TokenFailure.unknownKey.rawValue)
                return .refused(.refreshRejected, headers: Self.signOutHeaders(presented, cookies: cookies))
            case .refused(let error):
                self.logMisconfiguration(reason: error.authFailureReason ?? error.errorType)
                return .refused(.refreshRejected, headers: Self.signOutHeaders(presented, cookies: cookies))
            }
            let issuer = keys.issuers[verified.issuerIndex].issuer
            var identity = Identity(token: verified, accessToken: oldAccess, issuer: issuer)
            identity.replacementAccessToken = accessToken
            identity.responseHeaders = self.responseHeaders(
                accessToken: accessToken, rotated: newRefreshToken, oldAccess: oldAccess, oldRefresh: oldRefresh,
                cookies: cookies)
            return .identity(identity)
        }
    }

    /// The new tokens for the client: `Set-Cookie`s when the refresh token came from a cookie,
    /// else the `responseHeaders` names. A rotated refresh token goes back only when it differs
    /// and is a plain token (it goes into a header or cookie).
    private func responseHeaders(
        accessToken: String, rotated newRefreshToken: String?, oldAccess: ExtractedToken, oldRefresh: ExtractedToken,
        cookies: SessionCookies
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        let rotated = newRefreshToken.flatMap {
            $0 == String(oldRefresh.value) || !SessionCookies.isSafeValue($0) ? nil : $0
        }
        if case .cookie(let refreshCookie) = oldRefresh.location {
            let accessCookie: String? =
                if case .cookie(let name) = oldAccess.location { name } else { self.accessTokenCookie }
            if let accessCookie { headers.append(("Set-Cookie", cookies.setting(accessCookie, to: accessToken))) }
            if let rotated { headers.append(("Set-Cookie", cookies.setting(refreshCookie, to: rotated))) }
            if accessCookie == nil, let header = self.configuration.accessTokenResponseHeader {
                headers.append((header, accessToken))
            }
        } else {
            if let header = self.configuration.accessTokenResponseHeader { headers.append((header, accessToken)) }
            if let rotated, let header = self.configuration.refreshTokenResponseHeader {
                headers.append((header, rotated))
            }
        }
        return headers
    }

    /// Sign-out: `Set-Cookie`s clearing the session cookies the client holds.
    private static func signOutHeaders(
        _ presented: Presented, cookies: SessionCookies
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        if case .cookie(let refreshCookie) = presented.refresh.location {
            if case .cookie(let accessCookie) = presented.access.location {
                headers.append(("Set-Cookie", cookies.clearing(accessCookie)))
            }
            headers.append(("Set-Cookie", cookies.clearing(refreshCookie)))
        }
        return headers
    }

    /// The auth service issued an access token this gateway refuses: its keys, issuer or
    /// audience do not match the configuration. Logged (never the token), then 401.
    func logMisconfiguration(reason: String) {
        self.logger.error(
            "refresh.token_not_accepted",
            metadata: ["auth.failure": "\(reason)", "hint": "check tokens.issuers against the auth service"])
    }
}
