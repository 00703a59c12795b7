import Testing

@testable import AuthGateway

@Suite("ASCII case-insensitive comparisons")
struct ASCIITests {
    @Test(arguments: [
        ("Authorization", "authorization", true),
        ("X-REQUEST-ID", "x-request-id", true),
        ("content-length", "Content-Length", true),
        ("content-length", "content-lengtx", false),
        ("Host", "Hos", false),
        ("", "", true),
        // Only ASCII letters fold: `@` (0x40) and `` ` `` (0x60) differ by the case bit but are
        // not letters, and neither are `[` (0x5B) and `{` (0x7B).
        ("a@b", "a`b", false),
        ("[", "{", false),
        // Non-ASCII bytes are compared as they are.
        ("café", "CAFÉ", false),
        ("café", "CAFé", true),
    ])
    func equalsIgnoringCase(_ lhs: String, _ rhs: String, _ expected: Bool) {
        #expect(ASCII.equalsIgnoringCase(lhs, rhs) == expected)
        #expect(ASCII.equalsIgnoringCase(rhs, lhs) == expected)
        // Substrings (of a longer text, so that their bytes do not start at the text's first).
        let left = "<<\(lhs)>>", right = "(\(rhs))"
        let leftPart = left.dropFirst(2).dropLast(2), rightPart = right.dropFirst().dropLast()
        #expect(ASCII.equalsIgnoringCase(leftPart, rightPart) == expected)
        #expect(ASCII.equalsIgnoringCase(leftPart, rhs) == expected)
    }

    @Test func aPrefixIsMatchedIgnoringCase() {
        #expect(ASCII.hasPrefixIgnoringCase("Bearer abc", "bearer "))
        #expect(ASCII.hasPrefixIgnoringCase("DPoP abc"[...], "dpop"))
        #expect(!ASCII.hasPrefixIgnoringCase("Bear", "bearer"))
        #expect(!ASCII.hasPrefixIgnoringCase("Basic abc", "bearer"))
    }
}
