import NIOConcurrencyHelpers

/// The buckets of one limit: its keys' TATs (`TokenBucket`) in a bounded LRU, sharded by key
/// hash so event loops rarely meet on a lock (DESIGN.md: no global lock on the request path).
///
/// One table per limit, shared by every loop: a key's burst holds whatever loop its requests
/// land on. Each access holds one shard's lock for one dictionary operation and some integer
/// arithmetic.
final class RateLimitTable: Sendable {
    let configuration: RateLimitConfiguration
    let bucket: TokenBucket
    private let shards: Sharded<LRUCache<RateLimitKey, Int128>>

    init(configuration: RateLimitConfiguration) {
        self.configuration = configuration
        self.bucket = TokenBucket(requestsPerSecond: configuration.requestsPerSecond, burst: configuration.burst)
        self.shards = Sharded(capacity: configuration.maxKeys, maximumCount: 64) { LRUCache(capacity: $0) }
    }

    var name: String { self.configuration.name }

    /// Whether `other` counts requests the same way (a reload then keeps this table). The
    /// routes may differ: they choose which requests reach the table, not how it counts.
    func countsLike(_ other: RateLimitConfiguration) -> Bool {
        let mine = self.configuration
        return mine.name == other.name && mine.key == other.key && mine.requestsPerSecond == other.requestsPerSecond && mine.burst == other.burst
            && mine.maxKeys == other.maxKeys
    }

    /// One request for `key` at `now` (nanoseconds of a monotonic clock); an admitted request
    /// is counted, a refused one is not.
    func consume(_ key: RateLimitKey, now: UInt64) -> TokenBucket.Outcome {
        self.shards.withShard(for: key) { entries in
            let tat = entries.get(key) ?? TokenBucket.full
            let outcome = self.bucket.consume(tat: tat, now: now)
            if case .admitted(let next, _, _) = outcome {
                entries.set(key, next)
            }
            return outcome
        }
    }

    /// Gives back a request `consume` admitted (another limit refused it).
    func refund(_ key: RateLimitKey) {
        self.shards.withShard(for: key) { entries in
            guard let tat = entries.peek(key) else { return }
            entries.set(key, self.bucket.refund(tat: tat))
        }
    }

    /// Keys held (for tests and diagnostics; visits every shard).
    var count: Int {
        var total = 0
        self.shards.forEachShard { total += $0.count }
        return total
    }
}
