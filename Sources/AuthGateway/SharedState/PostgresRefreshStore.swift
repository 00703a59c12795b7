import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The refresh store shared by every instance on one PostgreSQL database (SPEC §4.8).
///
/// In front of the database sits the process-local single flight: N concurrent requests on
/// this instance make one database claim, and an outcome learned from the database is then
/// remembered here until the database's copy expires, so a late old pair on this instance is
/// answered without a statement. Only the local leader of a flight touches the database, in a
/// task of its own (refreshes are rare; requests that do not refresh never get here).
///
/// While the database is not usable (starting, or failed until a probe succeeds) a refresh
/// runs exactly as `LocalRefreshStore` does; a statement that fails or times out mid-flight
/// falls back the same way for that request. A database outage alone never turns a request
/// into a 5xx.
final class PostgresRefreshStore: RefreshStore {
    private let local: LocalSingleFlight<TokenDigest, RefreshOutcome>
    let database: SharedStateDatabase
    let wakeups: RefreshWakeups
    let sealer: OutcomeSealer
    let clock: @Sendable () -> Double
    private let flights = NIOLockedValueBox<FlightTasks>(FlightTasks())

    /// How long a waiter sleeps between reads when no notification comes: ≤ 50 ms without
    /// the LISTEN connection (SPEC §4.8), longer as a safety net when notifications work.
    static let pollMilliseconds: Int64 = 50
    let pollMillisecondsWhileListening: Int64

    init(
        database: SharedStateDatabase, wakeups: RefreshWakeups, sealer: OutcomeSealer, capacity: Int = 100_000,
        pollMillisecondsWhileListening: Int64 = 250, clock: @escaping @Sendable () -> Double
    ) {
        self.local = LocalSingleFlight(capacity: capacity)
        self.database = database
        self.wakeups = wakeups
        self.sealer = sealer
        self.pollMillisecondsWhileListening = pollMillisecondsWhileListening
        self.clock = clock
    }

    func outcome(
        for key: TokenDigest, graceSeconds: Int, callTimeoutMilliseconds: Int, now: Double, eventLoop: EventLoop,
        joined: @escaping @Sendable () -> Void,
        call: @escaping () -> EventLoopFuture<RefreshOutcome>
    ) -> EventLoopFuture<(RefreshOutcome, SingleFlightRole)> {
        switch self.local.lookup(key, now: now, policy: .init(freshSeconds: Double(graceSeconds)), eventLoop: eventLoop)
        {
        case .fresh(let outcome), .stale(let outcome, _):
            return eventLoop.makeSucceededFuture((outcome, .remembered))
        case .joined(let inFlight):
            joined()
            return inFlight.map { ($0, .joined) }
        case .lead(let flight):
            guard self.database.usesDatabase, !self.isStopped else {
                return self.leadLocally(flight, graceSeconds: graceSeconds, eventLoop: eventLoop, call: call)
            }
            let result = eventLoop.makePromise(of: (RefreshOutcome, SingleFlightRole).self)
            let call = NIOLoopBound(call, eventLoop: eventLoop)
            let request = SharedFlightRequest(
                digest: key, graceSeconds: graceSeconds, leaseMilliseconds: Int64(callTimeoutMilliseconds) + 1000,
                eventLoop: eventLoop,
                joined: joined
            ) {
                eventLoop.flatSubmit { call.value() }
            }
            self.startTask { store in
                let answer = await store.sharedOutcome(request)
                store.settleLocally(flight, answer, graceSeconds: graceSeconds)
                result.succeed((answer.outcome, answer.role))
            }
            return result.futureResult
        }
    }

    /// The refresh as `LocalRefreshStore` makes it: the database is not in use.
    private func leadLocally(
        _ flight: LocalSingleFlight<TokenDigest, RefreshOutcome>.Flight, graceSeconds: Int, eventLoop: EventLoop,
        call: () -> EventLoopFuture<RefreshOutcome>
    ) -> EventLoopFuture<(RefreshOutcome, SingleFlightRole)> {
        call().whenComplete { result in
            let outcome = (try? result.get()) ?? .unavailable
            self.settleLocally(
                flight,
                SharedFlightAnswer(outcome: outcome, role: .led, remainingMilliseconds: Int64(graceSeconds) * 1000),
                graceSeconds: graceSeconds)
        }
        return flight.promise.futureResult.map { ($0, .led) }
    }

    /// Ends the local flight, remembering a definite outcome for as long as the database
    /// keeps it (the grace period started when it was stored, perhaps by another instance).
    private func settleLocally(
        _ flight: LocalSingleFlight<TokenDigest, RefreshOutcome>.Flight, _ answer: SharedFlightAnswer, graceSeconds: Int
    ) {
        let remaining = Double(answer.remainingMilliseconds) / 1000
        let remember = answer.outcome != .unavailable && remaining > 0
        let storedAt = self.clock() - max(0, Double(graceSeconds) - remaining)
        self.local.settle(flight, now: storedAt, outcome: answer.outcome, remember: remember)
    }

    // MARK: Tasks

    private struct FlightTasks {
        var next = 0
        var running: [Int: Task<Void, Never>] = [:]
        var stopped = false
    }

    /// Runs `body` in a task that `stop()` can end.
    private func startTask(_ body: @escaping @Sendable (PostgresRefreshStore) async -> Void) {
        self.flights.withLockedValue { tasks in
            let id = tasks.next
            tasks.next += 1
            tasks.running[id] = Task {
                await body(self)
                _ = self.flights.withLockedValue { $0.running.removeValue(forKey: id) }
            }
        }
    }

    /// Cancels the flights still running (each then answers from its own call or
    /// "unavailable") and waits for them.
    func stop() async {
        let running = self.flights.withLockedValue { tasks in
            tasks.stopped = true
            return Array(tasks.running.values)
        }
        for task in running { task.cancel() }
        self.wakeups.wakeAll()
        for task in running { await task.value }
    }

    private var isStopped: Bool { self.flights.withLockedValue { $0.stopped } }
}

/// One local leader's request to the shared table.
struct SharedFlightRequest: Sendable {
    let digest: TokenDigest
    let graceSeconds: Int
    let leaseMilliseconds: Int64
    let eventLoop: EventLoop
    /// Said once when this instance starts waiting for another instance's call.
    let joined: @Sendable () -> Void
    /// Makes the auth-service call on `eventLoop`.
    let call: @Sendable () -> EventLoopFuture<RefreshOutcome>
}

/// How a shared flight ended for this instance.
struct SharedFlightAnswer: Sendable, Equatable {
    let outcome: RefreshOutcome
    let role: SingleFlightRole
    /// How much longer the outcome is kept (by the database's clock).
    let remainingMilliseconds: Int64
}
