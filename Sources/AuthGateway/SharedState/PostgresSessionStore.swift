import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// Browser sessions shared by every instance on the database (docs/browser-sign-in.md, "Where
/// sessions live"): any instance serves any session.
///
/// A `LocalSessionStore` in front is the read-through cache: a session this instance has seen
/// is answered from memory — no statement, no task, no lock beyond the cache's shard — and the
/// instance learns of ends and updates made elsewhere through `NOTIFY` (`notified`), dropping
/// its copy within the notification's delay. An unknown handle costs one read, one per digest
/// however many requests wait (`LocalSingleFlight`), answered through `SessionLookup.pending`.
/// A copy that looks idle-expired is read again before the session is declared over: another
/// instance may have kept it alive (uses are written, not notified).
///
/// Changes (sign-ins, refreshed tokens, uses at most once per touch granularity, ends) are
/// queued in `SessionWriteQueue` and written by one flush at a time, a job of the shared-state
/// service — never a task per request. While the database is away, known sessions keep
/// working from memory, unknown handles are unknown, new sign-ins live here and are written
/// when the database is back.
final class PostgresSessionStore: SessionStore {
    let local: LocalSessionStore
    let database: SharedStateDatabase
    let jobs: SharedStateJobs
    let sealer: SessionSealer
    let writes = SessionWriteQueue()
    /// Whether the sessions table exists (the maintenance loop makes it).
    let table = TokenTablesReadiness()
    /// Reads of unknown (or idle-looking) handles in flight, one per digest.
    let reads = LocalSingleFlight<TokenDigest, SessionRecord?>(capacity: 4096)
    /// When a notification last dropped a digest (monotonic seconds): a read that began
    /// before it may hold the row as it was, and reads again.
    let dropped = Sharded<LRUCache<TokenDigest, Double>>(capacity: 4096) { LRUCache(capacity: $0) }
    /// This instance's mark in the notifications it causes, which it then ignores.
    let tag = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16)).lowercased()
    /// `sessionIdleSeconds` and `sessionMaxSeconds` of the current configuration (for the
    /// rows' `expires_at`); nil without `browserSignIn`.
    private let configured = NIOLockedValueBox<SessionLifetime?>(nil)
    /// Unix seconds, the clock sessions are judged by.
    let clock: @Sendable () -> Double
    /// Rows read (for the tests: a known session costs none).
    let databaseReads = Atomic<Int>(0)
    /// Callers of `written`, by the digest they wait for.
    private let waiters = NIOLockedValueBox<[TokenDigest: [EventLoopPromise<Void>]]>([:])
    /// The LISTEN connection (re)connected: the held sessions are to be read again once the
    /// database is in use.
    private let needsResynchronization = Atomic<Bool>(false)

    /// Where the flush job is queued (any fixed shard).
    private static let flushKey = TokenDigest(of: "auth_gateway_sessions flush"[...])

    init(
        capacity: Int, database: SharedStateDatabase, jobs: SharedStateJobs,
        key: SharedStateConfiguration.EncryptionKey,
        clock: @escaping @Sendable () -> Double, observer: SessionObserver? = nil
    ) {
        self.local = LocalSessionStore(capacity: capacity, observer: observer)
        self.database = database
        self.jobs = jobs
        self.sealer = SessionSealer(key: key)
        self.clock = clock
    }

    /// The database is used for sessions: up, and the table made.
    var isInUse: Bool { self.table.isReady && self.database.usesDatabase }

    /// The sessions' lifetime under the current configuration; nil when it has no
    /// `browserSignIn` (then a missing table does not degrade `/healthz`).
    var lifetime: SessionLifetime? {
        get { self.configured.withLockedValue { $0 } }
        set { self.configured.withLockedValue { $0 = newValue } }
    }

    // MARK: SessionStore

    func lookup(_ digest: TokenDigest, now: Double, lifetime: SessionLifetime, on eventLoop: EventLoop) -> SessionLookup
    {
        let inUse = self.isInUse
        switch self.local.cached(digest, now: now, lifetime: lifetime, keepingIdle: inUse) {
        case .live(let record, let touched):
            if touched { self.queue(.touch(lastUsedAt: now), for: digest) }
            return .found(record)
        case .over:
            self.queue(.delete(.expired), for: digest)
            return .expired
        case .idle:
            // Another instance may have used it since: the row says.
            guard inUse else { return .expired }
            return self.read(digest, now: now, lifetime: lifetime, on: eventLoop)
        case .absent:
            guard inUse else { return .missing }
            return self.read(digest, now: now, lifetime: lifetime, on: eventLoop)
        }
    }

    func held(_ digest: TokenDigest) -> SessionRecord? { self.local.held(digest) }

    func create(_ digest: TokenDigest, _ record: SessionRecord) {
        self.local.create(digest, record)
        self.queue(.put(record), for: digest)
    }

    /// Kept here only while this instance still holds the session (one ended meanwhile by
    /// another instance stays ended); the row is updated if it still exists.
    func update(_ digest: TokenDigest, _ record: SessionRecord) {
        self.local.replace(digest, record)
        self.queue(.update(record), for: digest)
    }

    /// Once the flush wrote (or failed to write) what is queued for `digest`; at once while the
    /// database is away. Bounded by twice the statement timeout whatever happens.
    func written(_ digest: TokenDigest, on eventLoop: EventLoop) -> EventLoopFuture<Void> {
        guard self.isInUse else { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        self.waiters.withLockedValue { $0[digest, default: []].append(promise) }
        // Registered first, then checked: a flush that finished before it registered is seen
        // here, one that finishes after it completes it.
        if self.writes.pending(digest) == nil {
            self.wake(waitersOf: [digest])
        } else {
            let bound = TimeAmount.milliseconds(Int64(self.database.settings.timeoutMilliseconds) * 2)
            eventLoop.scheduleTask(in: bound) { self.wake(waitersOf: [digest]) }
        }
        return promise.futureResult
    }

    /// Completes the `written` futures of `digests`.
    func wake(waitersOf digests: some Sequence<TokenDigest>) {
        var woken: [EventLoopPromise<Void>] = []
        self.waiters.withLockedValue { waiters in
            guard !waiters.isEmpty else { return }
            for digest in digests { woken += waiters.removeValue(forKey: digest) ?? [] }
        }
        for promise in woken { promise.succeed() }
    }

    /// Completes every `written` future (the flush stopped: the database is away).
    func wakeAllWaiters() {
        let woken = self.waiters.withLockedValue { waiters in
            defer { waiters.removeAll() }
            return waiters.values.flatMap { $0 }
        }
        for promise in woken { promise.succeed() }
    }

    func end(_ digest: TokenDigest, reason: SessionEndReason) {
        self.local.end(digest, reason: reason)
        self.queue(.delete(reason), for: digest)
    }

    @discardableResult
    func end(providerSessionID sid: String?, subject: String?, reason: SessionEndReason) -> Int {
        let ended = self.local.end(providerSessionID: sid, subject: subject, reason: reason)
        if let selector = self.sealer.selector(providerSessionID: sid, subject: subject) {
            self.writes.add(selector, reason: reason) { LocalSessionStore.matches($0, sid: sid, subject: subject) }
            self.scheduleFlush()
        }
        return ended
    }

    var count: Int { self.local.count }

    // MARK: Reads

    /// The one read of `digest` in flight on this instance, joined or led.
    private func read(
        _ digest: TokenDigest, now: Double, lifetime: SessionLifetime, on eventLoop: EventLoop
    ) -> SessionLookup {
        let policy = LocalSingleFlight<TokenDigest, SessionRecord?>.Policy(freshSeconds: 0)
        let answer = self.reads.lookup(digest, now: now, policy: policy, eventLoop: eventLoop) { flight in
            if !self.jobs.enqueue(
                .sessionRead(SessionReadJob(digest: digest, lifetime: lifetime, flight: flight)), key: digest)
            {
                // The shared-state service has stopped: judged from memory alone.
                self.reads.settle(flight, now: now, outcome: nil, remember: false)
            }
            return flight.promise.futureResult
        }
        switch answer {
        case .fresh(let record), .stale(let record): return record.map { .found($0) } ?? .missing
        case .joined(let pending), .led(let pending): return .pending(pending)
        }
    }

    // MARK: Writes

    /// Queues `write` and makes sure a flush will write it.
    func queue(_ write: PendingSessionWrite, for digest: TokenDigest) {
        self.writes.add(write, for: digest)
        self.scheduleFlush()
    }

    /// Queues the flush job unless one is queued or running, or the database is away (the
    /// maintenance loop schedules it when the database is back).
    func scheduleFlush() {
        guard self.isInUse, self.writes.claimFlush() else { return }
        if !self.jobs.enqueue(.sessionWrites, key: Self.flushKey) { self.writes.releaseFlush() }
    }

    /// Notifications may have been lost (the LISTEN connection was down): every held session
    /// is read again, now or once the database and its table are in use.
    func scheduleResynchronization() {
        self.needsResynchronization.store(true, ordering: .relaxed)
        self.resynchronizeIfDue()
    }

    /// Queues the re-read a lost LISTEN connection asked for, when the database is in use.
    func resynchronizeIfDue() {
        guard self.isInUse, self.needsResynchronization.exchange(false, ordering: .relaxed) else { return }
        guard self.local.count > 0 else { return }
        _ = self.jobs.enqueue(.sessionResync, key: Self.flushKey)
    }

    /// The lifetime the rows' expiry is written with: the configuration's, or the defaults.
    var writingLifetime: SessionLifetime {
        self.lifetime ?? SessionLifetime(idleSeconds: 28_800, maxSeconds: 604_800)
    }
}

/// One read of a session's row, queued for the shared-state service by the local leader of
/// its flight.
struct SessionReadJob: Sendable {
    let digest: TokenDigest
    let lifetime: SessionLifetime
    let flight: LocalSingleFlight<TokenDigest, SessionRecord?>.Flight
}
