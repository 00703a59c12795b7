import NIOConcurrencyHelpers

/// When the shared-state service works: from its `run()` until the first stop request (the
/// application's `shutdown()`, or the service group's graceful shutdown or cancellation),
/// once. `stopped()` waits until the work has ended; a `run()` that starts after a stop does
/// no work.
///
/// States and transitions:
/// - `idle` → `running` (`begin`), or → `finished` (a stop before any run).
/// - `running(stopRequested: false)` → `running(stopRequested: true)` (`requestStop`, which
///   wakes the run waiting in `untilStopRequested`).
/// - `running` → `finished` (`finish`, when the work has ended; wakes `stopped()`).
final class SharedStateLifecycle: Sendable {
    private enum State {
        case idle
        case running(
            stopRequested: Bool, runWaiter: CheckedContinuation<Void, Never>?,
            stopWaiters: [CheckedContinuation<Void, Never>])
        case finished
    }

    private let state = NIOLockedValueBox(State.idle)

    /// True when the caller is the one run that works: the first, and only before any stop.
    func begin() -> Bool {
        self.state.withLockedValue { state in
            switch state {
            case .idle:
                state = .running(stopRequested: false, runWaiter: nil, stopWaiters: [])
                return true
            case .running, .finished:
                return false
            }
        }
    }

    /// Returns once a stop was requested.
    func untilStopRequested() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = self.state.withLockedValue { state in
                switch state {
                case .running(stopRequested: false, runWaiter: nil, let stopWaiters):
                    state = .running(stopRequested: false, runWaiter: continuation, stopWaiters: stopWaiters)
                    return false
                case .running(stopRequested: false, runWaiter: .some, _):
                    preconditionFailure("untilStopRequested() waited for twice")
                case .idle, .running(stopRequested: true, _, _), .finished:
                    return true
                }
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Asks the work to stop; idempotent. Before any run, no run will work.
    func requestStop() {
        let waiter: CheckedContinuation<Void, Never>? = self.state.withLockedValue { state in
            switch state {
            case .idle:
                state = .finished
                return nil
            case .running(stopRequested: false, let runWaiter, let stopWaiters):
                state = .running(stopRequested: true, runWaiter: nil, stopWaiters: stopWaiters)
                return runWaiter
            case .running(stopRequested: true, _, _), .finished:
                return nil
            }
        }
        waiter?.resume()
    }

    /// The work has ended.
    func finish() {
        let waiters: [CheckedContinuation<Void, Never>] = self.state.withLockedValue { state in
            switch state {
            case .running(_, _, let stopWaiters):
                state = .finished
                return stopWaiters
            case .idle, .finished:
                state = .finished
                return []
            }
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the work has ended (at once when it never started).
    func stopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = self.state.withLockedValue { state in
                switch state {
                case .running(let stopRequested, let runWaiter, var stopWaiters):
                    stopWaiters.append(continuation)
                    state = .running(stopRequested: stopRequested, runWaiter: runWaiter, stopWaiters: stopWaiters)
                    return false
                case .idle, .finished:
                    return true
                }
            }
            if resumeNow { continuation.resume() }
        }
    }
}
