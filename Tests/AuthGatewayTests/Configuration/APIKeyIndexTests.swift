import Testing

@testable import AuthGateway

/// `APIKeyIndex` (docs/policies.md, "API keys"): every key found where it is, no unknown digest
/// found, a digest listed twice reported once and the first kept, whatever the probing has to do.
@Suite("APIKeyIndex")
struct APIKeyIndexTests {
    /// A digest whose first word (the slot it starts probing from) is `slot`, so that tests
    /// decide which digests collide.
    static func digest(slot: UInt64, rest: UInt64) -> TokenDigest {
        var bytes: [UInt8] = []
        for word in [slot, rest, ~rest, rest &* 31] { withUnsafeBytes(of: word) { bytes.append(contentsOf: $0) } }
        return TokenDigest(bytes: bytes)!
    }

    static func entry(_ digest: TokenDigest, _ id: String) -> APIKeyEntry {
        APIKeyEntry(id: id, digest: digest, claims: ["sub": .string(id)])
    }

    @Test("random tables: each entry at its position, other digests absent, repeats reported (property)")
    func randomTables() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            let count = Int.random(in: 0...300, using: &generator)
            // Few first words for many keys: long probe chains, wrapping at the array's end.
            let slots = UInt64.random(in: 1...max(1, UInt64(count)), using: &generator)
            var entries: [APIKeyEntry] = []
            var expected: [TokenDigest: Int] = [:]
            var repeats: [Int] = []
            for position in 0..<count {
                let digest: TokenDigest
                if position > 0 && Int.random(in: 0..<10, using: &generator) == 0 {
                    digest = entries[Int.random(in: 0..<position, using: &generator)].digest
                    repeats.append(position)
                } else {
                    digest = Self.digest(
                        slot: UInt64.random(in: 0..<slots, using: &generator) &* 0x9E37_79B9 | (UInt64.max << 60),
                        rest: UInt64(round) << 32 | UInt64(position))
                }
                if expected[digest] == nil { expected[digest] = position }
                entries.append(Self.entry(digest, "k\(position)"))
            }
            let (index, repeated) = APIKeyIndex.build(entries)
            #expect(repeated == repeats)
            for (digest, position) in expected {
                #expect(index.position(of: digest, in: entries) == position)
            }
            for stranger in 0..<20 {
                let digest = Self.digest(
                    slot: UInt64.random(in: 0..<slots, using: &generator) &* 0x9E37_79B9 | (UInt64.max << 60),
                    rest: UInt64.max - UInt64(stranger))
                #expect(index.position(of: digest, in: entries) == nil)
            }
        }
    }

    @Test("a full-width table: 2^k keys all on one starting slot still end")
    func oneChain() {
        let entries = (0..<64).map { Self.entry(Self.digest(slot: 7, rest: UInt64($0)), "k\($0)") }
        let (index, repeated) = APIKeyIndex.build(entries)
        #expect(repeated.isEmpty)
        for (position, entry) in entries.enumerated() {
            #expect(index.position(of: entry.digest, in: entries) == position)
        }
        #expect(index.position(of: Self.digest(slot: 7, rest: 1000), in: entries) == nil)
    }

    @Test("the table finds keys through the loader's index, and builds its own when the keys changed")
    func tableUsesEitherIndex() {
        let entries = (0..<50).map { number in
            APIKeyEntry(
                id: "k\(number)", digest: TokenDigest(of: "key-\(number)"[...]), claims: ["sub": .string("s\(number)")])
        }
        var configuration = APIKeysConfiguration(keys: entries)
        #expect(configuration.index == nil)
        configuration.index = APIKeyIndex.build(entries).index
        let built = APIKeyTable(configuration)
        configuration.keys = Array(entries.reversed())
        #expect(configuration.index == nil, "changing the keys drops the index built for the old ones")
        let rebuilt = APIKeyTable(configuration)
        for table in [built, rebuilt] {
            for number in 0..<50 {
                let key = table.key("key-\(number)")
                #expect(key?.id == "k\(number)")
                #expect(key?.token.subject == "s\(number)")
            }
            #expect(table.key("key-50") == nil)
        }
    }
}
