import NIOCore

/// The DPoP replay check shared by every instance (docs/authentication.md), behind the
/// process's `ReplayCache`: a proof seen here is refused without asking it. Authentication
/// only knows this protocol; the store behind it (`PostgresDPoPReplay`, with `sharedState`)
/// lives with the shared state, which depends on Auth and not the other way round.
protocol SharedDPoPReplay: Sendable {
    /// nil when the shared check is not in use (the local check stands); else a future on
    /// `eventLoop`: true for the proof's first use (or a check that failed), false for a
    /// replay. `keepSeconds`: how long the proof could still be accepted anywhere.
    func firstUse(_ digest: TokenDigest, keepSeconds: Double, on eventLoop: EventLoop) -> EventLoopFuture<Bool>?
}
