/// What an introspection endpoint said about a token (RFC 7662 §2.2), as the gateway keeps it.
enum IntrospectionOutcome: Sendable, Equatable {
    /// Active: its members are the request's claims until `validUntil` (Unix seconds): the
    /// earlier of `exp` and the end of `cacheSeconds`.
    case active(claims: JSONObject, validUntil: Double)
    /// Not active (revoked, expired, unknown, or failing the issuer or audience check); kept
    /// for `negativeCacheSeconds`.
    case inactive(validUntil: Double)
    /// The endpoint is down, slow, refused the gateway or answered something else than an
    /// introspection document: never kept (docs/authentication.md: fail closed, 503).
    case unavailable

    /// Whether the outcome may still be answered at `now` (an unavailable one never is).
    func isCurrent(at now: Double) -> Bool {
        switch self {
        case .active(_, let validUntil), .inactive(let validUntil): return now < validUntil
        case .unavailable: return false
        }
    }

    /// The metric label of a call's outcome.
    var label: String {
        switch self {
        case .active: return "active"
        case .inactive: return "inactive"
        case .unavailable: return "unavailable"
        }
    }
}
