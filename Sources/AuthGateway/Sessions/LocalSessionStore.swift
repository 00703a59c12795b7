import NIOCore

/// Sessions kept in this process (docs/browser-sign-in.md): lost on restart, and known only to
/// this instance. A `ClockCache` bounded by `maxSessions` (an idle session is forgotten first),
/// sharded by digest so the event loops rarely meet on a lock; each access holds one shard's
/// lock for one dictionary operation.
///
/// Also the in-memory half of the PostgreSQL store, which adds the database behind it.
final class LocalSessionStore: SessionStore {
    private let shards: Sharded<ClockCache<TokenDigest, SessionRecord>>
    /// Told of every end, so that the session's streams close (docs/streams.md).
    let observer: SessionObserver?

    /// Process-wide and kept across reloads (sessions outlive a configuration).
    init(capacity: Int, observer: SessionObserver? = nil) {
        self.shards = Sharded(capacity: max(capacity, 1)) { ClockCache(capacity: $0) }
        self.observer = observer
    }

    /// The live record under `digest`, its use recorded (at most once per granularity); an
    /// expired one is removed.
    func lookup(_ digest: TokenDigest, now: Double, lifetime: SessionLifetime, on eventLoop: EventLoop) -> SessionLookup
    {
        switch self.cached(digest, now: now, lifetime: lifetime, keepingIdle: false) {
        case .live(let record, _): return .found(record)
        case .absent: return .missing
        case .idle, .over: return .expired
        }
    }

    /// What this process holds under `digest` at `now`: a live record (its use recorded, at
    /// most once per granularity: `touched` says whether this lookup recorded it), nothing, a
    /// record idle past `idleSeconds`, or one past `maxSeconds`. A record past its maximum age
    /// is removed; an idle one too, unless `keepingIdle` (the PostgreSQL store asks the
    /// database first: another instance may have kept the session alive). One shard lock.
    func cached(_ digest: TokenDigest, now: Double, lifetime: SessionLifetime, keepingIdle: Bool) -> CachedSession {
        let cached = self.shards.withShard(for: digest) { shard -> CachedSession in
            guard var record = shard.get(digest) else { return .absent }
            guard now < record.createdAt + lifetime.maxSeconds else {
                _ = shard.remove(digest)
                return .over
            }
            guard now < record.lastUsedAt + lifetime.idleSeconds else {
                if !keepingIdle { _ = shard.remove(digest) }
                return .idle(record)
            }
            guard now - record.lastUsedAt >= lifetime.touchGranularitySeconds else {
                return .live(record, touched: false)
            }
            record.lastUsedAt = now
            shard.set(digest, record)
            return .live(record, touched: true)
        }
        switch cached {
        case .over: self.observer?.sessionEnded(digest, reason: .expired)
        case .idle where !keepingIdle: self.observer?.sessionEnded(digest, reason: .expired)
        case .live, .absent, .idle: break
        }
        return cached
    }

    func held(_ digest: TokenDigest) -> SessionRecord? {
        self.shards.withShard(for: digest) { $0.peek(digest) }
    }

    func create(_ digest: TokenDigest, _ record: SessionRecord) {
        self.shards.withShard(for: digest) { $0.set(digest, record) }
    }

    /// In this process, a change is everywhere it will be at once.
    func written(_ digest: TokenDigest, on eventLoop: EventLoop) -> EventLoopFuture<Void> {
        eventLoop.makeSucceededVoidFuture()
    }

    func update(_ digest: TokenDigest, _ record: SessionRecord) {
        self.shards.withShard(for: digest) { $0.set(digest, record) }
    }

    /// Replaces the record under `digest` only while this process holds one: true when it did.
    /// (A session ended meanwhile — by a notification from another instance — stays ended.)
    @discardableResult
    func replace(_ digest: TokenDigest, _ record: SessionRecord) -> Bool {
        self.shards.withShard(for: digest) { shard in
            guard shard.peek(digest) != nil else { return false }
            shard.set(digest, record)
            return true
        }
    }

    /// The digests of every record held (for re-reading them after lost notifications; not
    /// for the request path).
    var digests: [TokenDigest] {
        var all: [TokenDigest] = []
        self.shards.forEachShard { shard in all.append(contentsOf: shard.entries.map(\.key)) }
        return all
    }

    func end(_ digest: TokenDigest, reason: SessionEndReason) {
        self.shards.withShard(for: digest) { _ = $0.remove(digest) }
        self.observer?.sessionEnded(digest, reason: reason)
    }

    @discardableResult
    func end(providerSessionID sid: String?, subject: String?, reason: SessionEndReason) -> Int {
        guard sid != nil || subject != nil else { return 0 }
        var ended = 0
        self.shards.forEachShard { shard in
            for (digest, record) in shard.entries where Self.matches(record, sid: sid, subject: subject) {
                _ = shard.remove(digest)
                ended += 1
            }
        }
        self.observer?.sessionsEnded(providerSessionID: sid, subject: subject, reason: reason)
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

/// A record as this process holds it (`LocalSessionStore.cached`).
enum CachedSession {
    case live(SessionRecord, touched: Bool)
    case absent
    /// Unused for `sessionIdleSeconds` by this process's copy.
    case idle(SessionRecord)
    /// Past `sessionMaxSeconds`: over, whatever any instance says.
    case over
}
