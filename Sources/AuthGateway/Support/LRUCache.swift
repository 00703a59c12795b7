/// A bounded least-recently-used map. Value type, no locking: wrap it for sharing.
///
/// Nodes live in one array linked by indices (no per-entry allocation after warm-up); a
/// removed slot goes on a free list.
struct LRUCache<Key: Hashable, Value> {
    fileprivate struct Node {
        var key: Key
        var value: Value
        var newer: Int
        var older: Int
    }

    let capacity: Int
    private var nodes: [Node?] = []
    private var slots: [Key: Int] = [:]
    private var freeSlots: [Int] = []
    /// Most recently used slot, or -1.
    private var newest = -1
    /// Least recently used slot, or -1.
    private var oldest = -1

    init(capacity: Int) {
        precondition(capacity > 0, "an LRU cache needs room for at least one entry")
        self.capacity = capacity
    }

    var count: Int { self.slots.count }

    /// Every entry, in no particular order (for sweeps; not for the request path).
    var entries: [(key: Key, value: Value)] {
        self.slots.values.map { slot in (self.nodes[slot]!.key, self.nodes[slot]!.value) }
    }

    /// The value for `key`, marking it most recently used.
    mutating func get(_ key: Key) -> Value? {
        guard let slot = self.slots[key] else { return nil }
        self.moveToNewest(slot)
        return self.nodes[slot]!.value
    }

    /// The value for `key` without changing its recency.
    func peek(_ key: Key) -> Value? {
        guard let slot = self.slots[key] else { return nil }
        return self.nodes[slot]!.value
    }

    /// Inserts or replaces; evicts the least recently used entry when full and returns it.
    @discardableResult
    mutating func set(_ key: Key, _ value: Value) -> (key: Key, value: Value)? {
        if let slot = self.slots[key] {
            self.nodes[slot]!.value = value
            self.moveToNewest(slot)
            return nil
        }
        var evicted: (key: Key, value: Value)?
        if self.slots.count >= self.capacity, self.oldest >= 0 {
            let victim = self.nodes[self.oldest]!
            evicted = (victim.key, victim.value)
            self.remove(victim.key)
        }
        let node = Node(key: key, value: value, newer: -1, older: self.newest)
        let slot: Int
        if let free = self.freeSlots.popLast() {
            slot = free
            self.nodes[slot] = node
        } else {
            slot = self.nodes.count
            self.nodes.append(node)
        }
        if self.newest >= 0 { self.nodes[self.newest]!.newer = slot }
        self.newest = slot
        if self.oldest < 0 { self.oldest = slot }
        self.slots[key] = slot
        return evicted
    }

    @discardableResult
    mutating func remove(_ key: Key) -> Value? {
        guard let slot = self.slots.removeValue(forKey: key) else { return nil }
        let node = self.nodes[slot]!
        self.unlink(slot)
        self.nodes[slot] = nil
        self.freeSlots.append(slot)
        return node.value
    }

    /// Removes every entry `matches` selects (a walk over all of them: not for the request
    /// path); returns how many.
    @discardableResult
    mutating func removeAll(where matches: (Key, Value) -> Bool) -> Int {
        var selected: [Key] = []
        var slot = self.newest
        while slot >= 0, let node = self.nodes[slot] {
            if matches(node.key, node.value) { selected.append(node.key) }
            slot = node.older
        }
        for key in selected { _ = self.remove(key) }
        return selected.count
    }

    mutating func removeAll() {
        self = LRUCache(capacity: self.capacity)
    }

    /// Keys from most to least recently used (for tests and diagnostics).
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = self.newest
        while slot >= 0, let node = self.nodes[slot] {
            keys.append(node.key)
            slot = node.older
        }
        return keys
    }

    private mutating func unlink(_ slot: Int) {
        let node = self.nodes[slot]!
        if node.newer >= 0 { self.nodes[node.newer]!.older = node.older } else { self.newest = node.older }
        if node.older >= 0 { self.nodes[node.older]!.newer = node.newer } else { self.oldest = node.newer }
    }

    private mutating func moveToNewest(_ slot: Int) {
        guard slot != self.newest else { return }
        self.unlink(slot)
        self.nodes[slot]!.older = self.newest
        self.nodes[slot]!.newer = -1
        if self.newest >= 0 { self.nodes[self.newest]!.newer = slot }
        self.newest = slot
        if self.oldest < 0 { self.oldest = slot }
    }
}
extension LRUCache: Sendable where Key: Sendable, Value: Sendable {}
extension LRUCache.Node: Sendable where Key: Sendable, Value: Sendable {}
