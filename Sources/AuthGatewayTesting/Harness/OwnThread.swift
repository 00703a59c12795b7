import Foundation

/// Runs blocking work (waiting for a child process) on a new thread and awaits its result.
/// The cooperative pool has as many threads as cores — two here — so a test that held one of
/// them for seconds (initdb, a `pg_sleep`) starved the timing-sensitive tests beside it: their
/// next step after an `await` ran seconds late.
package func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

package func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// Runs CPU-heavy work (thousands of parser mutations) off the cooperative pool, one such job
/// at a time: on the pool, two of them stalled every other test; each on a thread of its own,
/// fourteen of them took the two cores from the gateways the other tests time. Expectations
/// are recorded by the caller, in the test's task, from what `body` returns.
package func onCPUHeavyQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        cpuHeavyQueue.async { continuation.resume(returning: body()) }
    }
}

private let cpuHeavyQueue = DispatchQueue(label: "auth-gateway.tests.cpu-heavy")
