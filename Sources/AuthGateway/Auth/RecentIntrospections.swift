/// One event loop's memo of the active introspection answers it adopted last, in front of
/// `TokenIntrospector`'s process-wide cache (as `RecentTokens` is in front of the verified-token
/// cache): an opaque token repeats request after request, and each cached answer otherwise
/// cost a SHA-256 of the token, a sharded lock and a new `VerifiedToken` (measured: a cached
/// introspection cost 11 % more gateway CPU than a verified JWT). With `forJWTs` it also holds
/// the verified JWTs the endpoint said were active, with the JWT's own claims
/// (`IntrospectedJWT`), so that a repeated JWT is not asked about again while its answer lasts.
///
/// A direct-mapped table (`DirectMappedMemo`): a hit needs the whole token (no digest stored
/// in its place: the memo lives in this process's memory only, like the
/// connection that carried the token). An entry ends when its answer does (`validUntil`: the
/// earlier of `exp` and `cacheSeconds`), so the memo never answers longer than the cache it
/// stands in front of. Entries belong to one `TokenIntrospector` (one configuration of
/// `tokens.introspection`): another one's answers are not reused after a reload.
///
/// A Shared Signals event that forgets a subject (docs/streams.md) ends every entry: each
/// records `SubjectChanges.current` as read before its answer was looked up.
///
/// Owned by one loop (`Worker`): no lock.
final class RecentIntrospections {
    private struct Entry {
        let token: String
        let verified: VerifiedToken
        let validUntil: Double
        let changes: UInt64
    }

    private var table: DirectMappedMemo<Entry>
    private let subjectChanges: SubjectChanges

    init(slotCount: Int = 256, subjectChanges: SubjectChanges = SubjectChanges()) {
        self.table = DirectMappedMemo(slotCount: slotCount)
        self.subjectChanges = subjectChanges
    }

    /// What to pass to `remember` for an answer looked up from now on.
    var changes: UInt64 { self.subjectChanges.current }

    /// The identity of `token` while its answer lasts, if this loop adopted it and no subject
    /// was forgotten since.
    func lookup(_ token: Substring, introspector: TokenIntrospector, now: Double) -> VerifiedToken? {
        guard let entry = self.table.entry(at: self.table.slot(of: token), owner: introspector), entry.validUntil > now,
            entry.changes == self.subjectChanges.current, entry.token == token
        else {
            return nil
        }
        return entry.verified
    }

    /// Remembers an active answer, adopted for `token`; `changes`: `self.changes` as read
    /// before the answer was looked up.
    func remember(
        _ token: Substring, verified: VerifiedToken, validUntil: Double, introspector: TokenIntrospector,
        changes: UInt64
    ) {
        self.table.store(
            Entry(token: String(token), verified: verified, validUntil: validUntil, changes: changes),
            at: self.table.slot(of: token), owner: introspector)
    }
}

@available(*, unavailable)
extension RecentIntrospections: Sendable {}
