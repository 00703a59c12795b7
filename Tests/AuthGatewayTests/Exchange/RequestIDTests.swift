import Testing

@testable import AuthGateway

@Suite("RequestID")
struct RequestIDTests {
    @Test(
        "well-formed ids are kept",
        arguments: [
            "a", "abc-123", "A.b_c:d-e", "550e8400-e29b-41d4-a716-446655440000", String(repeating: "x", count: 128),
        ])
    func keepsWellFormed(_ id: String) {
        var generator = RequestIDGenerator()
        #expect(RequestID.isWellFormed(id))
        #expect(RequestID.forwardedOrNew(id, using: &generator) == id)
    }

    @Test(
        "bad ids are replaced",
        arguments: [
            "", String(repeating: "x", count: 129), "a b", "a/b", "a\"b", "a\r\nX-Evil: 1", "caf\u{E9}", "a,b", "a;b",
            "<script>", "a\u{0}",
        ])
    func replacesBad(_ id: String) {
        var generator = RequestIDGenerator()
        #expect(!RequestID.isWellFormed(id))
        let replacement = RequestID.forwardedOrNew(id, using: &generator)
        #expect(replacement != id)
        #expect(RequestID.isWellFormed(replacement))
        #expect(replacement.count == 15)
    }

    @Test("a missing id is generated")
    func missing() {
        var generator = RequestIDGenerator()
        #expect(RequestID.forwardedOrNew(nil, using: &generator).count == 15)
    }

    @Test("generated ids are 15 lower-case base32 characters and unique over 10000")
    func generated() {
        var seen = Set<String>()
        let alphabet = Set("0123456789abcdefghijklmnopqrstuv")
        var characters = Set<Character>()
        for _ in 0..<10_000 {
            let id = RequestID.generate()
            #expect(id.utf8.count == 15)
            #expect(id.allSatisfy { alphabet.contains($0) })
            #expect(RequestID.isWellFormed(id))
            seen.insert(id)
            characters.formUnion(id)
        }
        #expect(seen.count == 10_000)
        // The whole alphabet is in use (the bits are not stuck).
        #expect(characters == alphabet)
    }

    @Test("every character position varies")
    func positionsVary() {
        let ids = (0..<2000).map { _ in Array(RequestID.generate()) }
        for position in 0..<15 {
            #expect(Set(ids.map { $0[position] }).count > 16, "position \(position)")
        }
    }

    @Test("the per-loop generator gives unique, well-spread ids; two generators differ")
    func perLoopGenerator() {
        var first = RequestIDGenerator()
        var second = RequestIDGenerator()
        let ids = (0..<10_000).map { _ in RequestID.generate(using: &first) }
        #expect(Set(ids).count == 10_000)
        for position in 0..<15 {
            #expect(Set(ids.map { Array($0)[position] }).count == 32, "position \(position)")
        }
        // Seeded from the system source: two loops do not produce the same sequence.
        #expect(RequestID.generate(using: &second) != ids[0])
    }
}
