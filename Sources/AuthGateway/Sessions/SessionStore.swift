import NIOCore

/// Where sessions live (docs/browser-sign-in.md, "Where sessions live"): this process
/// (`LocalSessionStore`), or PostgreSQL shared by every instance with this process's records as
/// a read-through cache. A known session is answered from memory, without I/O.
protocol SessionStore: AnyObject, Sendable {
    /// The live session under `digest` by `lifetime`: found in memory, unknown, expired, or
    /// (shared store) a database lookup to wait for. A use of a live session is recorded (its
    /// idle clock restarts).
    func lookup(_ digest: TokenDigest, now: Double, lifetime: SessionLifetime, on eventLoop: EventLoop) -> SessionLookup

    /// The record this process holds under `digest`, live or not, without recording a use.
    func held(_ digest: TokenDigest) -> SessionRecord?

    /// A new session (after a sign-in).
    func create(_ digest: TokenDigest, _ record: SessionRecord)

    /// Completes (on `eventLoop`) once the changes made so far to the session under `digest`
    /// are where every instance finds them — at once in this process; with the database, once
    /// written, or once writing failed or timed out (the session then lives here and is
    /// written later). The sign-in callback waits for it, so that the browser's next request,
    /// wherever it lands, finds the session. Never fails.
    func written(_ digest: TokenDigest, on eventLoop: EventLoop) -> EventLoopFuture<Void>

    /// New tokens for a session (after a refresh); the cookie stays the same.
    func update(_ digest: TokenDigest, _ record: SessionRecord)

    /// Ends one session (sign-out, or a refused refresh) on every instance; its streams close
    /// for `reason` (docs/streams.md).
    func end(_ digest: TokenDigest, reason: SessionEndReason)

    /// Ends every session of the provider session `sid` — or, without one, every session of
    /// `subject` — on every instance (back-channel logout, a `session-revoked` event). Returns
    /// how many this process held.
    @discardableResult
    func end(providerSessionID sid: String?, subject: String?, reason: SessionEndReason) -> Int

    /// Records held by this process (`auth_gateway_sessions`).
    var count: Int { get }
}

extension SessionStore {
    /// Ends a session whose credential ran out: its refresh was refused, or it has none
    /// (`SessionAuthentication`). Its streams close as expired.
    func end(_ digest: TokenDigest) {
        self.end(digest, reason: .expired)
    }
}

enum SessionLookup {
    case found(SessionRecord)
    /// No session: unknown or ended.
    case missing
    /// The session was there and has just expired (idle or past its maximum age).
    case expired
    case pending(EventLoopFuture<SessionRecord?>)
}
