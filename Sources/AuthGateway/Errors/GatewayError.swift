import Foundation
import NIOHTTP1

/// An answer the gateway gives itself instead of forwarding.
///
/// A struct over a private enum (as AsyncHTTPClient's `HTTPClientError`): callers build one with
/// the static constructors, and `errorType` is the stable name used in the problem document's
/// `type`, the `reason` metric label and the log line.
public struct GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Kind: Equatable {
        case malformedRequest(String)
        case invalidPath
        case ambiguousPath(String)
        case ambiguousHost(String)
        case ambiguousToken
        case headersTooLarge
        case bodyTooLarge
        case requestTimeout
        case upgradeUnsupported
        case routeNotFound
        case tokenMissing
        case tokenRejected(TokenFailure)
        case refreshRejected
        case profileRejected
        case forbidden(String)
        case upstreamUnreachable
        case upstreamTimeout
        case upstreamBusy
        case upstreamProtocolError
        case authServiceUnavailable
        case keysUnavailable
        case overloaded
        case tokenInactive
        case introspectionUnavailable
        case dpopRequired(algs: String)
        case dpopInvalidProof(check: String, algs: String)
        case dpopUseNonce(algs: String)
        case rateLimited(limit: String, retryAfterSeconds: Int)
        case signInInvalidState
        case signInDenied(code: String)
        case signInCodeRejected
        case signInIDTokenRejected(check: String)
        case signInCSRF
        case signInUnavailable
        case corsRefused(String)
        case apiKeyInvalid
        case apiKeyAmbiguous
        case authorizerUntrustedPeer
        case exchangeRefused(code: String)
        case exchangeUnavailable
    }

    private let kind: Kind

    public static func malformedRequest(_ detail: String) -> GatewayError { .init(kind: .malformedRequest(detail)) }
    public static let invalidPath = GatewayError(kind: .invalidPath)
    /// A path spelling that servers read differently (docs/forwarding.md, "Request targets");
    /// `reason` says which kind, never the path.
    public static func ambiguousPath(_ reason: String) -> GatewayError { .init(kind: .ambiguousPath(reason)) }
    /// A host spelling that servers read differently, or two hosts for one request.
    public static func ambiguousHost(_ reason: String) -> GatewayError { .init(kind: .ambiguousHost(reason)) }
    public static let ambiguousToken = GatewayError(kind: .ambiguousToken)
    public static let headersTooLarge = GatewayError(kind: .headersTooLarge)
    public static let bodyTooLarge = GatewayError(kind: .bodyTooLarge)
    public static let requestTimeout = GatewayError(kind: .requestTimeout)
    public static let upgradeUnsupported = GatewayError(kind: .upgradeUnsupported)
    public static let routeNotFound = GatewayError(kind: .routeNotFound)
    public static let tokenMissing = GatewayError(kind: .tokenMissing)
    public static func tokenRejected(_ failure: TokenFailure) -> GatewayError { .init(kind: .tokenRejected(failure)) }
    public static let refreshRejected = GatewayError(kind: .refreshRejected)
    public static let profileRejected = GatewayError(kind: .profileRejected)
    /// `requirement` is the JSON path of the failing clause, e.g.
    /// `routes[2].require["profile.super_admin"]` (docs/policies.md): configuration, not secret.
    public static func forbidden(_ requirement: String) -> GatewayError { .init(kind: .forbidden(requirement)) }
    public static let upstreamUnreachable = GatewayError(kind: .upstreamUnreachable)
    public static let upstreamTimeout = GatewayError(kind: .upstreamTimeout)
    public static let upstreamBusy = GatewayError(kind: .upstreamBusy)
    public static let upstreamProtocolError = GatewayError(kind: .upstreamProtocolError)
    public static let authServiceUnavailable = GatewayError(kind: .authServiceUnavailable)
    public static let keysUnavailable = GatewayError(kind: .keysUnavailable)
    public static let overloaded = GatewayError(kind: .overloaded)
    /// The introspection endpoint says the opaque token is not active (docs/authentication.md).
    public static let tokenInactive = GatewayError(kind: .tokenInactive)
    /// The introspection endpoint is down, slow or answered something unusable.
    public static let introspectionUnavailable = GatewayError(kind: .introspectionUnavailable)
    /// A DPoP-bound token without the DPoP scheme or without a proof, or an unbound token on a
    /// `dpop: required` route (docs/authentication.md); `algs` lists the accepted proof algorithms.
    public static func dpopRequired(algs: String) -> GatewayError { .init(kind: .dpopRequired(algs: algs)) }
    /// A proof that failed `check` (named in the detail).
    public static func dpopInvalidProof(_ check: String, algs: String) -> GatewayError {
        .init(kind: .dpopInvalidProof(check: check, algs: algs))
    }
    /// A proof without the current server nonce (RFC 9449 §8); the answer carries `DPoP-Nonce`.
    public static func dpopUseNonce(algs: String) -> GatewayError { .init(kind: .dpopUseNonce(algs: algs)) }
    /// Refused by the rate limit `limit` (docs/rate-limits.md); its name is configuration, not secret.
    public static func rateLimited(_ limit: String, retryAfterSeconds: Int) -> GatewayError {
        .init(kind: .rateLimited(limit: limit, retryAfterSeconds: retryAfterSeconds))
    }

    /// The callback's flow is missing, unknown, expired or already used (docs/browser-sign-in.md).
    public static let signInInvalidState = GatewayError(kind: .signInInvalidState)
    /// The provider answered the sign-in with an OAuth `error`; only a well-formed code is kept.
    public static func signInDenied(_ code: String) -> GatewayError {
        .init(kind: .signInDenied(code: Self.wellFormedCode(code)))
    }
    /// The token endpoint refused the authorization code.
    public static let signInCodeRejected = GatewayError(kind: .signInCodeRejected)
    /// The ID token failed `check` (a name such as `nonce`, never a value).
    public static func signInIDTokenRejected(_ check: String) -> GatewayError {
        .init(kind: .signInIDTokenRejected(check: check))
    }
    /// An unsafe request authenticated by the session cookie from another origin.
    public static let signInCSRF = GatewayError(kind: .signInCSRF)
    /// Sign-in cannot start: the provider's discovery document is not there yet.
    public static let signInUnavailable = GatewayError(kind: .signInUnavailable)
    /// A CORS preflight the route's `cors` does not allow; `reason` names what (docs/policies.md).
    public static func corsRefused(_ reason: String) -> GatewayError { .init(kind: .corsRefused(reason)) }
    /// An unknown, expired or malformed API key (docs/policies.md, "API keys").
    public static let apiKeyInvalid = GatewayError(kind: .apiKeyInvalid)
    /// An API key and an access token in one request: which one speaks is not guessed.
    public static let apiKeyAmbiguous = GatewayError(kind: .apiKeyAmbiguous)
    /// An authorizer call from a peer outside `authorizer.trustedPeers` (docs/authorizer.md).
    public static let authorizerUntrustedPeer = GatewayError(kind: .authorizerUntrustedPeer)
    /// The token endpoint refused the route's exchange (docs/token-exchange.md): its well-formed `error` only.
    public static func exchangeRefused(_ code: String) -> GatewayError {
        .init(kind: .exchangeRefused(code: Self.wellFormedCode(code)))
    }
    /// The token endpoint is down, slow or answered something unusable: 503 with `Retry-After`.
    public static let exchangeUnavailable = GatewayError(kind: .exchangeUnavailable)

    /// Stable dotted name, e.g. `token.expired`.
    public var errorType: String {
        switch self.kind {
        case .malformedRequest: return "request.malformed"
        case .invalidPath: return "request.invalid_path"
        case .ambiguousPath: return "request.ambiguous_path"
        case .ambiguousHost: return "request.ambiguous_host"
        case .ambiguousToken: return "request.ambiguous_token"
        case .headersTooLarge: return "request.headers_too_large"
        case .bodyTooLarge: return "request.body_too_large"
        case .requestTimeout: return "request.timeout"
        case .upgradeUnsupported: return "request.upgrade_unsupported"
        case .routeNotFound: return "route.not_found"
        case .tokenMissing: return "token.missing"
        case .tokenRejected(let failure): return "token.\(failure.rawValue)"
        case .refreshRejected: return "token.refresh_rejected"
        case .profileRejected: return "token.profile_rejected"
        case .forbidden: return "access.forbidden"
        case .upstreamUnreachable: return "upstream.unreachable"
        case .upstreamTimeout: return "upstream.timeout"
        case .upstreamBusy: return "upstream.busy"
        case .upstreamProtocolError: return "upstream.protocol_error"
        case .authServiceUnavailable: return "auth_service.unavailable"
        case .keysUnavailable: return "keys.unavailable"
        case .overloaded: return "gateway.overloaded"
        case .tokenInactive: return "token.inactive"
        case .introspectionUnavailable: return "introspection.unavailable"
        case .dpopRequired: return "dpop.required"
        case .dpopInvalidProof: return "dpop.invalid_proof"
        case .dpopUseNonce: return "dpop.use_nonce"
        case .rateLimited: return "rate_limited"
        case .signInInvalidState: return "signin.invalid_state"
        case .signInDenied: return "signin.denied"
        case .signInCodeRejected: return "signin.code_rejected"
        case .signInIDTokenRejected: return "signin.invalid_id_token"
        case .signInCSRF: return "signin.csrf"
        case .signInUnavailable: return "signin.unavailable"
        case .corsRefused: return "cors.refused"
        case .apiKeyInvalid: return "apikey.invalid"
        case .apiKeyAmbiguous: return "apikey.ambiguous"
        case .authorizerUntrustedPeer: return "authorizer.untrusted_peer"
        case .exchangeRefused: return "exchange.refused"
        case .exchangeUnavailable: return "exchange.unavailable"
        }
    }

    public var status: HTTPResponseStatus {
        switch self.kind {
        case .malformedRequest, .invalidPath, .ambiguousPath, .ambiguousHost, .ambiguousToken, .signInInvalidState,
            .signInCodeRejected,
            .signInIDTokenRejected, .apiKeyAmbiguous:
            return .badRequest
        case .headersTooLarge: return .requestHeaderFieldsTooLarge
        case .bodyTooLarge: return .payloadTooLarge
        case .requestTimeout: return .requestTimeout
        case .upgradeUnsupported: return .notImplemented
        case .routeNotFound: return .notFound
        case .tokenMissing, .tokenRejected, .refreshRejected, .profileRejected, .tokenInactive, .dpopRequired,
            .dpopInvalidProof, .dpopUseNonce, .apiKeyInvalid:
            return .unauthorized
        case .forbidden, .signInDenied, .signInCSRF, .corsRefused, .authorizerUntrustedPeer, .exchangeRefused:
            return .forbidden
        case .upstreamUnreachable, .upstreamProtocolError: return .badGateway
        case .upstreamTimeout: return .gatewayTimeout
        case .upstreamBusy, .authServiceUnavailable, .keysUnavailable, .overloaded, .introspectionUnavailable,
            .signInUnavailable, .exchangeUnavailable:
            return .serviceUnavailable
        case .rateLimited: return .tooManyRequests
        }
    }

    /// The RFC 6750 §3.1 error code, where one applies.
    public var oauthError: String? {
        switch self.kind {
        case .malformedRequest, .invalidPath, .ambiguousPath, .ambiguousHost, .ambiguousToken, .apiKeyAmbiguous:
            return "invalid_request"
        case .tokenRejected, .refreshRejected, .profileRejected, .tokenInactive: return "invalid_token"
        case .forbidden: return "insufficient_scope"
        case .dpopInvalidProof: return "invalid_dpop_proof"
        case .dpopUseNonce: return "use_dpop_nonce"
        default: return nil
        }
    }

    /// Seconds for `Retry-After` on temporary failures.
    public var retryAfterSeconds: Int? {
        switch self.kind {
        case .authServiceUnavailable, .keysUnavailable, .upstreamBusy, .overloaded, .introspectionUnavailable,
            .signInUnavailable, .exchangeUnavailable:
            return 5
        case .rateLimited(_, let seconds): return seconds
        default: return nil
        }
    }

    public var detail: String {
        switch self.kind {
        case .malformedRequest(let detail): return detail
        case .invalidPath: return "The request target is not a valid origin-form or http(s) URL"
        case .ambiguousPath(let reason): return reason
        case .ambiguousHost(let reason): return reason
        case .ambiguousToken: return "The request carries more than one different access token"
        case .headersTooLarge: return "The request headers are larger than the gateway accepts"
        case .bodyTooLarge: return "The request body is larger than the gateway accepts"
        case .requestTimeout: return "The request did not arrive in time"
        case .upgradeUnsupported: return "Protocol upgrades are not supported on this route"
        case .routeNotFound: return "No route matches this request"
        case .tokenMissing: return "An access token is required"
        case .tokenRejected(let failure): return failure.description
        case .refreshRejected: return "The session expired and could not be refreshed"
        case .profileRejected: return "The auth service rejected the access token"
        case .forbidden(let requirement): return "The request does not satisfy the route requirement \(requirement)"
        case .upstreamUnreachable: return "The backend could not be reached"
        case .upstreamTimeout: return "The backend did not answer in time"
        case .upstreamBusy: return "No backend connection became free in time"
        case .upstreamProtocolError: return "The backend sent an invalid response"
        case .authServiceUnavailable: return "The auth service is unavailable; try again shortly"
        case .keysUnavailable: return "The signing keys are not available yet; try again shortly"
        case .overloaded: return "The gateway is at its connection limit"
        case .tokenInactive: return "The access token is not active"
        case .introspectionUnavailable: return "The token introspection endpoint is unavailable; try again shortly"
        case .dpopRequired: return "A DPoP-bound access token needs the DPoP scheme and a DPoP proof"
        case .dpopInvalidProof(let check, _): return "The DPoP proof failed its check: \(check)"
        case .dpopUseNonce: return "The DPoP proof must carry the nonce of the DPoP-Nonce header"
        case .rateLimited(let limit, _): return "Too many requests under the rate limit \"\(limit)\""
        case .signInInvalidState: return "The sign-in is unknown, expired or was already used; start it again"
        case .signInDenied(let code): return "The identity provider refused the sign-in (\(code))"
        case .signInCodeRejected: return "The identity provider refused the authorization code"
        case .signInIDTokenRejected(let check): return "The identity provider's ID token failed its check: \(check)"
        case .signInCSRF: return "A session request that changes state must come from the site's own pages"
        case .signInUnavailable: return "Sign-in is not available yet; try again shortly"
        case .corsRefused(let reason): return "The cross-origin request is not allowed: \(reason)"
        case .apiKeyInvalid: return "The API key is unknown, expired or malformed"
        case .apiKeyAmbiguous: return "The request carries both an API key and an access token"
        case .authorizerUntrustedPeer: return "This address may not ask the gateway for decisions"
        case .exchangeRefused(let code): return "The token endpoint refused the token exchange (\(code))"
        case .exchangeUnavailable: return "The token endpoint is unavailable; try again shortly"
        }
    }

    /// The value of `WWW-Authenticate` for 401 and 403 answers (RFC 6750 §3); every 401 has
    /// one (RFC 9110 §15.5.2, docs/errors.md).
    public var wwwAuthenticate: String? {
        switch self.kind {
        case .tokenMissing, .apiKeyInvalid:
            // No bearer token was presented (an API key is a credential of its own): the bare
            // challenge, without an error attribute (RFC 6750 §3.1).
            return "Bearer realm=\"auth-gateway\""
        case .dpopRequired(let algs):
            return "DPoP algs=\"\(algs)\""
        case .dpopInvalidProof(let check, let algs):
            return
                "DPoP error=\"invalid_dpop_proof\", error_description=\"The DPoP proof failed its check: \(check)\", algs=\"\(algs)\""
        case .dpopUseNonce(let algs):
            return "DPoP error=\"use_dpop_nonce\", error_description=\"\(self.detail)\", algs=\"\(algs)\""
        case .tokenRejected, .refreshRejected, .profileRejected, .forbidden, .tokenInactive:
            // quoted-string (RFC 9110 §5.6.4): the detail may name a configured claim.
            let description = self.detail.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                of: "\"", with: "\\\"")
            return "Bearer realm=\"auth-gateway\", error=\"\(self.oauthError!)\", error_description=\"\(description)\""
        default:
            return nil
        }
    }

    /// The failure reason for `auth_gateway_auth_failures_total`, for token-related errors.
    public var authFailureReason: String? {
        switch self.kind {
        case .tokenMissing: return "missing"
        case .tokenRejected(let failure): return failure.rawValue
        case .refreshRejected: return "refresh_rejected"
        case .profileRejected: return "profile_rejected"
        case .forbidden: return "forbidden"
        case .ambiguousToken: return "ambiguous"
        case .tokenInactive: return "inactive"
        case .dpopRequired: return "dpop_required"
        case .dpopInvalidProof: return "dpop_invalid_proof"
        case .dpopUseNonce: return "dpop_use_nonce"
        case .signInCSRF: return "signin_csrf"
        case .apiKeyInvalid: return "apikey_invalid"
        case .apiKeyAmbiguous: return "apikey_ambiguous"
        default: return nil
        }
    }

    /// Whether the request target itself was refused (not a target, or an ambiguous spelling):
    /// the access log names no path for it (docs/forwarding.md, "Request targets").
    public var refusesTarget: Bool {
        switch self.kind {
        case .invalidPath, .ambiguousPath, .ambiguousHost: return true
        default: return false
        }
    }

    /// The rate limit that refused the request, for the metric and the access log.
    public var rateLimitName: String? {
        if case .rateLimited(let limit, _) = self.kind { return limit }
        return nil
    }

    public var description: String { "\(self.status.code) \(self.errorType): \(self.detail)" }

    /// The RFC 9457 problem document.
    public func problemJSON(requestID: String) -> String {
        let document: JSONValue = [
            "type": .string("urn:auth-gateway:problem:\(self.errorType)"),
            "title": .string(self.status.reasonPhrase),
            "status": .number(JSONNumber(Int(self.status.code))),
            "detail": .string(self.detail),
            // The RFC 6750 code where one applies, else the gateway's own stable error type.
            "error": .string(self.oauthError ?? self.errorType),
            "requestId": .string(requestID),
        ]
        return document.jsonText
    }

    /// Which kind this is, by name (`GatewayError.KindName`, GatewayError+Kinds.swift): the
    /// list of every kind that tests walk to hold each one to docs/errors.md (e.g. every 401
    /// carries `WWW-Authenticate`). Exhaustive, so a new kind does not compile without a name,
    /// and the name does not compile without an example.
    var kindName: KindName {
        switch self.kind {
        case .malformedRequest: .malformedRequest
        case .invalidPath: .invalidPath
        case .ambiguousPath: .ambiguousPath
        case .ambiguousHost: .ambiguousHost
        case .ambiguousToken: .ambiguousToken
        case .headersTooLarge: .headersTooLarge
        case .bodyTooLarge: .bodyTooLarge
        case .requestTimeout: .requestTimeout
        case .upgradeUnsupported: .upgradeUnsupported
        case .routeNotFound: .routeNotFound
        case .tokenMissing: .tokenMissing
        case .tokenRejected: .tokenRejected
        case .refreshRejected: .refreshRejected
        case .profileRejected: .profileRejected
        case .forbidden: .forbidden
        case .upstreamUnreachable: .upstreamUnreachable
        case .upstreamTimeout: .upstreamTimeout
        case .upstreamBusy: .upstreamBusy
        case .upstreamProtocolError: .upstreamProtocolError
        case .authServiceUnavailable: .authServiceUnavailable
        case .keysUnavailable: .keysUnavailable
        case .overloaded: .overloaded
        case .tokenInactive: .tokenInactive
        case .introspectionUnavailable: .introspectionUnavailable
        case .dpopRequired: .dpopRequired
        case .dpopInvalidProof: .dpopInvalidProof
        case .dpopUseNonce: .dpopUseNonce
        case .rateLimited: .rateLimited
        case .signInInvalidState: .signInInvalidState
        case .signInDenied: .signInDenied
        case .signInCodeRejected: .signInCodeRejected
        case .signInIDTokenRejected: .signInIDTokenRejected
        case .signInCSRF: .signInCSRF
        case .signInUnavailable: .signInUnavailable
        case .corsRefused: .corsRefused
        case .apiKeyInvalid: .apiKeyInvalid
        case .apiKeyAmbiguous: .apiKeyAmbiguous
        case .authorizerUntrustedPeer: .authorizerUntrustedPeer
        case .exchangeRefused: .exchangeRefused
        case .exchangeUnavailable: .exchangeUnavailable
        }
    }
}
