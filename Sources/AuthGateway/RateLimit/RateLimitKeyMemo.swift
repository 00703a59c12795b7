/// One event loop's memo of the rate-limit keys it made last: a caller's value (its `sub`, its
/// address) repeats request after request, and its HMAC was most of what a limit cost a
/// request (measured: ~3 % of the CPU of an admit-all limit, out of ~15 %). A direct-mapped
/// table (`DirectMappedMemo`): a hit needs the same kind and the whole value.
///
/// Owned by one loop (`Worker`): no lock. Keys are valid for one `RateLimiter` (its hashing
/// key): the memo empties itself when asked for another limiter's keys (after a reload).
final class RateLimitKeyMemo {
    private struct Entry {
        let kind: RateLimitKey.Kind
        let value: String
        let key: RateLimitKey
    }

    private var table: DirectMappedMemo<Entry>

    init(slotCount: Int = 256) {
        self.table = DirectMappedMemo(slotCount: slotCount)
    }

    /// The key of `value` under `limiter`, from the memo or made (and remembered).
    func key(_ kind: RateLimitKey.Kind, _ value: String, limiter: RateLimiter, make: () -> RateLimitKey) -> RateLimitKey
    {
        let slot = self.table.slot(of: value)
        if let entry = self.table.entry(at: slot, owner: limiter), entry.kind == kind, entry.value == value {
            return entry.key
        }
        let key = make()
        self.table.store(Entry(kind: kind, value: value, key: key), at: slot, owner: limiter)
        return key
    }
}

@available(*, unavailable)
extension RateLimitKeyMemo: Sendable {}
