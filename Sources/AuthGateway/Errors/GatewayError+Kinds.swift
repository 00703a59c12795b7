import NIOHTTP1

/// Every kind of answer the gateway gives itself, each declared once: its stable type, status,
/// detail, RFC 6750 code, challenge, metric reason and `Retry-After` (docs/errors.md). A new
/// kind is one constructor here plus its name and example in `KindName` below, which the
/// compiler keeps complete.
extension GatewayError {
    /// Seconds a client waits before trying a temporary failure again.
    static let retryShortly = 5

    public static func malformedRequest(_ detail: String) -> GatewayError {
        .init(.malformedRequest, "request.malformed", .badRequest, detail, oauthError: "invalid_request")
    }
    public static let invalidPath = GatewayError(
        .invalidPath, "request.invalid_path", .badRequest,
        "The request target is not a valid origin-form or http(s) URL", oauthError: "invalid_request")
    /// A path spelling that servers read differently (docs/forwarding.md, "Request targets");
    /// `reason` says which kind, never the path.
    public static func ambiguousPath(_ reason: String) -> GatewayError {
        .init(.ambiguousPath, "request.ambiguous_path", .badRequest, reason, oauthError: "invalid_request")
    }
    /// A host spelling that servers read differently, or two hosts for one request.
    public static func ambiguousHost(_ reason: String) -> GatewayError {
        .init(.ambiguousHost, "request.ambiguous_host", .badRequest, reason, oauthError: "invalid_request")
    }
    public static let ambiguousToken = GatewayError(
        .ambiguousToken, "request.ambiguous_token", .badRequest,
        "The request carries more than one different access token", oauthError: "invalid_request",
        authFailure: "ambiguous")
    public static let headersTooLarge = GatewayError(
        .headersTooLarge, "request.headers_too_large", .requestHeaderFieldsTooLarge,
        "The request headers are larger than the gateway accepts")
    public static let bodyTooLarge = GatewayError(
        .bodyTooLarge, "request.body_too_large", .payloadTooLarge, "The request body is larger than the gateway accepts"
    )
    public static let requestTimeout = GatewayError(
        .requestTimeout, "request.timeout", .requestTimeout, "The request did not arrive in time")
    public static let upgradeUnsupported = GatewayError(
        .upgradeUnsupported, "request.upgrade_unsupported", .notImplemented,
        "Protocol upgrades are not supported on this route")
    public static let routeNotFound = GatewayError(
        .routeNotFound, "route.not_found", .notFound, "No route matches this request")

    public static let tokenMissing = GatewayError(
        .tokenMissing, "token.missing", .unauthorized, "An access token is required", challenge: .bearer,
        authFailure: "missing")
    public static func tokenRejected(_ failure: TokenFailure) -> GatewayError {
        .init(
            .tokenRejected, "token.\(failure.rawValue)", .unauthorized, failure.description,
            oauthError: "invalid_token",
            challenge: .bearerError, authFailure: failure.rawValue)
    }
    public static let refreshRejected = GatewayError(
        .refreshRejected, "token.refresh_rejected", .unauthorized, "The session expired and could not be refreshed",
        oauthError: "invalid_token", challenge: .bearerError, authFailure: "refresh_rejected")
    public static let profileRejected = GatewayError(
        .profileRejected, "token.profile_rejected", .unauthorized, "The auth service rejected the access token",
        oauthError: "invalid_token", challenge: .bearerError, authFailure: "profile_rejected")
    /// The introspection endpoint says the opaque token is not active (docs/authentication.md).
    public static let tokenInactive = GatewayError(
        .tokenInactive, "token.inactive", .unauthorized, "The access token is not active", oauthError: "invalid_token",
        challenge: .bearerError, authFailure: "inactive")
    /// `requirement` is the JSON path of the failing clause, e.g.
    /// `routes[2].require["profile.super_admin"]` (docs/policies.md): configuration, not secret.
    public static func forbidden(_ requirement: String) -> GatewayError {
        .init(
            .forbidden, "access.forbidden", .forbidden,
            "The request does not satisfy the route requirement \(requirement)",
            oauthError: "insufficient_scope", challenge: .bearerError, authFailure: "forbidden")
    }

