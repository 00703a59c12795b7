import Foundation
import NIOCore

/// The rate-limit sync loop (docs/rate-limits.md): every `rateLimitSyncMilliseconds`, one statement
/// sends what this instance admitted per key since the last sync and brings back what the
/// others admitted, which is debited from the local buckets. Not per request: requests only
/// touch their local buckets.
///
/// While the database is out of use, usage is drained and dropped (each instance enforces
/// its limits alone, and consumption of an outage is not replayed later). A failed sync is
/// counted (`rate_limit_sync`) and retried with a backoff up to 5 s, dropping usage meanwhile.
extension PostgresSharedState {
    /// The limiter whose tables are synced (the current configuration's; nil without limits).
    func attachRateLimiter(_ limiter: RateLimiter?) {
        self.rateLimiter.withLockedValue { $0 = limiter }
    }

    func syncRateLimits() async {
        var state = RateLimitSyncState(instance: UUID())
        var schemaReady = false
        let interval = Int64(self.configuration.rateLimitSyncMilliseconds)
        let sweepInterval = Double(self.configuration.sweepIntervalSeconds)
        var nextSweep = SharedStateDatabase.monotonicSeconds() + sweepInterval
        var delay = interval
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(delay))
            guard let limiter = self.rateLimiter.withLockedValue({ $0 }) else { continue }
            let usage = RateLimitSyncState.merge(limiter.drainUsage())
            guard self.database.usesDatabase else {
                schemaReady = false
                continue
            }
            do {
                if !schemaReady {
                    try await self.database.ensureRateLimitSchema()
                    schemaReady = true
                }
                let rows = try await self.database.syncRateLimits(
                    instance: state.instance, sequence: state.nextSequence(), usage: usage,
                    retentionSeconds: limiter.usageRetentionSeconds,
                    watermarks: state.watermarks
                )
                limiter.debit(state.accept(rows), now: NIODeadline.now().uptimeNanoseconds)
                delay = interval
                if SharedStateDatabase.monotonicSeconds() >= nextSweep {
                    try? await self.database.sweepRateLimits()
                    nextSweep = SharedStateDatabase.monotonicSeconds() + sweepInterval
                }
            } catch {
                // Counted and logged by the database; the schema is checked again, in case
                // the database was restored empty.
                schemaReady = false
                delay = min(max(delay * 2, interval), 5000)
            }
        }
    }
}
