import Foundation
import NIOCore

/// The refresh store shared by every instance on one PostgreSQL database
/// (docs/shared-state.md).
///
/// In front of the database sits the process-local single flight: N concurrent requests on
/// this instance make one database claim, and an outcome learned from the database is then
/// remembered here until the database's copy expires, so a late old pair on this instance is
/// answered without a statement. Only the local leader of a flight touches the database, as a
/// job of the shared-state service (refreshes are rare; requests that do not refresh never get
/// here).
///
/// While the database is not usable (starting, failed until a probe succeeds, or the service
/// stopped) a refresh runs exactly as `LocalRefreshStore` does; a statement that fails or
/// times out mid-flight falls back the same way for that request. A database outage alone
/// never turns a request into a 5xx.
final class PostgresRefreshStore: RefreshStore {
    private let local: LocalSingleFlight<TokenDigest, RefreshOutcome>
    let database: SharedStateDatabase
    let wakeups: RefreshWakeups
    let sealer: OutcomeSealer
    let clock: @Sendable () -> Double
    private let jobs: SharedStateJobs

    /// How long a waiter sleeps between reads when no notification comes: ≤ 50 ms without
    /// the LISTEN connection (docs/shared-state.md), longer as a safety net when notifications
    /// work.
    static let pollMilliseconds: Int64 = 50
    let pollMillisecondsWhileListening: Int64

    init(
        database: SharedStateDatabase, wakeups: RefreshWakeups, jobs: SharedStateJobs, sealer: OutcomeSealer,
        capacity: Int = 100_000, pollMillisecondsWhileListening: Int64 = 250, clock: @escaping @Sendable () -> Double
    ) {
        self.local = LocalSingleFlight(capacity: capacity)
        self.database = database
        self.wakeups = wakeups
        self.jobs = jobs
        self.sealer = sealer
        self.pollMillisecondsWhileListening = pollMillisecondsWhileListening
        self.clock = clock
    }

    func outcome(
        for key: TokenDigest, graceSeconds: Int, callTimeoutMilliseconds: Int, now: Double, eventLoop: EventLoop,
        joined: @escaping @Sendable () -> Void,
        call: @escaping () -> EventLoopFuture<RefreshOutcome>
    ) -> EventLoopFuture<(RefreshOutcome, SingleFlightRole)> {
        let policy = LocalSingleFlight<TokenDigest, RefreshOutcome>.Policy(freshSeconds: Double(graceSeconds))
        return self.local.lookup(key, now: now, policy: policy, eventLoop: eventLoop) { flight in
            guard self.database.usesDatabase else {
                return self.leadLocally(flight, graceSeconds: graceSeconds, call: call)
            }
            let bound = NIOLoopBound(call, eventLoop: eventLoop)
            let request = SharedFlightRequest(
                digest: key, graceSeconds: graceSeconds, leaseMilliseconds: Int64(callTimeoutMilliseconds) + 1000,
                eventLoop: eventLoop,
                joined: joined
            ) {
                eventLoop.flatSubmit { bound.value() }
            }
            let answer = eventLoop.makePromise(of: (RefreshOutcome, SingleFlightRole).self)
            let job = SharedRefreshJob(request: request, flight: flight, answer: answer)
            if !self.jobs.enqueue(.refresh(job), key: key) {
                // The shared-state service has stopped.
                answer.completeWith(self.leadLocally(flight, graceSeconds: graceSeconds, call: call))
            }
            return answer.futureResult
        }.outcome(on: eventLoop, joined: joined)
    }

    /// The refresh as `LocalRefreshStore` makes it: the database is not in use.
    private func leadLocally(
        _ flight: LocalSingleFlight<TokenDigest, RefreshOutcome>.Flight, graceSeconds: Int,
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

    /// The job of the shared-state service for one local leader: the shared flight, then the
    /// local flight's end and the leader's answer; last, off the request's path, the outcome
    /// of a refresh whose claim failed here is stored for the other instances.
    func run(_ job: SharedRefreshJob) async {
        let (answer, publishAs) = await self.sharedOutcome(job.request)
        self.settleLocally(job.flight, answer, graceSeconds: job.request.graceSeconds)
        job.answer.succeed((answer.outcome, answer.role))
        if let claimant = publishAs {
            await self.publishAfterFailedClaim(answer.outcome, request: job.request, claimant: claimant)
        }
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
}

/// One local leader's flight, queued for the shared-state service.
struct SharedRefreshJob: Sendable {
    let request: SharedFlightRequest
    let flight: LocalSingleFlight<TokenDigest, RefreshOutcome>.Flight
    /// The leader's answer (the local joiners wait on `flight`).
    let answer: EventLoopPromise<(RefreshOutcome, SingleFlightRole)>
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
