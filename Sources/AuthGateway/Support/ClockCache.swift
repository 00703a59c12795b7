/// A bounded map that, when full, evicts an entry not used since the clock hand last passed it
/// (CLOCK, or "second chance"). Value type, no locking: wrap it for sharing.
///
/// Like `LRUCache` it keeps the entries in use and forgets the idle ones, so a flood of new keys
/// cannot push out a key that is used while the hand goes round. Unlike it, a hit moves nothing:
/// it sets its entry's `used` bit. An LRU move rewrites two neighbouring entries, and with a
/// hundred thousand keys those are in no cache (docs/benchmarks.md, "Cost at scale"). A removed
/// entry's slot is reused by the next insertion before anything is evicted.
struct ClockCache<Key: Hashable, Value> {
    fileprivate struct Entry {
        var key: Key
        var value: Value
        var used: Bool
    }

    let capacity: Int
    /// Grows to `capacity`; nil where an entry was removed (its slot is in `freeSlots`).
    private var table: [Entry?] = []
    private var slots: [Key: Int] = [:]
    private var freeSlots: [Int] = []
    /// The next entry eviction looks at.
    private var hand = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a CLOCK cache needs room for at least one entry")
        self.capacity = capacity
    }

    var count: Int { self.slots.count }

    /// Every entry, in no particular order (for sweeps; not for the request path).
    var entries: [(key: Key, value: Value)] {
        self.table.compactMap { $0.map { ($0.key, $0.value) } }
    }

    /// The value for `key`, marking it used.
    mutating func get(_ key: Key) -> Value? {
        self.update(key) { value in (value, nil) }
    }

    /// The value for `key` without marking it used.
    func peek(_ key: Key) -> Value? {
        self.slots[key].map { self.table[$0]!.value }
    }

    /// One lookup of `key`: `body` gets its value (nil when absent) and answers a result and
    /// a value to store (nil: store nothing). A present key is marked used; a stored value for
    /// an absent key is inserted, evicting an unused entry when full.
    mutating func update<Result>(_ key: Key, _ body: (Value?) -> (result: Result, store: Value?)) -> Result {
        if let slot = self.slots[key] {
            self.table[slot]!.used = true
            let (result, store) = body(self.table[slot]!.value)
            if let store { self.table[slot]!.value = store }
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

    @discardableResult
    mutating func remove(_ key: Key) -> Value? {
        guard let slot = self.slots.removeValue(forKey: key) else { return nil }
        let value = self.table[slot]!.value
        self.table[slot] = nil
        self.freeSlots.append(slot)
        return value
    }

    /// Removes every entry `matches` selects (a walk over all of them: not for the request
    /// path); returns how many.
    @discardableResult
    mutating func removeAll(where matches: (Key, Value) -> Bool) -> Int {
        let selected = self.table.compactMap { entry in entry.flatMap { matches($0.key, $0.value) ? $0.key : nil } }
        for key in selected { self.remove(key) }
        return selected.count
    }

    /// Keys in slot order, nil for a free slot (for tests and diagnostics).
    var keysBySlot: [Key?] { self.table.map { $0?.key } }

    private mutating func insert(_ key: Key, _ value: Value) {
        let entry = Entry(key: key, value: value, used: false)
        if let free = self.freeSlots.popLast() {
            self.table[free] = entry
            self.slots[key] = free
            return
        }
        guard self.table.count == self.capacity else {
            self.slots[key] = self.table.count
            self.table.append(entry)
            return
        }
        // Full, every slot live. Each entry the hand passes loses its second chance; the first
        // without one goes. Each step clears a bit a hit set, so a sweep costs one step per hit
        // since the last.
        while self.table[self.hand]!.used {
            self.table[self.hand]!.used = false
            self.hand = (self.hand + 1) % self.capacity
        }
        self.slots.removeValue(forKey: self.table[self.hand]!.key)
        self.table[self.hand] = entry
        self.slots[key] = self.hand
        self.hand = (self.hand + 1) % self.capacity
    }
}

extension ClockCache: Sendable where Key: Sendable, Value: Sendable {}
extension ClockCache.Entry: Sendable where Key: Sendable, Value: Sendable {}
