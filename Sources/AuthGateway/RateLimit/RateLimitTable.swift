import NIOConcurrencyHelpers

/// The buckets of one limit: its keys' TATs (`TokenBucket`) in a bounded `ClockCache`, sharded by key
/// hash so event loops rarely meet on a lock (docs/architecture.md: no global lock on the request path).
///
/// One table per limit, shared by every loop: a key's burst holds whatever loop its requests
/// land on. Each access holds one shard's lock for one dictionary operation and some integer
/// arithmetic. With `sharedState`, each shard also counts what it admitted per key since the
/// last sync (`drainUsage`), and takes the other instances' consumption (`debit`).
final class RateLimitTable: Sendable {
    let configuration: RateLimitConfiguration
    let bucket: TokenBucket
    /// Whether admissions are counted for the shared-state sync.
    let tracksUsage: Bool
    private let shards: Sharded<Shard>

    struct Shard {
        var buckets: ClockCache<RateLimitKey, Int128>
        /// Requests admitted per key since the last `drainUsage` (only with `tracksUsage`).
        var unsynced: [RateLimitKey: Int] = [:]
    }

    init(configuration: RateLimitConfiguration, tracksUsage: Bool = false) {
        self.configuration = configuration
        self.bucket = TokenBucket(requestsPerSecond: configuration.requestsPerSecond, burst: configuration.burst)
        self.tracksUsage = tracksUsage
        self.shards = Sharded(capacity: configuration.maxKeys, maximumCount: 64) {
            Shard(buckets: ClockCache(capacity: $0))
        }
    }

    var name: String { self.configuration.name }

    /// Whether `other` counts requests the same way (a reload then keeps this table). The
    /// routes may differ: they choose which requests reach the table, not how it counts.
    func countsLike(_ other: RateLimitConfiguration) -> Bool {
        let mine = self.configuration
        return mine.name == other.name && mine.key == other.key && mine.requestsPerSecond == other.requestsPerSecond
            && mine.burst == other.burst
            && mine.maxKeys == other.maxKeys
    }

    /// One request for `key` at `now` (nanoseconds of a monotonic clock); an admitted request
    /// is counted, a refused one is not.
    func consume(_ key: RateLimitKey, now: UInt64) -> TokenBucket.Outcome {
        self.shards.withShard(for: key) { shard in
            let outcome = shard.buckets.update(key) { tat in
                let outcome = self.bucket.consume(tat: tat ?? TokenBucket.full, now: now)
                guard case .admitted(let next, _, _) = outcome else { return (outcome, nil) }
                return (outcome, next)
            }
            if self.tracksUsage, case .admitted = outcome { shard.unsynced[key, default: 0] += 1 }
            return outcome
        }
    }

    /// Gives back a request `consume` admitted (another limit refused it).
    func refund(_ key: RateLimitKey) {
        self.shards.withShard(for: key) { shard in
            guard let tat = shard.buckets.peek(key) else { return }
            shard.buckets.set(key, self.bucket.refund(tat: tat))
            if self.tracksUsage, let count = shard.unsynced[key] {
                shard.unsynced[key] = count > 1 ? count - 1 : nil
            }
        }
    }

    /// Debits `requests` another instance admitted for `key` at `consumedAt` (nanoseconds of
    /// this process's monotonic clock). Not counted as this instance's usage.
    func debit(_ key: RateLimitKey, requests: Int, consumedAt: UInt64) {
        guard requests > 0 else { return }
        self.shards.withShard(for: key) { shard in
            let tat = shard.buckets.peek(key) ?? TokenBucket.full
            shard.buckets.set(key, self.bucket.debit(tat: tat, requests: requests, now: consumedAt))
        }
    }

    /// What was admitted per key since the last call, and starts counting afresh.
    func drainUsage() -> [(key: RateLimitKey, requests: Int)] {
        guard self.tracksUsage else { return [] }
        var usage: [(key: RateLimitKey, requests: Int)] = []
        self.shards.forEachShard { shard in
            guard !shard.unsynced.isEmpty else { return }
            for (key, requests) in shard.unsynced { usage.append((key, requests)) }
            shard.unsynced.removeAll(keepingCapacity: true)
        }
        return usage
    }

    /// Keys held (for tests and diagnostics; visits every shard).
    var count: Int {
        var total = 0
        self.shards.forEachShard { total += $0.buckets.count }
        return total
    }
}

extension RateLimitTable.Shard: Sendable {}
