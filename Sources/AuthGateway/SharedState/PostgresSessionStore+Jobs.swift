import NIOCore
import PostgresNIO

/// The store's work off the request path, as jobs of the shared-state service: reading a row,
/// flushing the queued changes, following notifications, and re-reading every held session
/// after notifications may have been lost.
extension PostgresSessionStore {
    // MARK: Reading a row

    /// The read job: ends the flight with the live record (now held here), or nil.
    func run(_ job: SessionReadJob) async {
        let record = await self.readThrough(job.digest, lifetime: job.lifetime)
        self.reads.settle(job.flight, now: self.clock(), outcome: record, remember: false)
    }

    /// The session under `digest` as the database has it, merged with what this instance has
    /// not written yet; kept here when live. A read that a notification overtook (the row
    /// changed while it was read) reads again.
    private func readThrough(_ digest: TokenDigest, lifetime: SessionLifetime) async -> SessionRecord? {
        var row: (sealed: [UInt8], lastUsedAt: Double)?
        for _ in 0..<3 {
            let started = SharedStateDatabase.monotonicSeconds()
            self.databaseReads.add(1, ordering: .relaxed)
            do {
                row = try await self.database.readSession(digest)
            } catch {
                // Counted by the database, which is now out of use: judged from memory, where
                // an idle-looking copy is over.
                self.local.end(digest, reason: .expired)
                return nil
            }
            if !self.wasDropped(digest, since: started) { break }
        }
        var record: SessionRecord
        switch self.writes.pending(digest) {
        case .delete?:
            // Ended here while the row was read.
            return nil
        case .put(let unwritten)?, .update(let unwritten)?:
            record = unwritten
        case .touch?, nil:
            guard let row else {
                // Ended elsewhere (its notification missed, or this copy was forgotten).
                self.local.end(digest, reason: .signOut)
                return nil
            }
            do throws(OutcomeSealer.OpenError) {
                record = try self.sealer.open(row.sealed, for: digest)
            } catch {
                self.database.record(SharedStateFailure(operation: .decrypt, reason: error.description))
                return nil
            }
        }
        record.lastUsedAt = max(record.lastUsedAt, row?.lastUsedAt ?? 0, self.local.held(digest)?.lastUsedAt ?? 0)
        let now = self.clock()
        guard record.isLive(at: now, lifetime) else {
            self.end(digest, reason: .expired)
            return nil
        }
        if now - record.lastUsedAt >= lifetime.touchGranularitySeconds {
            record.lastUsedAt = now
            self.queue(.touch(lastUsedAt: now), for: digest)
        }
        self.local.create(digest, record)
        return record
    }

    /// Whether a notification dropped `digest` at or after `since` (monotonic seconds).
    func wasDropped(_ digest: TokenDigest, since: Double) -> Bool {
        guard let at = self.dropped.withShard(for: digest, { $0.peek(digest) }) else { return false }
        return at >= since
    }

    // MARK: Notifications

