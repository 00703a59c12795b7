import NIOCore

/// Sessions kept in this process (docs/browser-sign-in.md): lost on restart, and known only to
/// this instance. An LRU bounded by `maxSessions`, sharded by digest so the event loops rarely
/// meet on a lock; each access holds one shard's lock for one dictionary operation.
///
/// Also the in-memory half of the PostgreSQL store, which adds the database behind it.
final class LocalSessionStore: SessionStore {
    private let shards: Sharded<LRUCache<TokenDigest, SessionRecord>>

    /// Process-wide and kept across reloads (sessions outlive a configuration).
    init(capacity: Int) {
        self.shards = Sharded(capacity: max(capacity, 1)) { LRUCache(capacity: $0) }
    }

    /// The live record under `digest`, its use recorded (at most once per granularity); an
    /// expired one is removed.
    func lookup(_ digest: TokenDigest, now: Double, lifetime: SessionLifetime, on eventLoop: EventLoop) -> SessionLookup
    {
        self.shards.withShard(for: digest) { shard -> SessionLookup in
            guard var record = shard.get(digest) else { return .missing }
            guard record.isLive(at: now, lifetime) else {
                _ = shard.remove(digest)
                return .expired
            }
            if now - record.lastUsedAt >= lifetime.touchGranularitySeconds {
                record.lastUsedAt = now
                _ = shard.set(digest, record)
            }
            return .found(record)
        }
    }

    func held(_ digest: TokenDigest) -> SessionRecord? {
        self.shards.withShard(for: digest) { $0.peek(digest) }
    }

    func create(_ digest: TokenDigest, _ record: SessionRecord) {
        self.shards.withShard(for: digest) { _ = $0.set(digest, record) }
    }

    func update(_ digest: TokenDigest, _ record: SessionRecord) {
        self.shards.withShard(for: digest) { _ = $0.set(digest, record) }
    }

    func end(_ digest: TokenDigest) {
        self.shards.withShard(for: digest) { _ = $0.remove(digest) }
    }

    @discardableResult
    func end(providerSessionID sid: String?, subject: String?) -> Int {
        guard sid != nil || subject != nil else { return 0 }
        var ended = 0
        self.shards.forEachShard { shard in
            for (digest, record) in shard.entries where Self.matches(record, sid: sid, subject: subject) {
                _ = shard.remove(digest)
                ended += 1
            }
        }
        return ended
    }

    /// Back-channel logout's selection: the provider session when the token names one, else
    /// every session of the subject.
    static func matches(_ record: SessionRecord, sid: String?, subject: String?) -> Bool {
        if let sid { return record.providerSessionID == sid }
        return record.subject == subject
    }

    var count: Int {
        var total = 0
        self.shards.forEachShard { total += $0.count }
        return total
    }
}
