import Testing

@testable import AuthGateway

@Suite("RepeatedFieldTexts")
struct RepeatedFieldTextsTests {
    private static func text(_ texts: inout RepeatedFieldTexts, _ position: Int, _ value: String) -> String {
        Array(value.utf8).withUnsafeBytes { texts.text(at: position, $0) }
    }

    /// Where a `String`'s bytes live: the same address means the same storage (no new text).
    private static func address(_ text: String) -> UnsafeRawPointer? {
        text.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
    }

    @Test("a long text repeated at its position is the same String; any other text is its own")
    func repeatedTextIsReused() {
        var texts = RepeatedFieldTexts()
        let token = "Bearer " + String(repeating: "a", count: 700)
        let first = Self.text(&texts, 3, token)
        let again = Self.text(&texts, 3, token)
        #expect(again == token)
        #expect(Self.address(again) == Self.address(first))
        // The same length, one byte different (another client's token on a shared connection
        // would look like this): a new text with the new bytes, never the kept one.
        let other = "Bearer " + String(repeating: "a", count: 699) + "b"
        let changed = Self.text(&texts, 3, other)
        #expect(changed == other)
        #expect(Self.address(changed) != Self.address(first))
        // The same bytes at another position are made anew (and kept there).
        #expect(Self.text(&texts, 5, other) == other)
        #expect(Self.text(&texts, 3, other) == other)
    }

    @Test("inline texts and texts past the last position are made each time, not kept")
    func shortAndLateTextsAreNotKept() {
        var texts = RepeatedFieldTexts()
        #expect(Self.text(&texts, 0, "keep-alive") == "keep-alive")
        let late = String(repeating: "z", count: 40)
        let first = Self.text(&texts, RepeatedFieldTexts.maxPositions, late)
        let again = Self.text(&texts, RepeatedFieldTexts.maxPositions, late)
        #expect(again == late)
        #expect(Self.address(again) != Self.address(first))
    }

    @Test("an idle connection keeps at most maxKeptBytes of texts")
    func keptBytesAreBounded() {
        var texts = RepeatedFieldTexts()
        let big = String(repeating: "c", count: RepeatedFieldTexts.maxKeptBytes + 1)
        let first = Self.text(&texts, 0, big)
        #expect(first == big)
        #expect(Self.address(Self.text(&texts, 0, big)) != Self.address(first))
        // Two texts that fit together are both kept; a third that would overflow is not.
        let half = String(repeating: "d", count: RepeatedFieldTexts.maxKeptBytes / 2)
        let a = Self.text(&texts, 1, half)
        let b = Self.text(&texts, 2, half)
        let c = Self.text(&texts, 4, "0123456789abcdefg")
        #expect(Self.address(Self.text(&texts, 1, half)) == Self.address(a))
        #expect(Self.address(Self.text(&texts, 2, half)) == Self.address(b))
        #expect(Self.address(Self.text(&texts, 4, "0123456789abcdefg")) != Self.address(c))
        // Replacing a kept text frees its share.
        let shorter = String(repeating: "e", count: 100)
        _ = Self.text(&texts, 1, shorter)
        let d = Self.text(&texts, 4, "0123456789abcdefg")
        #expect(Self.address(Self.text(&texts, 4, "0123456789abcdefg")) == Self.address(d))
    }
}
