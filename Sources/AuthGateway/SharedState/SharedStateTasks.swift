import NIOConcurrencyHelpers
import NIOCore

/// The tasks requests start to reach the shared-state database (a DPoP proof's record, an
/// introspection answer's read and store): `stop()` cancels and awaits them, so none
/// outlives the application or completes a promise on a stopped event loop. Each is bounded
/// by `postgres.timeoutMilliseconds` anyway (`SharedStateDatabase.run`).
final class SharedStateTasks: Sendable {
    private struct State {
        var next = 0
        var running: [Int: Task<Void, Never>] = [:]
        var stopped = false
    }

    private let state = NIOLockedValueBox(State())

    /// Runs `body` in a task `stop()` can end; false (and nothing runs) once stopped.
    @discardableResult
    func start(_ body: @escaping @Sendable () async -> Void) -> Bool {
        self.state.withLockedValue { state in
            guard !state.stopped else { return false }
            let id = state.next
            state.next += 1
            state.running[id] = Task {
                await body()
                _ = self.state.withLockedValue { $0.running.removeValue(forKey: id) }
            }
            return true
        }
    }

    var isStopped: Bool { self.state.withLockedValue { $0.stopped } }

    func stop() async {
        let running = self.state.withLockedValue { state in
            state.stopped = true
            return Array(state.running.values)
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }
}
