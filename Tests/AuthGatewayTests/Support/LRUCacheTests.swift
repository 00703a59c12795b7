import Testing

import AuthGatewayTesting
@testable import AuthGateway

@Suite("LRUCache")
struct LRUCacheTests {
    @Test("never holds more than its capacity")
    func capacityBound() {
        var cache = LRUCache<Int, String>(capacity: 3)
        for key in 0..<10 {
            cache.set(key, "v\(key)")
            #expect(cache.count == min(key + 1, 3))
        }
        #expect(cache.keysByRecency == [9, 8, 7])
        #expect(cache.peek(6) == nil)
    }

    @Test("evicts the least recently used entry and returns it")
    func evictionOrder() {
        var cache = LRUCache<String, Int>(capacity: 3)
        #expect(cache.set("a", 1) == nil)
        #expect(cache.set("b", 2) == nil)
        #expect(cache.set("c", 3) == nil)
        let evicted = cache.set("d", 4)
        #expect(evicted?.key == "a")
        #expect(evicted?.value == 1)
        #expect(cache.get("a") == nil)
        #expect(cache.keysByRecency == ["d", "c", "b"])
        #expect(cache.set("e", 5)?.key == "b")
    }

    @Test("get refreshes recency")
    func getRefreshes() {
        var cache = LRUCache<String, Int>(capacity: 3)
        cache.set("a", 1)
        cache.set("b", 2)
        cache.set("c", 3)
        #expect(cache.get("a") == 1)
        #expect(cache.keysByRecency == ["a", "c", "b"])
        #expect(cache.set("d", 4)?.key == "b")
        #expect(cache.get("a") == 1)
    }

    @Test("peek does not refresh recency")
    func peekDoesNotRefresh() {
        var cache = LRUCache<String, Int>(capacity: 3)
        cache.set("a", 1)
        cache.set("b", 2)
        cache.set("c", 3)
        #expect(cache.peek("a") == 1)
        #expect(cache.keysByRecency == ["c", "b", "a"])
        #expect(cache.set("d", 4)?.key == "a")
    }

    @Test("setting an existing key replaces its value, refreshes it and evicts nothing")
    func replaceRefreshes() {
        var cache = LRUCache<String, Int>(capacity: 2)
        cache.set("a", 1)
        cache.set("b", 2)
        #expect(cache.set("a", 10) == nil)
        #expect(cache.count == 2)
        #expect(cache.peek("a") == 10)
        #expect(cache.set("c", 3)?.key == "b")
        #expect(cache.keysByRecency == ["c", "a"])
    }

    @Test("remove unlinks from any position, and freed slots are reused correctly")
    func removeAndReinsert() {
        var cache = LRUCache<Int, Int>(capacity: 4)
        for key in 1...4 { cache.set(key, key * 10) }
        // Middle, newest and oldest.
        #expect(cache.remove(2) == 20)
        #expect(cache.keysByRecency == [4, 3, 1])
        #expect(cache.remove(4) == 40)
        #expect(cache.keysByRecency == [3, 1])
        #expect(cache.remove(1) == 10)
        #expect(cache.keysByRecency == [3])
        #expect(cache.remove(1) == nil)
        #expect(cache.count == 1)
        // Reinsert into the freed slots; order and eviction must stay right.
        cache.set(5, 50)
        cache.set(6, 60)
        cache.set(7, 70)
        #expect(cache.keysByRecency == [7, 6, 5, 3])
        #expect(cache.count == 4)
        #expect(cache.set(8, 80)?.key == 3)
        #expect(cache.get(5) == 50)
        #expect(cache.set(9, 90)?.key == 6)
        #expect(cache.keysByRecency == [9, 5, 8, 7])
        // Remove everything, then use again.
        for key in [9, 5, 8, 7] { #expect(cache.remove(key) != nil) }
        #expect(cache.count == 0)
        #expect(cache.keysByRecency == [])
        cache.set(1, 1)
        cache.set(2, 2)
        #expect(cache.keysByRecency == [2, 1])
        #expect(cache.get(1) == 1)
        #expect(cache.keysByRecency == [1, 2])
    }

    @Test("capacity 1 keeps only the last entry")
    func capacityOne() {
        var cache = LRUCache<Int, Int>(capacity: 1)
        cache.set(1, 1)
        #expect(cache.set(2, 2)?.key == 1)
        #expect(cache.get(2) == 2)
        #expect(cache.get(1) == nil)
        #expect(cache.remove(2) == 2)
        #expect(cache.set(3, 3) == nil)
        #expect(cache.keysByRecency == [3])
    }

    @Test("removeAll empties the cache and keeps the capacity")
    func removeAll() {
        var cache = LRUCache<Int, Int>(capacity: 2)
        cache.set(1, 1)
        cache.set(2, 2)
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache.get(1) == nil)
        cache.set(3, 3)
        cache.set(4, 4)
        #expect(cache.set(5, 5)?.key == 3)
    }

    /// An obviously correct LRU: keys ordered from least to most recently used.
    private struct ReferenceLRU {
        let capacity: Int
        var order: [Int] = []
        var values: [Int: Int] = [:]

        mutating func get(_ key: Int) -> Int? {
            guard let value = self.values[key] else { return nil }
            self.order.removeAll { $0 == key }
            self.order.append(key)
            return value
        }

        func peek(_ key: Int) -> Int? { self.values[key] }

        mutating func set(_ key: Int, _ value: Int) -> (key: Int, value: Int)? {
            if self.values[key] != nil {
                self.values[key] = value
                self.order.removeAll { $0 == key }
                self.order.append(key)
                return nil
            }
            var evicted: (key: Int, value: Int)?
            if self.order.count >= self.capacity {
                let victim = self.order.removeFirst()
                evicted = (victim, self.values.removeValue(forKey: victim)!)
            }
            self.order.append(key)
            self.values[key] = value
            return evicted
        }

        mutating func remove(_ key: Int) -> Int? {
            guard let value = self.values.removeValue(forKey: key) else { return nil }
            self.order.removeAll { $0 == key }
            return value
        }
    }

    @Test(
        "behaves like a reference model over random operations",
        arguments: [(1, 1), (4, 2), (8, 3), (16, 4)] as [(Int, UInt64)])
    func randomizedAgainstReference(capacity: Int, seed: UInt64) {
        // Seeded, so a failure can be replayed from its seed.
        var generator = RequestIDGenerator(seed: seed)
        var cache = LRUCache<Int, Int>(capacity: capacity)
        var model = ReferenceLRU(capacity: capacity)
        let keySpace = capacity * 3
        for step in 0..<4000 {
            let key = Int.random(in: 0..<keySpace, using: &generator)
            let value = Int.random(in: 0..<1_000_000, using: &generator)
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<4:
                let expected = model.set(key, value)
                let actual = cache.set(key, value)
                #expect(actual?.key == expected?.key && actual?.value == expected?.value, "step \(step) set(\(key))")
            case 4..<7:
                #expect(cache.get(key) == model.get(key), "step \(step) get(\(key))")
            case 7..<8:
                #expect(cache.peek(key) == model.peek(key), "step \(step) peek(\(key))")
            default:
                #expect(cache.remove(key) == model.remove(key), "step \(step) remove(\(key))")
            }
            #expect(cache.count == model.values.count)
            #expect(cache.keysByRecency == model.order.reversed(), "step \(step)")
            if cache.keysByRecency != model.order.reversed() { return }
        }
    }
}
