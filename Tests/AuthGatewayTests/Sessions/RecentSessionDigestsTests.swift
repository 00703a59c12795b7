import Testing

@testable import AuthGateway

@Suite("RecentSessionDigests")
struct RecentSessionDigestsTests {
    private func handle(_ text: String) -> SessionHandle? { SessionHandle(cookieValue: text[...]) }

    @Test("a remembered handle gives its own digest; a handle sharing its slot gets its own, not the memo's")
    func digests() throws {
        let memo = RecentSessionDigests(slotCount: 1)
        let first = try #require(self.handle(String(repeating: "a", count: 43)))
        let second = try #require(self.handle(String(repeating: "a", count: 42) + "b"))
        #expect(memo.digest(of: first) == first.digest)
        memo.remember(first, digest: first.digest)
        #expect(memo.digest(of: first) == first.digest)
        #expect(memo.digest(of: second) == second.digest, "same slot, different handle: computed")
        #expect(second.digest != first.digest)
        memo.remember(second, digest: second.digest)
        #expect(memo.digest(of: first) == first.digest, "evicted: computed again, still right")
        #expect(memo.digest(of: second) == second.digest)
    }

    @Test("every generated handle's digest is the same through the memo as without it")
    func generated() {
        let memo = RecentSessionDigests(slotCount: 4)
        let handles = (0..<32).map { _ in SessionHandle.generate() }
        for handle in handles { memo.remember(handle, digest: handle.digest) }
        for handle in handles { #expect(memo.digest(of: handle) == handle.digest) }
    }
}
