import NIOCore

/// Introspection answers shared by every instance (docs/authentication.md): consulted by
/// `TokenIntrospector` on a local miss, before it calls the endpoint. Authentication only knows
/// this protocol; the store behind it (`PostgresIntrospections`, with `sharedState`) lives with
/// the shared state.
protocol SharedIntrospections: Sendable {
    /// Resolves `digest` through the shared answers and, on a miss, `call` (which the caller
    /// runs on its loop), then shares a definite answer with the other instances. `settle`
    /// receives the answer (`fromTable`: a shared answer, no call made). False, with nothing
    /// started, when the shared answers are not in use: the caller calls the endpoint itself.
    func resolve(
        _ digest: TokenDigest, clock: @escaping @Sendable () -> Double,
        call: @escaping @Sendable () -> EventLoopFuture<IntrospectionOutcome>,
        settle: @escaping @Sendable (_ outcome: IntrospectionOutcome, _ fromTable: Bool) -> Void
    ) -> Bool
}
