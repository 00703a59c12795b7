import NIOConcurrencyHelpers
import NIOCore

/// A one-way gate a scripted server waits on until the test opens it: orders "the client has
/// seen X" before "the server does Y" without a fixed delay.
package final class Latch: Sendable {
    private let state = NIOLockedValueBox<(isOpen: Bool, waiting: [EventLoopPromise<Void>])>((false, []))

    package init() {}

    package func open() {
        let waiting = self.state.withLockedValue { state in
            defer { state = (true, []) }
            return state.waiting
        }
        for promise in waiting { promise.succeed() }
    }

    /// Succeeds on `eventLoop` once the latch is open.
    package func future(on eventLoop: EventLoop) -> EventLoopFuture<Void> {
        self.state.withLockedValue { state in
            if state.isOpen { return eventLoop.makeSucceededVoidFuture() }
            let promise = eventLoop.makePromise(of: Void.self)
            state.waiting.append(promise)
            return promise.futureResult
        }
    }
}
