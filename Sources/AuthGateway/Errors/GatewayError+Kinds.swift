extension GatewayError {
    /// An OAuth `error` code as RFC 6749 §5.2 allows it (NQSCHAR, at most 64 bytes), else "unknown".
    static func wellFormedCode(_ code: String) -> String {
        let wellFormed =
            !code.isEmpty && code.utf8.count <= 64
            && code.utf8.allSatisfy { ($0 >= 0x23 && $0 <= 0x5B) || ($0 >= 0x5D && $0 <= 0x7E) || $0 == 0x21 }
        return wellFormed ? code : "unknown"
    }

    /// Every kind of `GatewayError` by name, without its details. `kindName` maps each error to
    /// one exhaustively, and `example` maps each name back to an error, so the compiler keeps
    /// `everyKind` complete: the tests walk it to hold every answer to docs/errors.md.
    enum KindName: CaseIterable {
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
