import Testing

@testable import AuthGateway

@Suite("VerifiedTokenCache")
struct VerifiedTokenCacheTests {
    /// The main issuer with no keys at all: nothing can verify against it.
    private func keyless(generation: UInt64) -> KeySnapshot {
        VectorKeys.snapshot(generation: generation, mainKeys: [])
    }

    private func verify(
        _ cache: VerifiedTokenCache, _ token: String, _ keys: KeySnapshot
    ) -> Result<VerifiedToken, TokenRejection> {
        cache.verify(token[...], keys: keys)
    }

    private func failure(_ result: Result<VerifiedToken, TokenRejection>) -> TokenFailure? {
        if case .failure(let rejection) = result { return rejection.failure }
        return nil
    }

    @Test("a hit skips verification within the same key generation")
    func hitSkipsVerification() throws {
        let cache = VerifiedTokenCache(capacity: 64)
        let token = VectorKeys.sign(VectorKeys.claims())
        let first = try verify(cache, token, VectorKeys.staticSnapshot).get()
        #expect(cache.count == 1)

        // Same generation, no keys: only a cache hit can succeed.
        let second = try verify(cache, token, keyless(generation: VectorKeys.staticSnapshot.generation)).get()
        #expect(second === first)

        // A higher generation is a miss, and verification with no keys fails.
        #expect(
            failure(verify(cache, token, keyless(generation: VectorKeys.staticSnapshot.generation + 1))) == .unknownKey)
    }

    @Test("without a cache (capacity 0) every call verifies")
    func disabled() {
        let cache = VerifiedTokenCache(capacity: 0)
        let token = VectorKeys.sign(VectorKeys.claims())
        #expect((try? verify(cache, token, VectorKeys.staticSnapshot).get()) != nil)
        #expect(failure(verify(cache, token, keyless(generation: VectorKeys.staticSnapshot.generation))) == .unknownKey)
        #expect(cache.count == 0)
    }

    @Test("failures are not cached")
    func failuresNotCached() throws {
        let cache = VerifiedTokenCache(capacity: 64)
        let token = VectorKeys.sign(VectorKeys.claims())
        let generation = VectorKeys.staticSnapshot.generation
        #expect(failure(verify(cache, token, keyless(generation: generation))) == .unknownKey)
        #expect(cache.count == 0)
        // Same generation, now with the key: a cached failure would still say unknown_key.
        _ = try verify(cache, token, VectorKeys.staticSnapshot).get()
        #expect(cache.count == 1)
    }

    @Test("a claims failure is not cached either")
    func claimFailureNotCached() throws {
        let cache = VerifiedTokenCache(capacity: 64)
        let token = VectorKeys.sign(VectorKeys.claims(["aud": "other"]))
        let strict = VectorKeys.staticSnapshot
        #expect(failure(verify(cache, token, strict)) == .wrongAudience)
        let lenient = KeySnapshot(
            generation: strict.generation,
            issuers: [
                VectorKeys.issuerEntry(
                    VectorKeys.issuer, keys: VectorKeys.staticIssuerKeys, audiences: nil, requiredClaims: [])
            ])
        _ = try verify(cache, token, lenient).get()
    }

    @Test("the clock check is not cached: an entry stays, time decides")
    func timeNotCached() throws {
        let cache = VerifiedTokenCache(capacity: 64)
        let token = VectorKeys.sign(VectorKeys.claims())
        let verified = try verify(cache, token, VectorKeys.staticSnapshot).get()
        #expect(verified.timeFailure(now: VectorKeys.now) == nil)
        let later = try verify(cache, token, VectorKeys.staticSnapshot).get()
        #expect(later === verified)
        #expect(later.timeFailure(now: 1_700_003_600 + 30) == .expired)
    }

    @Test("distinct tokens are distinct entries")
    func distinctTokens() throws {
        let cache = VerifiedTokenCache(capacity: 64)
        let alice = try verify(cache, VectorKeys.sign(VectorKeys.claims(["sub": "alice"])), VectorKeys.staticSnapshot)
            .get()
        let bob = try verify(cache, VectorKeys.sign(VectorKeys.claims(["sub": "bob"])), VectorKeys.staticSnapshot).get()
        #expect(alice.subject == "alice")
        #expect(bob.subject == "bob")
        #expect(cache.count == 2)
    }

    private func tokens(_ count: Int) -> [String] {
        (0..<count).map { VectorKeys.sign(VectorKeys.claims(["jti": .string("token-\($0)")])) }
    }

    @Test("the cache never holds more than its capacity (a multiple of the shard count)")
    func capacityBound() {
        let cache = VerifiedTokenCache(capacity: 32)
        for token in tokens(300) {
            #expect((try? verify(cache, token, VectorKeys.staticSnapshot).get()) != nil)
            #expect(cache.count <= 32)
        }
        #expect(cache.count > 0)
    }

    @Test("the cache never holds more than its capacity (any capacity)", arguments: [1, 10, 20])
    func capacityBoundAnyCapacity(capacity: Int) {
        let cache = VerifiedTokenCache(capacity: capacity)
        var peak = 0
        for token in tokens(200) {
            _ = verify(cache, token, VectorKeys.staticSnapshot)
            peak = max(peak, cache.count)
        }
        #expect(peak <= capacity, "verifiedCacheEntries \(capacity) held up to \(peak) entries")
    }

    @Test("TokenDigest: equal tokens give equal digests, different tokens different ones")
    func digest() {
        #expect(TokenDigest(of: "abc"[...]) == TokenDigest(of: "abc"[...]))
        #expect(TokenDigest(of: "abc"[...]) != TokenDigest(of: "abd"[...]))
        #expect(TokenDigest(of: "xabcx".dropFirst().dropLast()) == TokenDigest(of: "abc"[...]))
    }
}
