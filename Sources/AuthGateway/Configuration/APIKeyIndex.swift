/// API keys by digest, sized for a million (docs/policies.md, "API keys"): open addressing over
/// an array of 32-bit positions, a power of two at least twice the key count, probed linearly
/// from the digest's first word (already uniformly random). 8 bytes a key; a dictionary of
/// digest to key spent ~150 bytes a key in empty buckets alone.
///
/// The loader builds it once, and learns from it which digests are listed twice; the gateway's
/// `APIKeyTable` looks every presented key up in it.
struct APIKeyIndex: Sendable {
    /// A position in the entries plus one; 0: empty.
    private let slots: [UInt32]

    /// The index of `entries`, and the positions of entries whose digest an earlier one has
    /// (those are not indexed: the first wins).
    static func build(_ entries: [APIKeyEntry]) -> (index: APIKeyIndex, repeated: [Int]) {
        var capacity = 2
        while capacity < 2 * entries.count { capacity *= 2 }
        var slots = [UInt32](repeating: 0, count: capacity)
        var repeated: [Int] = []
        for (position, entry) in entries.enumerated() {
            var slot = Self.firstSlot(entry.digest, capacity: capacity)
            while slots[slot] != 0 && entries[Int(slots[slot]) - 1].digest != entry.digest {
                slot = (slot + 1) & (capacity - 1)
            }
            if slots[slot] == 0 { slots[slot] = UInt32(position + 1) } else { repeated.append(position) }
        }
        return (APIKeyIndex(slots: slots), repeated)
    }

    private init(slots: [UInt32]) { self.slots = slots }

    /// The position in `entries` (those it was built from) of the key whose digest is `digest`.
    func position(of digest: TokenDigest, in entries: [APIKeyEntry]) -> Int? {
        var slot = Self.firstSlot(digest, capacity: self.slots.count)
        while true {
            let held = Int(self.slots[slot])
            if held == 0 { return nil }
            if entries[held - 1].digest == digest { return held - 1 }
            slot = (slot + 1) & (self.slots.count - 1)
        }
    }

    private static func firstSlot(_ digest: TokenDigest, capacity: Int) -> Int {
        Int(truncatingIfNeeded: digest.words.0) & (capacity - 1)
    }
}
