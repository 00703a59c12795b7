import Testing

@testable import AuthGateway

@Suite("SpaceSeparatedWords")
struct SpaceSeparatedWordsTests {
    @Test(
        "the same words as split(separator: \" \")",
        arguments: ["", " ", "read", "read write", "  read   write  ", "a b c", "ünï cödé", "a\tb c", "a \u{301}b c"])
    func sameAsSplit(_ text: String) {
        #expect(Array(SpaceSeparatedWords(text)) == text.split(separator: " "))
    }
}
