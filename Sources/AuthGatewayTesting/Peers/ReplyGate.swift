import NIOConcurrencyHelpers
import NIOCore

import AuthGatewayDemo
import AuthGateway

/// Holds a scripted service's answers until the test releases them: concurrent requests can be
/// parked on one call and let go only once every one of them is provably waiting, instead of
/// hoping that a fixed delay is long enough.
package final class ReplyGate: Sendable {
    private let state = NIOLockedValueBox<(holding: Bool, held: [(EventLoopPromise<SimpleResponse>, SimpleResponse)])>(
        (false, []))

    package init(holding: Bool = false) {
        self.state.withLockedValue { $0.holding = holding }
    }

    /// From now on, answers wait for `release()`.
    package func hold() { self.state.withLockedValue { $0.holding = true } }

    /// Sends every held answer and stops holding.
    package func release() {
        let held = self.state.withLockedValue { state in
            defer { state = (false, []) }
            return state.held
        }
        for (promise, response) in held { promise.succeed(response) }
    }

    /// Answers held so far.
    package var heldCount: Int { self.state.withLockedValue { $0.held.count } }

    /// `response` at once, or when released if the gate is holding.
    package func pass(_ response: SimpleResponse, on eventLoop: EventLoop) -> EventLoopFuture<SimpleResponse> {
        self.state.withLockedValue { state in
            guard state.holding else { return eventLoop.makeSucceededFuture(response) }
            let promise = eventLoop.makePromise(of: SimpleResponse.self)
            state.held.append((promise, response))
            return promise.futureResult
        }
    }
}
