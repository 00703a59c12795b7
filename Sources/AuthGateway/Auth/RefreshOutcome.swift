/// What the auth service answered to one refresh token (docs/authentication.md).
enum RefreshOutcome: Sendable, Equatable {
    /// New tokens; `refreshToken` is nil when the service did not rotate it.
    case refreshed(accessToken: String, refreshToken: String?)
    /// The service refused the refresh token (400/401/403, or 2xx without an access token).
    case rejected
    /// Unreachable, timed out, 5xx, 429 or unreadable: try again later (503). Never remembered.
    case unavailable
}