    public static let upstreamUnreachable = GatewayError(
        .upstreamUnreachable, "upstream.unreachable", .badGateway, "The backend could not be reached")
    public static let upstreamTimeout = GatewayError(
        .upstreamTimeout, "upstream.timeout", .gatewayTimeout, "The backend did not answer in time")
    public static let upstreamBusy = GatewayError(
        .upstreamBusy, "upstream.busy", .serviceUnavailable, "No backend connection became free in time",
        retryAfterSeconds: retryShortly)
    public static let upstreamProtocolError = GatewayError(
        .upstreamProtocolError, "upstream.protocol_error", .badGateway, "The backend sent an invalid response")
    public static let authServiceUnavailable = GatewayError(
        .authServiceUnavailable, "auth_service.unavailable", .serviceUnavailable,
        "The auth service is unavailable; try again shortly", retryAfterSeconds: retryShortly)
    public static let keysUnavailable = GatewayError(
        .keysUnavailable, "keys.unavailable", .serviceUnavailable,
        "The signing keys are not available yet; try again shortly", retryAfterSeconds: retryShortly)
    public static let overloaded = GatewayError(
        .overloaded, "gateway.overloaded", .serviceUnavailable, "The gateway is at its connection limit",
        retryAfterSeconds: retryShortly)
    /// The introspection endpoint is down, slow or answered something unusable.
    public static let introspectionUnavailable = GatewayError(
        .introspectionUnavailable, "introspection.unavailable", .serviceUnavailable,
        "The token introspection endpoint is unavailable; try again shortly", retryAfterSeconds: retryShortly)

    /// A DPoP-bound token without the DPoP scheme or without a proof, or an unbound token on a
    /// `dpop: required` route (docs/authentication.md); `algs` lists the accepted proof algorithms.
    public static func dpopRequired(algs: String) -> GatewayError {
        .init(
            .dpopRequired, "dpop.required", .unauthorized,
            "A DPoP-bound access token needs the DPoP scheme and a DPoP proof", challenge: .dpop(algs: algs),
            authFailure: "dpop_required")
    }
    /// A proof that failed `check` (named in the detail).
    public static func dpopInvalidProof(_ check: String, algs: String) -> GatewayError {
        .init(
            .dpopInvalidProof, "dpop.invalid_proof", .unauthorized, "The DPoP proof failed its check: \(check)",
            oauthError: "invalid_dpop_proof", challenge: .dpopError(algs: algs), authFailure: "dpop_invalid_proof")
    }
    /// A proof without the current server nonce (RFC 9449 §8); the answer carries `DPoP-Nonce`.
    public static func dpopUseNonce(algs: String) -> GatewayError {
        .init(
            .dpopUseNonce, "dpop.use_nonce", .unauthorized,
            "The DPoP proof must carry the nonce of the DPoP-Nonce header", oauthError: "use_dpop_nonce",
            challenge: .dpopError(algs: algs), authFailure: "dpop_use_nonce")
    }
    /// Refused by the rate limit `limit` (docs/rate-limits.md); its name is configuration, not secret.
    public static func rateLimited(_ limit: String, retryAfterSeconds: Int) -> GatewayError {
        .init(
            .rateLimited, "rate_limited", .tooManyRequests, "Too many requests under the rate limit \"\(limit)\"",
            retryAfterSeconds: retryAfterSeconds, rateLimitName: limit)
    }

