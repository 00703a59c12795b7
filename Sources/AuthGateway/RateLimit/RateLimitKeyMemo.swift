/// One event loop's memo of the rate-limit keys it made last: a caller's value (its `sub`, its
/// address) repeats request after request, and its HMAC was most of what a limit cost a
/// request (measured: ~3 % of the CPU of an admit-all limit, out of ~15 %). A direct-mapped
/// table — the slot a hash of the value, a hit needs the same kind and the whole value — so a
/// stream of distinct values costs a failed comparison, never an eviction scan.
///
/// Owned by one loop (`Worker`): no lock. Keys are valid for one `RateLimiter` (its hashing
/// key): the memo empties itself when asked for another limiter's keys (after a reload).
final class RateLimitKeyMemo {
    private struct Entry {
        let kind: RateLimitKey.Kind
        let value: String
        let key: RateLimitKey
    }

    private var entries: [Entry?]
    private var owner: ObjectIdentifier?

    init(slotCount: Int = 256) {
        precondition(slotCount > 0 && slotCount & (slotCount - 1) == 0, "a power of two")
        self.entries = Array(repeating: nil, count: slotCount)
    }

    /// The key of `value` under `limiter`, from the memo or made (and remembered).
    func key(_ kind: RateLimitKey.Kind, _ value: String, limiter: RateLimiter, make: () -> RateLimitKey) -> RateLimitKey {
        let owner = ObjectIdentifier(limiter)
        if self.owner != owner {
            self.owner = owner
            for index in self.entries.indices { self.entries[index] = nil }
        }
        var hasher = Hasher()
        hasher.combine(kind.rawValue)
        hasher.combine(value)
        let slot = hasher.finalize() & (self.entries.count - 1)
        if let entry = self.entries[slot], entry.kind == kind, entry.value == value { return entry.key }
        let key = make()
        self.entries[slot] = Entry(kind: kind, value: value, key: key)
        return key
    }
}

@available(*, unavailable)
extension RateLimitKeyMemo: Sendable {}
