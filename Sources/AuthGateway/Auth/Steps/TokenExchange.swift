import NIOCore

/// Token exchange (docs/token-exchange.md): on a route with `exchange`, the backend receives
/// `Authorization: Bearer <a token made for it>` instead of the caller's token — RFC 8693 or
/// RFC 7523 at the route's token endpoint, with the caller's access token (a session's, for a
/// session; the refreshed one after a refresh) as the subject. One exchange per subject token
/// and route, process- or fleet-wide (`TokenExchanger` over the `ExchangeStore`). A refusal is
/// 403 `exchange.refused`, an unavailable endpoint 503 `exchange.unavailable`: never forwarded
/// without the exchanged token.
struct TokenExchange: AuthenticationStep {
    let exchanger: TokenExchanger
    let eventLoop: EventLoop
    /// `check --request`: the exchange that would happen is noted, not made.
    let notes: StepNotes?

    init(_ context: StepContext) {
        self.exchanger = TokenExchanger(
            store: context.state.exchangeStore, clients: context.clients, metrics: context.metrics,
            clock: context.clock, subjectChanges: context.state.subjectChanges)
        self.eventLoop = context.eventLoop
        self.notes = context.notes
    }

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard let configuration = request.route.exchange, let identity = state.identity else { return .next }
        // An API key is no token a provider could exchange.
        guard identity.kind != .apiKey else { return .refuse(.exchangeRefused("invalid_request")) }
        if let notes = self.notes {
            notes.exchange = configuration
            return .next
        }
        let subject = identity.currentAccessToken
        let expiresAt = identity.token.expiresAt
        switch self.exchanger.exchange(
            subjectToken: subject[...], subjectExpiresAt: expiresAt.isFinite ? expiresAt : nil,
            route: request.route.name, configuration: configuration, now: request.now, on: self.eventLoop)
        {
        case .ready(let exchanged):
            Self.adopt(exchanged, into: &state)
            return .next
        case .refused(let error):
            return .refuse(error)
        case .pending(let answer):
            return .after(answer, on: self.eventLoop, resuming: state) { result, state in
                switch result {
                case .success(let exchanged):
                    Self.adopt(exchanged, into: &state)
                    return .next
                case .failure(let error):
                    return .refuse(error)
                }
            }
        }
    }

    /// The backend gets the exchanged token instead of the caller's.
    private static func adopt(_ exchanged: String, into state: inout AuthState) {
        state.identity?.backendAuthorization = "Bearer " + exchanged
    }
}
