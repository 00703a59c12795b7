import Foundation
import NIOCore

/// One local leader's flight through the shared table: claim, then lead (call the auth
/// service and settle), use a stored outcome, or wait for another instance's — as
/// `SharedFlightDecision` says. Any failed statement before the call falls back to calling
/// the auth service from here (the process-local behaviour); a failed settle still answers
/// with the outcome this instance got.
extension PostgresRefreshStore {
    /// The answer, and the claimant under which to store it once answered (a refresh whose
    /// claim failed here: `publishAfterFailedClaim`), if any.
    func sharedOutcome(_ request: SharedFlightRequest) async -> (SharedFlightAnswer, publishAs: UUID?) {
        let me = UUID()
        let subscription = self.wakeups.subscribe(request.digest)
        defer { self.wakeups.unsubscribe(subscription) }
        let poll = self.wakeups.isListening ? self.pollMillisecondsWhileListening : Self.pollMilliseconds
        var decision = SharedFlightDecision(
            me: me, leaseMilliseconds: request.leaseMilliseconds, pollMilliseconds: poll, now: Self.nowMilliseconds())
        var waited = false
        do {
            var step = decision.claimed(
                try await self.database.claim(
                    request.digest, claimant: me, leaseMilliseconds: request.leaseMilliseconds),
                now: Self.nowMilliseconds()
            )
            while true {
                switch step {
                case .lead:
                    return (await self.lead(request, claimant: me), nil)
                case .use(let sealed, let remaining, let role):
                    do throws(OutcomeSealer.OpenError) {
                        let outcome = try self.sealer.open(sealed, for: request.digest)
                        return (SharedFlightAnswer(outcome: outcome, role: role, remainingMilliseconds: remaining), nil)
                    } catch {
                        self.database.record(SharedStateFailure(operation: .decrypt, reason: error.description))
                        return (await self.fallback(request), nil)
                    }
                case .wait(let milliseconds):
                    if !waited {
                        waited = true
                        request.joined()
                    }
                    // Polled at the short interval again as soon as LISTEN is lost mid-wait.
                    let wait = self.wakeups.isListening ? milliseconds : min(milliseconds, Self.pollMilliseconds)
                    await subscription.wait(milliseconds: wait, on: request.eventLoop)
                    if Task.isCancelled { return (Self.stopping, nil) }
                    step = decision.read(try await self.database.read(request.digest), now: Self.nowMilliseconds())
                case .claim:
                    step = decision.claimed(
                        try await self.database.claim(
                            request.digest, claimant: me, leaseMilliseconds: request.leaseMilliseconds),
                        now: Self.nowMilliseconds()
                    )
                case .giveUp:
                    return (SharedFlightAnswer(outcome: .unavailable, role: .joined, remainingMilliseconds: 0), nil)
                }
            }
        } catch {
            // Stopping (shutdown cancelled the flights): no auth-service call whose outcome
            // nobody would keep.
            if Task.isCancelled { return (Self.stopping, nil) }
            // Counted and logged by the database; this request goes on as if alone.
            let answer = await self.fallback(request)
            if error.operation == .claim, case .refreshed = answer.outcome {
                return (answer, publishAs: me)
            }
            return (answer, nil)
        }
    }

    /// The answer of a flight the shared-state service's shutdown ended.
    private static let stopping = SharedFlightAnswer(outcome: .unavailable, role: .joined, remainingMilliseconds: 0)

    /// A claim that failed here (a timeout, a lost connection) may still have been committed:
    /// then instances waiting on it would take over when the lease ends and redeem an old
    /// refresh token this call has already rotated. Storing this outcome under the claim
    /// answers them; when the claim never landed, the statement stores nothing. Off the
    /// request's path (run after the answer), and only for new tokens: a refusal could be the
    /// auth service refusing a token another instance redeemed first.
    func publishAfterFailedClaim(_ outcome: RefreshOutcome, request: SharedFlightRequest, claimant: UUID) async {
        let sealed = self.sealer.seal(outcome, for: request.digest)
        let keep = Int64(request.graceSeconds) * 1000
        _ = try? await self.database.settle(
            request.digest, claimant: claimant, sealedOutcome: sealed, keepMilliseconds: keep)
    }

    /// This instance holds the lease: call, then store the outcome for every instance. When
    /// another outcome was stored first (the lease had ended and another instance took over),
    /// that one is the answer everywhere.
    private func lead(_ request: SharedFlightRequest, claimant: UUID) async -> SharedFlightAnswer {
        let outcome = await Self.callAuthService(request)
        let keep: Int64 = outcome == .unavailable ? 0 : Int64(request.graceSeconds) * 1000
        let own = SharedFlightAnswer(outcome: outcome, role: .led, remainingMilliseconds: keep)
        do {
            let sealed = self.sealer.seal(outcome, for: request.digest)
            if try await self.database.settle(
                request.digest, claimant: claimant, sealedOutcome: sealed, keepMilliseconds: keep)
            {
                return own
            }
            guard let row = try await self.database.read(request.digest), let stored = row.sealedOutcome,
                let first = try? self.sealer.open(stored, for: request.digest)
            else { return own }
            return SharedFlightAnswer(outcome: first, role: .led, remainingMilliseconds: row.remainingMilliseconds)
        } catch {
            // Not stored: this instance answers with its own outcome; waiters elsewhere take
            // over when the lease ends.
            return own
        }
    }

    private func fallback(_ request: SharedFlightRequest) async -> SharedFlightAnswer {
        SharedFlightAnswer(
            outcome: await Self.callAuthService(request), role: .led,
            remainingMilliseconds: Int64(request.graceSeconds) * 1000)
    }

    private static func callAuthService(_ request: SharedFlightRequest) async -> RefreshOutcome {
        (try? await request.call().get()) ?? .unavailable
    }

    static func nowMilliseconds() -> Int64 { Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000) }
}
