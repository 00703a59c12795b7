import NIOConcurrencyHelpers
import Synchronization

/// The session changes this instance has not yet written to PostgreSQL
/// (`PostgresSessionStore`): coalesced per session (`PendingSessionWrite`), sharded by digest
/// so that the event loops rarely meet on one lock, plus back-channel logouts' selections.
///
/// One flush at a time drains it (`isFlushScheduled`), so that the writes of one session reach
/// the database in the order they were made — a sign-in and its sign-out a moment later never
/// swap. While the database is away the changes wait here (a new sign-in is kept locally and
/// written when the database is back); a change per session at most, so it is bounded by the
/// sessions held.
final class SessionWriteQueue: Sendable {
    private let shards = Sharded<[TokenDigest: PendingSessionWrite]>(count: 16) { [:] }
    private let selectors = NIOLockedValueBox<[SessionSelector]>([])
    /// Why the queued selections end their sessions, when not by back-channel logout.
    private let selectorReasons = NIOLockedValueBox<[SessionSelector: SessionEndReason]>([:])
    private let scheduled = Atomic<Bool>(false)
    /// The batch the flush is writing (taken by `drain`, until `finishBatch` or `putBack`).
    private let inFlight = NIOLockedValueBox(SessionWriteBatch())
    /// Selections kept while the database is away, at most (the oldest are dropped beyond).
    static let maximumSelectors = 10_000

    /// Queues `write` for `digest` after whatever is queued for it.
    func add(_ write: PendingSessionWrite, for digest: TokenDigest) {
        self.shards.withShard(for: digest) { writes in
            writes[digest] = writes[digest].map { $0.then(write) } ?? write
        }
    }

    /// Queues a back-channel logout's selection, and turns the queued sign-ins and updates of
    /// the sessions it selects into deletions (so that a sign-in not yet written cannot land
    /// after the logout and bring the session back).
    func add(
        _ selector: SessionSelector, reason: SessionEndReason = .backchannel, matching matches: (SessionRecord) -> Bool
    ) {
        self.shards.forEachShard { writes in
            for (digest, write) in writes {
                if let record = write.record, matches(record) { writes[digest] = .delete(reason) }
            }
        }
        if reason != .backchannel { self.selectorReasons.withLockedValue { $0[selector] = reason } }
        self.selectors.withLockedValue { selectors in
            selectors.append(selector)
            if selectors.count > Self.maximumSelectors {
                selectors.removeFirst(selectors.count - Self.maximumSelectors)
            }
        }
    }

    /// Takes everything queued.
    func drain() -> SessionWriteBatch {
        var batch = SessionWriteBatch()
        self.shards.forEachShard { writes in
            batch.writes.merge(writes) { _, new in new }
            writes.removeAll(keepingCapacity: true)
        }
        batch.selectors = self.selectors.withLockedValue { selectors in
            defer { selectors.removeAll() }
            return selectors
        }
        batch.selectorReasons = self.selectorReasons.withLockedValue { reasons in
            defer { reasons.removeAll() }
            return reasons
        }
        self.inFlight.withLockedValue { $0 = batch }
        return batch
    }

    /// The drained batch is written.
    func finishBatch() { self.inFlight.withLockedValue { $0 = SessionWriteBatch() } }

    /// A batch that could not be written goes back, before anything queued since.
    func putBack(_ failed: SessionWriteBatch) {
        self.inFlight.withLockedValue { $0 = SessionWriteBatch() }
        for (digest, write) in failed.writes {
            self.shards.withShard(for: digest) { writes in
                writes[digest] = writes[digest].map { write.then($0) } ?? write
            }
        }
        self.selectors.withLockedValue { selectors in
            selectors = failed.selectors + selectors
            if selectors.count > Self.maximumSelectors {
                selectors.removeFirst(selectors.count - Self.maximumSelectors)
            }
        }
        self.selectorReasons.withLockedValue { $0.merge(failed.selectorReasons) { current, _ in current } }
    }

    /// The change not yet written for `digest` (queued, or being written), if any.
    func pending(_ digest: TokenDigest) -> PendingSessionWrite? {
        let writing = self.inFlight.withLockedValue { $0.writes[digest] }
        let queued = self.shards.withShard(for: digest) { $0[digest] }
        switch (writing, queued) {
        case (.some(let writing), .some(let queued)): return writing.then(queued)
        case (.some(let write), .none), (.none, .some(let write)): return write
        case (.none, .none): return nil
        }
    }

    var isEmpty: Bool {
        var empty = self.selectors.withLockedValue { $0.isEmpty }
        if empty { self.shards.forEachShard { if !$0.isEmpty { empty = false } } }
        return empty
    }

    // MARK: The one flush

    /// Claims the flush: true when the caller is to run (or queue) it, false when one is
    /// scheduled already.
    func claimFlush() -> Bool {
        self.scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    /// The flush has ended (drained, or stopped for the database).
    func releaseFlush() { self.scheduled.store(false, ordering: .releasing) }
}
