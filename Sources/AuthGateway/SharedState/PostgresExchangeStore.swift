import Foundation
import NIOCore

/// The exchange store shared by every instance on one PostgreSQL database
/// (docs/token-exchange.md, docs/shared-state.md): one token-endpoint call per (subject token,
/// route) across the fleet.
///
/// It is the refresh store's machinery instantiated for exchanges: the same table
/// (`auth_gateway_refresh_outcomes`, under digests of their own: `TokenDigest.exchange`), the
/// same claim and lease, the same `NOTIFY` wake-ups and safety-net polls, the same
/// `SharedFlightDecision`, the same AES-256-GCM sealing with the row's digest as authenticated
/// data, the same sweep. What differs is the outcome and how long it is kept: an exchanged
/// token until its `usableUntil` (so the row's `expires_at` is that, by the database's clock),
/// a refusal or a failure not at all (stored with no time left, for the waiters of that
/// flight only).
///
/// In front sits the process-local single flight: N requests on this instance make one
/// database claim, and a token learned from the database is remembered here as long as the
/// database keeps it. While the database is not usable, exchanges run as `LocalExchangeStore`
/// runs them.
final class PostgresExchangeStore: ExchangeStore {
    private let local: LocalSingleFlight<TokenDigest, ExchangeOutcome>
    let database: SharedStateDatabase
    let wakeups: RefreshWakeups
    let sealer: OutcomeSealer
    let clock: @Sendable () -> Double
    private let jobs: SharedStateJobs
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
        for key: TokenDigest, callTimeoutMilliseconds: Int, now: Double, eventLoop: EventLoop,
        call: @escaping () -> EventLoopFuture<ExchangeOutcome>
    ) -> EventLoopFuture<(ExchangeOutcome, SingleFlightRole)> {
        self.local.lookup(
            key, now: now, policy: LocalExchangeStore.policy, eventLoop: eventLoop, isCurrent: { $0.isUsable(at: now) }
        ) { flight in
            guard self.database.usesDatabase else { return self.leadLocally(flight, call: call) }
            let bound = NIOLoopBound(call, eventLoop: eventLoop)
            let job = SharedExchangeJob(
                digest: key, leaseMilliseconds: Int64(callTimeoutMilliseconds) + 1000, eventLoop: eventLoop,
                call: { eventLoop.flatSubmit { bound.value() } }, flight: flight,
                answer: eventLoop.makePromise(of: (ExchangeOutcome, SingleFlightRole).self))
            if !self.jobs.enqueue(.exchange(job), key: key) {
                // The shared-state service has stopped.
                job.answer.completeWith(self.leadLocally(flight, call: call))
            }
            return job.answer.futureResult
        }.outcome(on: eventLoop, joined: {})
    }

    /// The process-local copies only: the shared rows are sealed and keyed by digest, so they
    /// end with their `usableUntil` (docs/streams.md, "Known limits").
    func forget(where matches: (_ exchangedToken: String) -> Bool) -> Int {
        self.local.forget { _, outcome in
            if case .exchanged(let token, _) = outcome { return matches(token) }
            return false
        }
    }

    private func leadLocally(
        _ flight: LocalSingleFlight<TokenDigest, ExchangeOutcome>.Flight, call: () -> EventLoopFuture<ExchangeOutcome>
    ) -> EventLoopFuture<(ExchangeOutcome, SingleFlightRole)> {
        let clock = self.clock
        self.local.settle(flight, when: call(), failure: .unavailable, clock: clock) { $0.isUsable(at: clock()) }
        return flight.promise.futureResult.map { ($0, .led) }
    }

    /// The job of the shared-state service for one local leader: the shared flight, then the
    /// local flight's end and the leader's answer.
    func run(_ job: SharedExchangeJob) async {
        let (outcome, role) = await self.sharedOutcome(job)
        let remember = outcome.isUsable(at: self.clock())
        self.local.settle(job.flight, now: self.clock(), outcome: outcome, remember: remember)
        job.answer.succeed((outcome, role))
    }

    /// Claim, then lead, use a stored outcome or wait for another instance's — as
    /// `SharedFlightDecision` says (the refresh store's loop, `PostgresRefreshStore+SharedFlight`).
    /// A failed statement before the call falls back to calling from here.
    private func sharedOutcome(_ job: SharedExchangeJob) async -> (ExchangeOutcome, SingleFlightRole) {
        let me = UUID()
        let subscription = self.wakeups.subscribe(job.digest)
        defer { self.wakeups.unsubscribe(subscription) }
        let poll =
            self.wakeups.isListening ? self.pollMillisecondsWhileListening : PostgresRefreshStore.pollMilliseconds
        var decision = SharedFlightDecision(
            me: me, leaseMilliseconds: job.leaseMilliseconds, pollMilliseconds: poll,
            now: PostgresRefreshStore.nowMilliseconds())
        do {
            var step = decision.claimed(
                try await self.database.claim(job.digest, claimant: me, leaseMilliseconds: job.leaseMilliseconds),
                now: PostgresRefreshStore.nowMilliseconds())
            while true {
                switch step {
                case .lead:
                    return (await self.lead(job, claimant: me), .led)
                case .use(let sealed, let remaining, let role):
                    do throws(OutcomeSealer.OpenError) {
                        return (try self.open(sealed, for: job.digest, remainingMilliseconds: remaining), role)
                    } catch {
                        self.database.record(SharedStateFailure(operation: .decrypt, reason: error.description))
                        return (await Self.callTokenEndpoint(job), .led)
                    }
                case .wait(let milliseconds):
                    let wait =
                        self.wakeups.isListening
                        ? milliseconds : min(milliseconds, PostgresRefreshStore.pollMilliseconds)
                    await subscription.wait(milliseconds: wait, on: job.eventLoop)
                    if Task.isCancelled { return (.unavailable, .joined) }
                    step = decision.read(
                        try await self.database.read(job.digest), now: PostgresRefreshStore.nowMilliseconds())
                case .claim:
                    step = decision.claimed(
                        try await self.database.claim(
                            job.digest, claimant: me, leaseMilliseconds: job.leaseMilliseconds),
                        now: PostgresRefreshStore.nowMilliseconds())
                case .giveUp:
                    return (.unavailable, .joined)
                }
            }
        } catch {
            if Task.isCancelled { return (.unavailable, .joined) }
            return (await Self.callTokenEndpoint(job), .led)
        }
    }

    /// This instance holds the lease: call, then store the outcome for every instance — an
    /// exchanged token until its `usableUntil`, anything else with no time left. When another
    /// outcome was stored first (the lease had ended), that one is the answer.
    private func lead(_ job: SharedExchangeJob, claimant: UUID) async -> ExchangeOutcome {
        let outcome = await Self.callTokenEndpoint(job)
        var keep: Int64 = 0
        if case .exchanged(_, let usableUntil) = outcome {
            keep = max(0, Int64((usableUntil - self.clock()) * 1000))
        }
        do {
            let sealed = self.sealer.seal(document: Self.encode(outcome), for: job.digest)
            if try await self.database.settle(
                job.digest, claimant: claimant, sealedOutcome: sealed, keepMilliseconds: keep)
            {
                return outcome
            }
            guard let row = try await self.database.read(job.digest), let stored = row.sealedOutcome,
                let first = try? self.open(stored, for: job.digest, remainingMilliseconds: row.remainingMilliseconds)
            else { return outcome }
            return first
        } catch {
            return outcome
        }
    }

    private static func callTokenEndpoint(_ job: SharedExchangeJob) async -> ExchangeOutcome {
        (try? await job.call().get()) ?? .unavailable
    }

    /// `{"o":"exchanged","t":…}`, `{"o":"refused","e":…}` or `{"o":"unavailable"}`. How long a
    /// token lasts is not sealed: it is the row's `expires_at`, read as milliseconds left by the
    /// database's clock, so the instances' clocks need not agree.
    static func encode(_ outcome: ExchangeOutcome) -> JSONValue {
        switch outcome {
        case .exchanged(let token, _): return ["o": "exchanged", "t": .string(token)]
        case .refused(let code): return ["o": "refused", "e": .string(code)]
        case .unavailable: return ["o": "unavailable"]
        }
    }

    func open(
        _ sealed: [UInt8], for digest: TokenDigest, remainingMilliseconds: Int64
    ) throws(OutcomeSealer.OpenError) -> ExchangeOutcome {
        let document = try self.sealer.openDocument(sealed, for: digest)
        switch document["o"]?.stringValue {
        case "exchanged":
            guard let token = document["t"]?.stringValue else { throw OutcomeSealer.OpenError(reason: .unreadable) }
            return .exchanged(token: token, usableUntil: self.clock() + Double(remainingMilliseconds) / 1000)
        case "refused":
            guard let code = document["e"]?.stringValue else { throw OutcomeSealer.OpenError(reason: .unreadable) }
            return .refused(code: code)
        case "unavailable":
            return .unavailable
        default:
            throw OutcomeSealer.OpenError(reason: .unreadable)
        }
    }
}

/// One local leader's exchange, queued for the shared-state service.
struct SharedExchangeJob: Sendable {
    let digest: TokenDigest
    let leaseMilliseconds: Int64
    let eventLoop: EventLoop
    /// Makes the token-endpoint call on `eventLoop`.
    let call: @Sendable () -> EventLoopFuture<ExchangeOutcome>
    let flight: LocalSingleFlight<TokenDigest, ExchangeOutcome>.Flight
    /// The leader's answer (the local joiners wait on `flight`).
    let answer: EventLoopPromise<(ExchangeOutcome, SingleFlightRole)>
}
