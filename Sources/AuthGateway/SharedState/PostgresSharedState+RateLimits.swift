import Foundation
import NIOCore

/// The rate-limit sync loop (SPEC §4.12): every `rateLimitSyncMilliseconds`, one statement
/// sends what this instance admitted per key since the last sync and brings back what the
/// others admitted, which is debited from the local buckets. Not per request: requests only
/// touch their local buckets.
///
/// While the database is out of use, usage is drained and dropped (each instance enforces
/// its limits alone, and consumption of an outage is not replayed later).
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
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(interval))
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
                    instance: state.instance, sequence: state.nextSequence(), usage: usage, retentionSeconds: limiter.usageRetentionSeconds,
                    watermarks: state.watermarks
                )
                limiter.debit(state.accept(rows), now: NIODeadline.now().uptimeNanoseconds)
                if SharedStateDatabase.monotonicSeconds() >= nextSweep {
                    try? await self.database.sweepRateLimits()
                    nextSweep = SharedStateDatabase.monotonicSeconds() + sweepInterval
                }
            } catch {
                // Recorded by the database (the probe brings it back); the schema is checked
                // again then, in case the database was restored empty.
                schemaReady = false
            }
        }
    }
}
