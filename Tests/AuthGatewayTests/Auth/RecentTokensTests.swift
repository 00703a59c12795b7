import Testing

@testable import AuthGateway

@Suite("RecentTokens")
struct RecentTokensTests {
    private let generation = VectorKeys.staticSnapshot.generation

    /// The main issuer with no keys: only a memo or cache hit can succeed against it.
    private func keyless(generation: UInt64) -> KeySnapshot {
        VectorKeys.snapshot(generation: generation, mainKeys: [])
    }

    private func failure(_ result: Result<VerifiedToken, TokenRejection>) -> TokenFailure? {
        if case .failure(let rejection) = result { return rejection.failure }
        return nil
    }

    /// Verifies `token` three times through a shared cache of its own: the second and third
    /// times are cache hits, and the second hit in a row puts the token into the memo.
    private func remember(_ token: String, in memo: RecentTokens) throws -> VerifiedToken {
        let shared = VerifiedTokenCache(capacity: 64)
        let first = try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: shared).get()
        for _ in 0..<2 {
            #expect(try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: shared).get() === first)
        }
        return first
    }

    /// Whether the memo alone answers `token` (a fresh shared cache and no keys).
    private func memoized(_ token: String, in memo: RecentTokens) -> Bool {
        (try? memo.verify(token[...], keys: keyless(generation: generation), through: VerifiedTokenCache(capacity: 64))
            .get()) != nil
    }

    @Test("a repeated token is answered by the memo, without the shared cache")
    func hitWithoutSharedCache() throws {
        let memo = RecentTokens()
        let token = VectorKeys.sign(VectorKeys.claims())
        let first = try remember(token, in: memo)
        // A fresh (empty) shared cache and no keys: only the memo can say yes.
        let third = try memo.verify(
            token[...], keys: keyless(generation: generation), through: VerifiedTokenCache(capacity: 64)
        ).get()
        #expect(third === first)
    }

    @Test("a token verified only once is not memoized (one-off tokens do not displace repeated ones)")
    func firstSightingNotMemoized() throws {
        let memo = RecentTokens()
        let token = VectorKeys.sign(VectorKeys.claims())
        _ = try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: VerifiedTokenCache(capacity: 64))
            .get()
        #expect(
            failure(
                memo.verify(
                    token[...], keys: keyless(generation: generation), through: VerifiedTokenCache(capacity: 64)))
                == .unknownKey)
    }

    @Test("one shared-cache hit is not enough: the second in a row at the slot memoizes the token")
    func secondHitMemoizes() throws {
        let memo = RecentTokens()
        let shared = VerifiedTokenCache(capacity: 64)
        let token = VectorKeys.sign(VectorKeys.claims())
        _ = try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: shared).get()
        _ = try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: shared).get()
        #expect(!memoized(token, in: memo), "one hit")
        _ = try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: shared).get()
        #expect(memoized(token, in: memo), "two hits")
    }

    @Test("tokens that take turns at one slot never enter it, and never evict the one it holds")
    func tokensInTurnDoNotChurn() throws {
        let memo = RecentTokens(slotCount: 1)
        let held = VectorKeys.sign(VectorKeys.claims(["sub": "held"]))
        _ = try remember(held, in: memo)
        let shared = VerifiedTokenCache(capacity: 64)
        let others = (0..<4).map { VectorKeys.sign(VectorKeys.claims(["sub": .string("other-\($0)")])) }
        for other in others { _ = try memo.verify(other[...], keys: VectorKeys.staticSnapshot, through: shared).get() }
        for _ in 0..<3 {
            for other in others {
                _ = try memo.verify(other[...], keys: VectorKeys.staticSnapshot, through: shared).get()
            }
        }
        #expect(memoized(held, in: memo), "the held token stays")
        #expect(!others.contains { memoized($0, in: memo) })
    }

    @Test("a token that differs in one byte but shares the slot is not a hit")
    func wholeTokenMustMatch() throws {
        let memo = RecentTokens(slotCount: 1)  // every token shares the one slot
        let token = VectorKeys.sign(VectorKeys.claims(["sub": "alice"]))
        _ = try remember(token, in: memo)
        // Change one payload byte; length and signature (the slot's hash input) stay.
        var bytes = Array(token.utf8)
        let payloadByte = bytes.firstIndex(of: UInt8(ascii: "."))! + 5
        bytes[payloadByte] = bytes[payloadByte] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let tampered = String(decoding: bytes, as: UTF8.self)
        #expect(tampered.utf8.count == token.utf8.count)
        #expect(
            failure(
                memo.verify(
                    tampered[...], keys: keyless(generation: generation), through: VerifiedTokenCache(capacity: 64)))
                != nil)
        #expect(
            failure(
                memo.verify(tampered[...], keys: VectorKeys.staticSnapshot, through: VerifiedTokenCache(capacity: 64)))
                != nil)
    }

    @Test("a new key generation is a miss")
    func generationChange() throws {
        let memo = RecentTokens()
        let token = VectorKeys.sign(VectorKeys.claims())
        _ = try remember(token, in: memo)
        #expect(
            failure(
                memo.verify(
                    token[...], keys: keyless(generation: generation + 1), through: VerifiedTokenCache(capacity: 64)))
                == .unknownKey)
    }

    @Test("failures are not remembered")
    func failuresNotRemembered() throws {
        let memo = RecentTokens()
        let token = VectorKeys.sign(VectorKeys.claims())
        #expect(
            failure(
                memo.verify(
                    token[...], keys: keyless(generation: generation), through: VerifiedTokenCache(capacity: 64)))
                == .unknownKey)
        _ = try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: VerifiedTokenCache(capacity: 64))
            .get()
    }

    @Test("with the verified-token cache disabled, every request verifies")
    func disabledWithSharedCache() throws {
        let memo = RecentTokens()
        let disabled = VerifiedTokenCache(capacity: 0)
        let token = VectorKeys.sign(VectorKeys.claims())
        _ = try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: disabled).get()
        _ = try memo.verify(token[...], keys: VectorKeys.staticSnapshot, through: disabled).get()
        #expect(
            failure(memo.verify(token[...], keys: keyless(generation: generation), through: disabled)) == .unknownKey)
    }
}
