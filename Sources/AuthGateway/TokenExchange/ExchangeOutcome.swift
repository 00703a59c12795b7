import NIOCore

/// What the token endpoint answered to one exchange (docs/token-exchange.md).
enum ExchangeOutcome: Sendable, Equatable {
    /// The exchanged token, usable until `usableUntil` (Unix seconds by the reader's clock:
    /// `exp` or `expires_in` less 30 s, never past the subject token's expiry). Kept and shared
    /// until then.
    case exchanged(token: String, usableUntil: Double)
    /// The endpoint refused with this OAuth `error` code (403 `exchange.refused`). Never kept.
    case refused(code: String)
    /// Timeout, connection failure, 5xx, unreadable answer (503 `exchange.unavailable`). Never kept.
    case unavailable

    /// Whether a cache may answer with it at `now`.
    func isUsable(at now: Double) -> Bool {
        if case .exchanged(_, let usableUntil) = self { return usableUntil > now }
        return false
    }

    /// The answer a request gets.
    var result: Result<String, GatewayError> {
        switch self {
        case .exchanged(let token, _): return .success(token)
        case .refused(let code): return .failure(.exchangeRefused(code))
        case .unavailable: return .failure(.exchangeUnavailable)
        }
    }

    var metricOutcome: ExchangeMetricOutcome {
        switch self {
        case .exchanged: return .exchanged
        case .refused: return .refused
        case .unavailable: return .unavailable
        }
    }
}

/// What a route's exchange gives a request (`TokenExchanger.exchange`).
package enum ExchangeResult {
    /// The exchanged token, from this loop's memo or the process's cache: forward it now.
    case ready(String)
    /// Refused (403 `exchange.refused`) or unavailable (503 `exchange.unavailable`), known at
    /// once (e.g. no client for the token endpoint).
    case refused(GatewayError)
    /// A call (this request's, or one it joined) is under way; completes on the request's loop.
    case pending(EventLoopFuture<Result<String, GatewayError>>)
}
