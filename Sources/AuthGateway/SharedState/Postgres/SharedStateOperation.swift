/// What the gateway was doing with the shared-state database when it failed: the `operation`
/// label of `auth_gateway_shared_state_errors_total` (a fixed set, docs/architecture.md).
enum SharedStateOperation: String, Sendable, CaseIterable {
    /// Connecting (the probe at start and after a failure: a connection of its own, so that
    /// its error — refused, TLS, authentication — is the one reported).
    case connect
    /// Creating the tables, at start and as the probe after a failure.
    case schema
    /// Claiming an old refresh token (or reading the outcome stored for it).
    case claim
    /// Reading the row while waiting for another instance's outcome.
    case wait
    /// Storing an outcome.
    case settle
    /// Deleting expired rows.
    case sweep
    /// The LISTEN connection that wakes waiters.
    case listen
    /// A stored outcome that does not open with this instance's key.
    case decrypt
    /// The rate-limit sync across instances (docs/rate-limits.md): its table and its statement.
    case rateLimitSync = "rate_limit_sync"
    /// Creating the DPoP-proof and introspection tables (`SharedTokenTables`): until it works,
    /// DPoP replays and introspection answers stay process-local; refreshes are not affected.
    case tokenTables = "token_tables"
    /// Recording a DPoP proof's `jti` (docs/authentication.md): the request falls back to the local cache.
    case dpopReplay = "dpop_replay"
    /// Reading or storing a shared introspection answer (docs/authentication.md).
    case introspection
    /// Creating the sessions table (`SharedSessionTable`): until it works, browser sessions
    /// stay process-local; nothing else is affected.
    case sessionTable = "session_table"
    /// Reading a browser session another instance may have made (docs/browser-sign-in.md).
    case sessionRead = "session_read"
    /// Writing browser sessions' changes (sign-ins, refreshes, uses, ends); they wait in this
    /// instance until the database is back.
    case sessionWrite = "session_write"
}

/// One failed database operation, described without secrets: PostgresNIO's errors print
/// nothing (to keep passwords out of logs), so the server's message or the error's kind is
/// taken explicitly; a URL or token never appears.
struct SharedStateFailure: Error, Sendable, CustomStringConvertible {
    let operation: SharedStateOperation
    let reason: String

    var description: String { "\(self.operation.rawValue): \(self.reason)" }
}
