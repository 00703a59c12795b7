import Testing

@testable import AuthGateway

@Suite("FieldTextCache")
struct FieldTextCacheTests {
    /// Where a string's bytes live: the same address means the same storage (no new allocation).
    private func storage(_ text: String) -> UnsafePointer<UInt8>? {
        var text = text
        return text.withUTF8 { $0.baseAddress }
    }

    private func value(_ cache: inout FieldTextCache, _ text: String) -> String {
        Array(text.utf8).withUnsafeBytes { cache.value($0, 0, $0.count) }
    }

    private func name(_ cache: inout FieldTextCache, _ text: String) -> String {
        Array(text.utf8).withUnsafeBytes { cache.name($0, 0, $0.count) }
    }

    @Test("a long value seen again is the same string; names come lower-cased")
    func repeated() {
        var cache = FieldTextCache()
        let date = "Sat, 21 Nov 2026 12:00:00 GMT"
        let first = value(&cache, date)
        let second = value(&cache, date)
        #expect(first == date && second == date)
        #expect(storage(first) == storage(second))
        #expect(name(&cache, "Strict-Transport-Security") == "strict-transport-security")
        #expect(
            storage(name(&cache, "STRICT-TRANSPORT-SECURITY")) != storage(name(&cache, "Strict-Transport-Security")))
        #expect(
            storage(name(&cache, "Strict-Transport-Security")) == storage(name(&cache, "Strict-Transport-Security")))
    }

    @Test("the same bytes as a name and as a value are two texts")
    func nameAndValueApart() {
        var cache = FieldTextCache()
        let text = "Application/Octet-Stream"
        #expect(name(&cache, text) == "application/octet-stream")
        #expect(value(&cache, text) == text)
        #expect(name(&cache, text) == "application/octet-stream")
    }

    @Test("a different value of the same length is not mistaken for a cached one")
    func sameLength() {
        var cache = FieldTextCache()
        #expect(value(&cache, "Sat, 21 Nov 2026 12:00:00 GMT") == "Sat, 21 Nov 2026 12:00:00 GMT")
        #expect(value(&cache, "Sat, 21 Nov 2026 12:00:01 GMT") == "Sat, 21 Nov 2026 12:00:01 GMT")
    }

    @Test("short and very long texts are made every time, and right")
    func uncached() {
        var cache = FieldTextCache()
        #expect(name(&cache, "Content-Type") == "content-type")
        #expect(value(&cache, "") == "")
        let long = String(repeating: "x", count: FieldTextCache.maxCachedBytes + 1)
        #expect(value(&cache, long) == long)
        let once = value(&cache, long)
        let twice = value(&cache, long)
        #expect(storage(once) != storage(twice), "both alive, so two allocations unless cached")
    }

    @Test("past its capacity the oldest entry is replaced, and every answer stays right")
    func rotation() {
        var cache = FieldTextCache()
        let texts = (0...FieldTextCache.capacity).map { "value-number-\($0)-of-the-cache" }
        let first = value(&cache, texts[0])
        for text in texts.dropFirst() { #expect(value(&cache, text) == text) }
        let again = value(&cache, texts[0])
        #expect(again == texts[0])
        #expect(storage(again) != storage(first), "evicted by the ninth text, so made anew")
        #expect(storage(value(&cache, texts[0])) == storage(again))
    }
}
