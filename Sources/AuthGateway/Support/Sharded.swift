import NIOConcurrencyHelpers

/// Process-wide state split into independently locked shards, chosen by a key's hash.
///
/// This is how the caches and single-flight tables are shared by all event loops
/// (docs/architecture.md: per-loop copies would break "one verification / one fetch / one refresh
/// for N concurrent requests"). Each access holds one shard's lock for a dictionary operation —
/// never across I/O — so loops rarely meet on the same lock, and no access takes a global lock.
final class Sharded<Shard: Sendable>: Sendable {
    private let shards: [NIOLockedValueBox<Shard>]

    init(count: Int = 16, make: () -> Shard) {
        self.shards = (0..<max(1, count)).map { _ in NIOLockedValueBox(make()) }
    }

    /// Shards of a bounded structure: `capacity` is split so the shards add up to exactly it
    /// (at most `maximumCount` shards, and never a shard of size 0).
    ///
    /// A shard holds at least `minimumShardCapacity` entries (one shard below that): each
    /// shard evicts on its own, so a small bound split `capacity` ways — a profile cache of
    /// `maxEntries: 3` as three shards of one — evicted keys while holding fewer than its
    /// bound, whenever two keys hashed to one shard. With shards of a thousand entries or
    /// more, what the split evicts early is a rounding error of the bound.
    init(capacity: Int, maximumCount: Int = 16, minimumShardCapacity: Int = 1024, make: (Int) -> Shard) {
        let count = max(1, min(maximumCount, capacity / max(1, minimumShardCapacity)))
        self.shards = (0..<count).map { index in
            NIOLockedValueBox(make(capacity / count + (index < capacity % count ? 1 : 0)))
        }
    }

    /// Runs `body` with the shard responsible for `key`, under that shard's lock.
    @inline(__always)
    func withShard<Key: Hashable, Result>(for key: Key, _ body: (inout Shard) throws -> Result) rethrows -> Result {
        let index = Int(UInt(bitPattern: key.hashValue) % UInt(self.shards.count))
        return try self.shards[index].withLockedValue(body)
    }

    /// Visits every shard in turn (for counts and clearing; not for the request path).
    func forEachShard(_ body: (inout Shard) -> Void) {
        for shard in self.shards { shard.withLockedValue(body) }
    }
}
