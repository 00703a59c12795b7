/// Why a browser session ended, as the streams it opened are told (docs/streams.md): their
/// `auth_gateway_streams_closed_total{reason}`.
enum SessionEndReason: String, Sendable {
    /// The browser signed out (or signed in again, which ends the session it had).
    case signOut = "s"
    /// The provider's back-channel logout.
    case backchannel = "b"
    /// A Shared Signals `session-revoked` event (docs/streams.md).
    case signal = "g"
    /// Its credential ran out: idle or past its maximum age, or its refresh was refused.
    case expired = "x"
}

/// Told of every end of a session this process held, wherever it was decided: here (sign-out,
/// back-channel logout, a refused refresh, idle or maximum age) or on another instance (a
/// notification through the shared state). The streams a session opened close on it
/// (`StreamDirectory`). Called on whatever thread ended the session; must not block.
protocol SessionObserver: AnyObject, Sendable {
    /// The session under `digest` ended.
    func sessionEnded(_ digest: TokenDigest, reason: SessionEndReason)
    /// Every session of the provider session `sid` — or, without one, of `subject` — ended
    /// (back-channel logout, a `session-revoked` event), including sessions this process did
    /// not hold a record of.
    func sessionsEnded(providerSessionID sid: String?, subject: String?, reason: SessionEndReason)
}