    /// A notification on `SharedSessionTable.channel` (`<hex digest>:<tag>:<u|e…>`): another
    /// instance ended the session (`e`, then the reason's letter — `SessionEndReason`, sign-out
    /// when absent: this instance's copy goes at once and the session's streams close, the
    /// next request reads the row) or updated it after a refresh (`u`: the copy is read again —
    /// never dropped, as a request here may be adopting the same refresh). This instance's own
    /// notifications are ignored (its copy is current).
    func notified(_ payload: String) {
        let parts = payload.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1] != self.tag[...], let digest = TokenDigest(hex: String(parts[0])) else {
            return
        }
        self.dropped.withShard(for: digest) { _ = $0.set(digest, SharedStateDatabase.monotonicSeconds()) }
        if parts[2] == "u" {
            if self.local.held(digest) != nil { _ = self.jobs.enqueue(.sessionRefresh(digest), key: digest) }
        } else {
            self.local.end(digest, reason: SharedSessionTable.endReason(parts[2]))
        }
    }

    /// The refresh job: the row of a session held here, which another instance updated,
    /// replaces this instance's copy (unless this instance has changes of its own to write).
    func refreshHeld(_ digest: TokenDigest) async {
        guard self.local.held(digest) != nil else { return }
        var row: (sealed: [UInt8], lastUsedAt: Double)?
        for _ in 0..<3 {
            let started = SharedStateDatabase.monotonicSeconds()
            self.databaseReads.add(1, ordering: .relaxed)
            guard let read = try? await self.database.readSession(digest) else { return }
            row = read
            if !self.wasDropped(digest, since: started) { break }
        }
        if let write = self.writes.pending(digest), Self.keepsLocalCopy(write) { return }
        guard let row else {
            self.local.end(digest, reason: .signOut)
            return
        }
        guard var record = try? self.sealer.open(row.sealed, for: digest) else { return }
        record.lastUsedAt = max(record.lastUsedAt, row.lastUsedAt, self.local.held(digest)?.lastUsedAt ?? 0)
        self.local.replace(digest, record)
    }

    /// After (re)connecting the LISTEN connection: notifications sent while it was down are
    /// lost, so every session held is checked against its row — ended ones go, updated ones
    /// are replaced. Sessions with changes not yet written stay as they are.
    func resynchronize() async {
        let held = self.local.digests
        var start = 0
        while start < held.count, !Task.isCancelled {
            let chunk = Array(held[start..<min(start + 1000, held.count)])
            start += chunk.count
            let started = SharedStateDatabase.monotonicSeconds()
            guard let rows = try? await self.database.readSessions(chunk) else {
                // Counted by the database: tried again once it is back.
                self.scheduleResynchronization()
                return
            }
            for digest in chunk where self.writes.pending(digest).map(Self.keepsLocalCopy) != true {
                if self.wasDropped(digest, since: started) { continue }
                guard let row = rows[digest] else {
                    self.local.end(digest, reason: .signOut)
                    continue
                }
                guard var record = try? self.sealer.open(row.sealed, for: digest) else { continue }
                record.lastUsedAt = max(record.lastUsedAt, row.lastUsedAt, self.local.held(digest)?.lastUsedAt ?? 0)
                self.local.replace(digest, record)
            }
        }
    }

    /// Unwritten changes make this instance's copy the current one.
    static func keepsLocalCopy(_ write: PendingSessionWrite) -> Bool {
        switch write {
        case .put, .update, .delete: return true
        case .touch: return false
        }
    }

    // MARK: Flushing

    /// The flush job: writes everything queued, batch after batch, until nothing is left. A
    /// failure puts the batch back for when the database is back (the maintenance loop
    /// schedules the flush again).
    func flush() async {
        while true {
            guard self.isInUse, !Task.isCancelled else {
                self.writes.releaseFlush()
                // Sign-ins waiting for their write go on: the sessions live here meanwhile.
                self.wakeAllWaiters()
                return
            }
            let batch = self.writes.drain()
            guard !batch.isEmpty else {
                self.writes.finishBatch()
                self.writes.releaseFlush()
                // A change queued between the drain and the release finds the flush claimed
                // and leaves it to this one.
                if !self.writes.isEmpty, self.writes.claimFlush() { continue }
                return
            }
            do {
                try await self.database.writeSessions(self.statements(for: batch))
                self.writes.finishBatch()
                self.wake(waitersOf: batch.writes.keys)
            } catch {
                self.writes.putBack(batch)
                self.writes.releaseFlush()
                self.wakeAllWaiters()
                return
            }
        }
    }

    /// The statements of `batch`: sign-ins first, then updates, uses, ends and back-channel
    /// logouts (whose selections then also catch the sign-ins of the same batch).
    func statements(for batch: SessionWriteBatch) -> [PostgresQuery] {
        let lifetime = self.writingLifetime
        var puts: [SharedSessionTable.Put] = []
        var updates: [(digest: [UInt8], sealed: [UInt8], lastUsedAt: Double)] = []
        var touches: [(digest: [UInt8], lastUsedAt: Double)] = []
        var deletes: [SessionEndReason: [[UInt8]]] = [:]
        for (digest, write) in batch.writes {
            switch write {
            case .put(let record):
                puts.append(
                    SharedSessionTable.Put(
                        digest: digest.bytes, sealed: self.sealer.seal(record, for: digest),
                        sidHash: record.providerSessionID.map(self.sealer.providerSessionHash) ?? [],
                        subHash: self.sealer.subjectHash(record.subject), createdAt: record.createdAt,
                        lastUsedAt: record.lastUsedAt))
            case .update(let record):
                updates.append((digest.bytes, self.sealer.seal(record, for: digest), record.lastUsedAt))
            case .touch(let at):
                touches.append((digest.bytes, at))
            case .delete(let reason):
                deletes[reason, default: []].append(digest.bytes)
            }
        }
        var selected: [SessionEndReason: (sids: [[UInt8]], subjects: [[UInt8]])] = [:]
        for selector in batch.selectors {
            let reason = batch.selectorReasons[selector] ?? .backchannel
            switch selector {
            case .providerSession(let hash): selected[reason, default: ([], [])].sids.append(hash)
            case .subject(let hash): selected[reason, default: ([], [])].subjects.append(hash)
            }
        }
        let (idle, max) = (lifetime.idleSeconds, lifetime.maxSeconds)
        var statements: [PostgresQuery] = []
        if !puts.isEmpty { statements.append(SharedSessionTable.put(puts, idleSeconds: idle, maxSeconds: max)) }
        if !updates.isEmpty {
            statements.append(SharedSessionTable.update(updates, idleSeconds: idle, maxSeconds: max, tag: self.tag))
        }
        if !touches.isEmpty { statements.append(SharedSessionTable.touch(touches, idleSeconds: idle, maxSeconds: max)) }
        for (reason, digests) in deletes.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            statements.append(SharedSessionTable.delete(digests, tag: self.tag, reason: reason))
        }
        for (reason, selection) in selected.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            statements.append(
                SharedSessionTable.deleteSelected(
                    sidHashes: selection.sids, subjectHashes: selection.subjects, tag: self.tag, reason: reason))
        }
        return statements
    }
}