    /// The callback's flow is missing, unknown, expired or already used (docs/browser-sign-in.md).
    public static let signInInvalidState = GatewayError(
        .signInInvalidState, "signin.invalid_state", .badRequest,
        "The sign-in is unknown, expired or was already used; start it again")
    /// The provider answered the sign-in with an OAuth `error`; only a well-formed code is kept.
    public static func signInDenied(_ code: String) -> GatewayError {
        .init(
            .signInDenied, "signin.denied", .forbidden,
            "The identity provider refused the sign-in (\(Self.wellFormedCode(code)))")
    }
    /// The token endpoint refused the authorization code.
    public static let signInCodeRejected = GatewayError(
        .signInCodeRejected, "signin.code_rejected", .badRequest, "The identity provider refused the authorization code"
    )
    /// The ID token failed `check` (a name such as `nonce`, never a value).
    public static func signInIDTokenRejected(_ check: String) -> GatewayError {
        .init(
            .signInIDTokenRejected, "signin.invalid_id_token", .badRequest,
            "The identity provider's ID token failed its check: \(check)")
    }
    /// An unsafe request authenticated by the session cookie from another origin.
    public static let signInCSRF = GatewayError(
        .signInCSRF, "signin.csrf", .forbidden,
        "A session request that changes state must come from the site's own pages", authFailure: "signin_csrf")
    /// Sign-in cannot start: the provider's discovery document is not there yet.
    public static let signInUnavailable = GatewayError(
        .signInUnavailable, "signin.unavailable", .serviceUnavailable,
        "Sign-in is not available yet; try again shortly",
        retryAfterSeconds: retryShortly)

    /// A CORS preflight the route's `cors` does not allow; `reason` names what (docs/policies.md).
    public static func corsRefused(_ reason: String) -> GatewayError {
        .init(.corsRefused, "cors.refused", .forbidden, "The cross-origin request is not allowed: \(reason)")
    }
    /// An unknown, expired or malformed API key (docs/policies.md, "API keys"). No bearer token
    /// was presented (an API key is a credential of its own): the bare challenge.
    public static let apiKeyInvalid = GatewayError(
        .apiKeyInvalid, "apikey.invalid", .unauthorized, "The API key is unknown, expired or malformed",
        challenge: .bearer, authFailure: "apikey_invalid")
    /// An API key and an access token in one request: which one speaks is not guessed.
    public static let apiKeyAmbiguous = GatewayError(
        .apiKeyAmbiguous, "apikey.ambiguous", .badRequest, "The request carries both an API key and an access token",
        oauthError: "invalid_request", authFailure: "apikey_ambiguous")
    /// An authorizer call from a peer outside `authorizer.trustedPeers` (docs/authorizer.md).
    public static let authorizerUntrustedPeer = GatewayError(
        .authorizerUntrustedPeer, "authorizer.untrusted_peer", .forbidden,
        "This address may not ask the gateway for decisions")
    /// The token endpoint refused the route's exchange (docs/token-exchange.md): its well-formed `error` only.
    public static func exchangeRefused(_ code: String) -> GatewayError {
        .init(
            .exchangeRefused, "exchange.refused", .forbidden,
            "The token endpoint refused the token exchange (\(Self.wellFormedCode(code)))")
    }
    /// The token endpoint is down, slow or answered something unusable: 503 with `Retry-After`.
    public static let exchangeUnavailable = GatewayError(
        .exchangeUnavailable, "exchange.unavailable", .serviceUnavailable,
        "The token endpoint is unavailable; try again shortly", retryAfterSeconds: retryShortly)

    /// An OAuth `error` code as RFC 6749 §5.2 allows it (NQSCHAR, at most 64 bytes), else "unknown".
    static func wellFormedCode(_ code: String) -> String {
        let wellFormed =
            !code.isEmpty && code.utf8.count <= 64
            && code.utf8.allSatisfy { ($0 >= 0x23 && $0 <= 0x5B) || ($0 >= 0x5D && $0 <= 0x7E) || $0 == 0x21 }
        return wellFormed ? code : "unknown"
    }

