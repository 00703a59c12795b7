import NIOCore

/// Who a request is, once authentication is over.
enum AuthOutcome {
    /// No identity: a route with `auth: none`, or `optional` without a token.
    case anonymous
    case authenticated(Identity)
    /// Refused; `headers` go on the error response (e.g. cookies cleared after a sign-out).
    case rejected(GatewayError, headers: HeaderFields)
    /// A browser navigation sent to sign in (docs/browser-sign-in.md): 302 to `location`, with
    /// `headers` (the new flow's cookie, a stale session cookie cleared).
    case redirect(location: String, headers: HeaderFields)

    static func reject(_ error: GatewayError) -> AuthOutcome { .rejected(error, headers: []) }
}

/// Authentication's answer for one request: now, or once the auth service, the introspection
/// endpoint, a key refetch or the shared state has answered.
enum AuthDecision {
    case done(AuthOutcome)
    /// Completes on the request's event loop.
    case pending(EventLoopFuture<AuthOutcome>)

    func future(on eventLoop: EventLoop) -> EventLoopFuture<AuthOutcome> {
        switch self {
        case .done(let outcome): return eventLoop.makeSucceededFuture(outcome)
        case .pending(let future): return future
        }
    }
}
