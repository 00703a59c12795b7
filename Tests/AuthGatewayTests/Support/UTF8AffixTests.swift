import Testing

@testable import AuthGateway

@Suite("UTF8Affix")
struct UTF8AffixTests {
    @Test("prefixes and suffixes by UTF-8 bytes, on whole strings and on slices")
    func affixes() {
        #expect(UTF8Affix.hasPrefix("ann@example.com", "ann@"))
        #expect(UTF8Affix.hasSuffix("ann@example.com", "@example.com"))
        #expect(!UTF8Affix.hasSuffix("ann@example.com", "@example.org"))
        #expect(!UTF8Affix.hasPrefix("a", "ab"))
        #expect(UTF8Affix.hasPrefix("abc", "abc") && UTF8Affix.hasSuffix("abc", "abc"))
        let words = "orders:read profile"
        let first = words[..<words.firstIndex(of: " ")!]
        #expect(UTF8Affix.hasSuffix(first, ":read"))
        #expect(!UTF8Affix.hasSuffix(first, "profile"))
        #expect(UTF8Affix.hasPrefix("Zoë", "Zo\u{EB}"))
        // Bytes, not canonical equivalence: a decomposed ë is other bytes.
        #expect(!UTF8Affix.hasPrefix("Zoë", "Zoe\u{308}"))
    }
}