    /// Every kind of `GatewayError` by name, without its details. Each constructor above names
    /// its kind, and `example` maps each name back to an error, so the compiler keeps
    /// `everyKind` complete: the tests walk it to hold every answer to docs/errors.md.
    enum KindName: CaseIterable, Sendable {
        case malformedRequest, invalidPath, ambiguousPath, ambiguousHost, ambiguousToken, headersTooLarge, bodyTooLarge,
            requestTimeout
        case upgradeUnsupported, routeNotFound, tokenMissing, tokenRejected, refreshRejected, profileRejected
        case forbidden, upstreamUnreachable, upstreamTimeout, upstreamBusy, upstreamProtocolError
        case authServiceUnavailable, keysUnavailable, overloaded, tokenInactive, introspectionUnavailable
        case dpopRequired, dpopInvalidProof, dpopUseNonce, rateLimited
        case signInInvalidState, signInDenied, signInCodeRejected, signInIDTokenRejected, signInCSRF
        case signInUnavailable, corsRefused, apiKeyInvalid, apiKeyAmbiguous, authorizerUntrustedPeer
        case exchangeRefused, exchangeUnavailable

        /// One error of this kind (details as the gateway would fill them in).
        var example: GatewayError {
            switch self {
            case .malformedRequest: .malformedRequest("Conflicting Content-Length headers")
            case .invalidPath: .invalidPath
            case .ambiguousPath: .ambiguousPath("The path holds an escaped slash (%2F)")
            case .ambiguousHost: .ambiguousHost("The Host carries userinfo (\"@\")")
            case .ambiguousToken: .ambiguousToken
            case .headersTooLarge: .headersTooLarge
            case .bodyTooLarge: .bodyTooLarge
            case .requestTimeout: .requestTimeout
            case .upgradeUnsupported: .upgradeUnsupported
            case .routeNotFound: .routeNotFound
            case .tokenMissing: .tokenMissing
            case .tokenRejected: .tokenRejected(.expired)
            case .refreshRejected: .refreshRejected
            case .profileRejected: .profileRejected
            case .forbidden: .forbidden("routes[0].require[\"claims.scope\"]")
            case .upstreamUnreachable: .upstreamUnreachable
            case .upstreamTimeout: .upstreamTimeout
            case .upstreamBusy: .upstreamBusy
            case .upstreamProtocolError: .upstreamProtocolError
            case .authServiceUnavailable: .authServiceUnavailable
            case .keysUnavailable: .keysUnavailable
            case .overloaded: .overloaded
            case .tokenInactive: .tokenInactive
            case .introspectionUnavailable: .introspectionUnavailable
            case .dpopRequired: .dpopRequired(algs: "ES256 RS256 PS256 EdDSA")
            case .dpopInvalidProof: .dpopInvalidProof("htu", algs: "ES256 RS256 PS256 EdDSA")
            case .dpopUseNonce: .dpopUseNonce(algs: "ES256 RS256 PS256 EdDSA")
            case .rateLimited: .rateLimited("per-user", retryAfterSeconds: 3)
            case .signInInvalidState: .signInInvalidState
            case .signInDenied: .signInDenied("access_denied")
            case .signInCodeRejected: .signInCodeRejected
            case .signInIDTokenRejected: .signInIDTokenRejected("nonce")
            case .signInCSRF: .signInCSRF
            case .signInUnavailable: .signInUnavailable
            case .corsRefused: .corsRefused("the origin is not allowed")
            case .apiKeyInvalid: .apiKeyInvalid
            case .apiKeyAmbiguous: .apiKeyAmbiguous
            case .authorizerUntrustedPeer: .authorizerUntrustedPeer
            case .exchangeRefused: .exchangeRefused("invalid_grant")
            case .exchangeUnavailable: .exchangeUnavailable
            }
        }
    }

    /// One error of every kind, and a token refusal for every `TokenFailure`.
    static var everyKind: [GatewayError] {
        KindName.allCases.flatMap { name in
            name == .tokenRejected ? TokenFailure.allCases.map(GatewayError.tokenRejected) : [name.example]
        }
    }
}
