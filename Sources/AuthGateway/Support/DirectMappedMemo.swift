/// The table of a loop's memo (`RateLimitKeyMemo`, `RecentIntrospections`): direct-mapped —
/// one entry per slot, the slot a hash of the key, so a stream of distinct keys costs a failed
/// comparison, never an eviction scan — and valid for one owner (the limiter or introspector
/// whose answers it holds): asked on behalf of another, it empties itself (after a reload).
/// The caller compares what it stored to tell a hit from another key in the same slot.
struct DirectMappedMemo<Entry> {
    private var entries: [Entry?]
    private var owner: ObjectIdentifier?

    init(slotCount: Int) {
        precondition(slotCount > 0 && slotCount & (slotCount - 1) == 0, "a power of two")
        self.entries = Array(repeating: nil, count: slotCount)
    }

    /// The slot of a key.
    func slot(of key: some Hashable) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return hasher.finalize() & (self.entries.count - 1)
    }

    /// What `slot` holds for `owner` (nil when it holds another owner's entries).
    func entry(at slot: Int, owner: AnyObject) -> Entry? {
        self.owner == ObjectIdentifier(owner) ? self.entries[slot] : nil
    }

    mutating func store(_ entry: Entry, at slot: Int, owner: AnyObject) {
        let owner = ObjectIdentifier(owner)
        if self.owner != owner {
            self.owner = owner
            for index in self.entries.indices { self.entries[index] = nil }
        }
        self.entries[slot] = entry
    }
}
