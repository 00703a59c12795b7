/// A bounded map that, when full, evicts an entry not used since the clock hand last passed it
/// (CLOCK, or "second chance"). Value type, no locking: wrap it for sharing.
///
/// Like `LRUCache` it keeps the entries in use and forgets the idle ones, so a flood of new keys
/// cannot push out a key that is used while the hand goes round. Unlike it, a hit moves nothing:
/// it sets its entry's `used` bit. An LRU move rewrites two neighbouring entries, and with a
/// hundred thousand keys those are in no cache (docs/benchmarks.md, "Cost at scale"). Entries
/// are never removed one by one; the table only grows to `capacity` and then replaces.
struct ClockCache<Key: Hashable, Value> {
    fileprivate struct Entry {
        var key: Key
        var value: Value
        var used: Bool
    }

    let capacity: Int
    private var entries: [Entry] = []
    private var slots: [Key: Int] = [:]
    /// The next entry eviction looks at.
    private var hand = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a CLOCK cache needs room for at least one entry")
        self.capacity = capacity
    }

    var count: Int { self.entries.count }

    /// The value for `key` without marking it used.
    func peek(_ key: Key) -> Value? {
        self.slots[key].map { self.entries[$0].value }
    }

    /// One lookup of `key`: `body` gets its value (nil when absent) and answers a result and
    /// a value to store (nil: store nothing). A present key is marked used; a stored value for
    /// an absent key is inserted, evicting an unused entry when full.
    mutating func update<Result>(_ key: Key, _ body: (Value?) -> (result: Result, store: Value?)) -> Result {
        if let slot = self.slots[key] {
            self.entries[slot].used = true
            let (result, store) = body(self.entries[slot].value)
            if let store { self.entries[slot].value = store }
            return result
        }
        let (result, store) = body(nil)
        if let store { self.insert(key, store) }
        return result
    }

    /// Inserts or replaces, marking a present key used.
    mutating func set(_ key: Key, _ value: Value) {
        self.update(key) { _ in ((), value) }
    }

    /// Keys in slot order (for tests and diagnostics).
    var keys: [Key] { self.entries.map(\.key) }

    private mutating func insert(_ key: Key, _ value: Value) {
        guard self.entries.count == self.capacity else {
            self.slots[key] = self.entries.count
            self.entries.append(Entry(key: key, value: value, used: false))
            return
        }
        // Every entry the hand passes loses its second chance; the first without one goes.
        // Each step clears a bit a hit set, so a sweep costs one step per hit since the last.
        while self.entries[self.hand].used {
            self.entries[self.hand].used = false
            self.hand = (self.hand + 1) % self.capacity
        }
        self.slots.removeValue(forKey: self.entries[self.hand].key)
        self.entries[self.hand] = Entry(key: key, value: value, used: false)
        self.slots[key] = self.hand
        self.hand = (self.hand + 1) % self.capacity
    }
}

extension ClockCache: Sendable where Key: Sendable, Value: Sendable {}
extension ClockCache.Entry: Sendable where Key: Sendable, Value: Sendable {}
