/// One session's change waiting for the next write to the sessions table
/// (`PostgresSessionStore`), coalesced with the changes that follow it: whatever happened to a
/// session between two flushes is one statement's row. Pure.
///
/// The rule that keeps logouts final: only `put` (a sign-in) creates a row. An update after a
/// refresh or a use never re-creates a row another instance deleted, and anything after a
/// `delete` stays a `delete`.
enum PendingSessionWrite: Sendable, Equatable {
    /// Insert the row (or replace it: a retried write).
    case put(SessionRecord)
    /// New tokens for the row, if it still exists; the other instances re-read it.
    case update(SessionRecord)
    /// A use: the row's `last_used_at` moves forward, if the row still exists.
    case touch(lastUsedAt: Double)
    /// Delete the row; the other instances drop their copies (and close the session's streams
    /// for `reason`, docs/streams.md).
    case delete(SessionEndReason)

    /// `self` followed by `later`, as one write.
    func then(_ later: PendingSessionWrite) -> PendingSessionWrite {
        switch (self, later) {
        case (.delete(let reason), _), (_, .delete(let reason)):
            // The first end is the one the session's streams were closed for.
            return .delete(reason)
        case (_, .put(let record)):
            return .put(record)
        case (.put(let earlier), .update(let record)):
            return .put(Self.used(record, at: earlier.lastUsedAt))
        case (.update(let earlier), .update(let record)):
            return .update(Self.used(record, at: earlier.lastUsedAt))
        case (.touch(let at), .update(let record)):
            return .update(Self.used(record, at: at))
        case (.put(let record), .touch(let at)):
            return .put(Self.used(record, at: at))
        case (.update(let record), .touch(let at)):
            return .update(Self.used(record, at: at))
        case (.touch(let earlier), .touch(let at)):
            return .touch(lastUsedAt: max(earlier, at))
        }
    }

    /// `record` with its last use no earlier than `at`.
    private static func used(_ record: SessionRecord, at: Double) -> SessionRecord {
        var record = record
        record.lastUsedAt = max(record.lastUsedAt, at)
        return record
    }

    /// The record it holds (to match a back-channel logout's selection against), if any.
    var record: SessionRecord? {
        switch self {
        case .put(let record), .update(let record): return record
        case .touch, .delete: return nil
        }
    }
}

/// Back-channel logout's selection as stored (`SessionSealer.selector`): the keyed hash of the
/// provider session `sid`, or — for a logout token without one — of the subject.
enum SessionSelector: Sendable, Hashable {
    case providerSession([UInt8])
    case subject([UInt8])
}

/// What one flush writes: at most one change per session, then the selections to delete.
struct SessionWriteBatch: Sendable, Equatable {
    var writes: [TokenDigest: PendingSessionWrite] = [:]
    var selectors: [SessionSelector] = []
    /// Why each selection ends its sessions, when it is not a back-channel logout (a
    /// `session-revoked` event): told to the other instances (docs/streams.md).
    var selectorReasons: [SessionSelector: SessionEndReason] = [:]

    var isEmpty: Bool { self.writes.isEmpty && self.selectors.isEmpty }

    /// The batch that was not written goes back before what was queued since, so that
    /// nothing queued later is undone by it.
    mutating func putBack(_ failed: SessionWriteBatch) {
        for (digest, write) in failed.writes {
            self.writes[digest] = self.writes[digest].map { write.then($0) } ?? write
        }
        self.selectors = failed.selectors + self.selectors
        self.selectorReasons.merge(failed.selectorReasons) { current, _ in current }
    }
}
