import Testing

@testable import AuthGateway

/// The rate-limit tables' bounded map: second-chance eviction, one lookup per update, and the
/// property a limit relies on: a flood of new keys cannot push out a key in use.
@Suite("ClockCache")
struct ClockCacheTests {
    @Test("update reads, stores or leaves a value in one lookup; peek reads only")
    func updateAndPeek() {
        var cache = ClockCache<String, Int>(capacity: 4)
        #expect(cache.update("a") { value in (value, 1) } == nil)
        #expect(cache.update("a") { value in (value, nil) } == 1)
        #expect(cache.update("b") { value in (value, nil) } == nil)
        #expect(cache.count == 1, "an absent key with nothing to store is not inserted")
        cache.set("a", 2)
        #expect(cache.peek("a") == 2)
        #expect(cache.peek("b") == nil)
    }

    @Test("when full, the hand spares a used entry once and evicts the first unused one")
    func secondChance() {
        var cache = ClockCache<String, Int>(capacity: 3)
        for key in ["a", "b", "c"] { cache.set(key, 0) }
        cache.set("a", 1)  // used
        cache.set("d", 0)  // the hand clears a's bit, evicts b
        #expect(cache.keysBySlot == ["a", "d", "c"])
        cache.set("e", 0)  // the hand is at c: unused, evicted
        #expect(cache.keysBySlot == ["a", "d", "e"])
        cache.set("f", 0)  // a lost its second chance at the first sweep: evicted now
        #expect(cache.keysBySlot == ["f", "d", "e"])
        #expect(cache.peek("a") == nil && cache.peek("f") == 0)
    }

    @Test("every entry used: one turn of the hand, then the oldest slot goes")
    func allUsed() {
        var cache = ClockCache<Int, Int>(capacity: 5)
        for key in 0..<5 { cache.set(key, key) }
        for key in 0..<5 { cache.set(key, key) }
        cache.set(99, 99)
        #expect(cache.count == 5)
        #expect(cache.keysBySlot == [99, 1, 2, 3, 4])
    }

    /// A hot key used at least once per turn of the hand (capacity new keys) survives any
    /// flood; one used less often does not. This is what lets an attacker's stream of new
    /// addresses never reset a busy client's bucket.
    @Test("a key used once per 500 new keys survives 100,000 new keys in 1,000 slots; once per 2,000 does not")
    func keysInUseSurviveAFlood() {
        for (every, survives) in [(500, true), (999, true), (2_000, false)] {
            var cache = ClockCache<Int, Int>(capacity: 1_000)
            cache.set(-1, 0)
            var held = true
            for key in 0..<100_000 {
                if key % every == 0 { cache.update(-1) { ((), $0.map { $0 + 1 }) } }
                cache.set(key, 0)
                held = held && cache.peek(-1) != nil
            }
            #expect(held == survives, "used once per \(every) new keys")
        }
    }

    @Test("a removed entry's slot is taken by the next new key, before anything is evicted")
    func removalFreesASlot() {
        var cache = ClockCache<String, Int>(capacity: 3)
        for key in ["a", "b", "c"] { cache.set(key, 0) }
        #expect(cache.remove("b") == 0)
        #expect(cache.remove("b") == nil)
        cache.set("d", 1)
        #expect(cache.keysBySlot == ["a", "d", "c"])
        #expect(cache.removeAll { key, _ in key != "d" } == 2)
        #expect(cache.count == 1 && cache.entries.map(\.key) == ["d"])
    }

    @Test("random updates and removals: bounded, no eviction while a slot is free, held keys keep their values")
    func randomUpdates() {
        var random = SeededRandom(seed: 0x5EED_C10C)
        for capacity in [1, 2, 7, 64] {
            var cache = ClockCache<Int, Int>(capacity: capacity)
            var stored: [Int: Int] = [:]
            for step in 0..<20_000 {
                let key = random.int(0...(capacity * 3))
                let before = cache.count
                let wasHeld = cache.peek(key) != nil
                switch random.int(0...9) {
                case 0...5:
                    cache.set(key, step)
                    stored[key] = step
                    #expect(cache.peek(key) == step)
                    #expect(cache.count == (wasHeld || before == capacity ? before : before + 1))
                case 6...7:
                    let seen = cache.get(key)
                    #expect(seen == nil || seen == stored[key])
                    #expect(cache.count == before)
                default:
                    let removed = cache.remove(key)
                    #expect(removed == (wasHeld ? stored[key] : nil))
                    #expect(cache.peek(key) == nil && cache.count == before - (wasHeld ? 1 : 0))
                }
                #expect(cache.count <= capacity)
            }
            let held = cache.keysBySlot.compactMap { $0 }
            #expect(Set(held).count == cache.count && held.count == cache.count)
            for key in held { #expect(cache.peek(key) == stored[key]) }
        }
    }
}
