import NIOCore

/// How a single-flight lookup was answered (`LocalSingleFlight.lookup`): `Led` is what the
/// caller's `lead` returned when the lookup led the call (the flight's future, or a future of
/// the caller's own).
enum SingleFlightAnswer<Value: Sendable, Led> {
    /// A remembered outcome, within its freshness.
    case fresh(Value)
    /// A remembered outcome past its freshness, answered as it is while a background refresh
    /// (led by this lookup unless one was in flight) renews it.
    case stale(Value)
    /// The call another lookup leads; its future completes on the caller's loop.
    case joined(EventLoopFuture<Value>)
    /// This lookup leads the call.
    case led(Led)

    /// How the outcome was got (for the single-flight metrics).
    var role: SingleFlightRole {
        switch self {
        case .fresh, .stale: return .remembered
        case .joined: return .joined
        case .led: return .led
        }
    }
}

extension SingleFlightAnswer where Led == EventLoopFuture<Value> {
    /// The outcome as one future on `eventLoop`, however it was got.
    func future(on eventLoop: EventLoop) -> EventLoopFuture<Value> {
        switch self {
        case .fresh(let value), .stale(let value): return eventLoop.makeSucceededFuture(value)
        case .joined(let inFlight), .led(let inFlight): return inFlight
        }
    }
}

extension SingleFlightAnswer where Led == EventLoopFuture<(Value, SingleFlightRole)> {
    /// The outcome with how it was got, as one future on `eventLoop`. `joined` runs as soon as
    /// the lookup is known to wait for another's call (so waiters are counted while they wait).
    func outcome(on eventLoop: EventLoop, joined: () -> Void) -> EventLoopFuture<(Value, SingleFlightRole)> {
        switch self {
        case .fresh(let value), .stale(let value):
            return eventLoop.makeSucceededFuture((value, .remembered))
        case .joined(let inFlight):
            joined()
            return inFlight.map { ($0, .joined) }
        case .led(let led):
            return led
        }
    }
}
