#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One event loop's memo of the tokens it verified last, in front of the process-wide
/// `VerifiedTokenCache`.
///
/// A keep-alive client sends the same token on every request. The shared cache costs a
/// SHA-256 of the token, a shard lock and a dictionary probe per hit (measured: ~2.5 % of the CPU
/// of a proxied `GET`); this memo costs a hash of the token's last bytes and one byte-wise
/// comparison with the stored token, and it is confined to its loop, so it takes no lock.
///
/// It only ever holds what the shared cache returned as verified, and an entry is used only
/// when the whole token is byte-for-byte the stored one and was verified under the current
/// key generation, so it decides nothing the shared cache would not: the shared cache still
/// verifies each token once per process, and callers still run the clock checks on every hit.
/// Direct-mapped: a colliding token simply replaces the slot's entry. A token enters on its
/// second shared-cache hit in a row at its slot, so one-off tokens never displace repeated
/// ones, and many clients' tokens in turn (100,000 live tokens: docs/benchmarks.md, "Cost at
/// scale") neither copy each token into the memo nor read the evicted entry's cold memory: a
/// miss compares the token's hash with the one stored inline in its slot, and stops there.
package final class RecentTokens {
    private struct Entry {
        let hash: Int
        let token: String
        let verified: VerifiedToken
    }

    static let defaultSlotCount = 256

    private var slots: [Entry?]
    /// Per slot, the hash of the last token the shared cache knew there and the memo did not:
    /// the next hit with the same hash enters the memo.
    private var candidates: [Int]

    package init(slotCount: Int = RecentTokens.defaultSlotCount) {
        precondition(slotCount > 0 && slotCount & (slotCount - 1) == 0, "slot count must be a power of two")
        self.slots = Array(repeating: nil, count: slotCount)
        self.candidates = Array(repeating: 0, count: slotCount)
    }

    /// Verifies `token` through the memo, then through `shared` (which verifies and caches).
    package func verify(
        _ token: Substring, keys: KeySnapshot, through shared: VerifiedTokenCache
    ) -> Result<VerifiedToken, TokenRejection> {
        var checkedSignature = false
        return self.verify(token, keys: keys, through: shared, checkedSignature: &checkedSignature)
    }

    /// `verify`, telling whether the signature had to be checked (neither memo nor cache knew
    /// the token): a traced request records that as a span.
    func verify(
        _ token: Substring, keys: KeySnapshot, through shared: VerifiedTokenCache, checkedSignature: inout Bool
    ) -> Result<VerifiedToken, TokenRejection> {
        // A disabled shared cache means "verify every request": no memo either.
        guard shared.isEnabled else {
            checkedSignature = true
            return shared.verify(token, keys: keys)
        }
        var token = token
        let hash = token.withUTF8 { Self.hash(of: UnsafeRawBufferPointer($0)) }
        let slot = hash & (self.slots.count - 1)
        if let entry = self.slots[slot], entry.hash == hash, entry.verified.generation == keys.generation,
            Self.same(entry.token, token)
        {
            return .success(entry.verified)
        }
        let (result, fromCache) = shared.lookUpOrVerify(token, keys: keys)
        checkedSignature = !fromCache
        // Only a token the shared cache knew twice in a row at this slot is memoized: a
        // client that repeats its token gets here on its third request, while distinct tokens
        // in turn never pay for copying each into the memo and evicting the last.
        if fromCache, case .success(let verified) = result {
            if self.candidates[slot] == hash {
                self.slots[slot] = Entry(hash: hash, token: String(token), verified: verified)
            } else {
                self.candidates[slot] = hash
            }
        }
        return result
    }

    /// A token's hash (randomly seeded per process) of its last 16 bytes, the end of the
    /// signature for a JWS, and its length; its low bits are its slot. It only decides where a
    /// token goes and what a miss looks at: a hit needs the whole token to match.
    private static func hash(of bytes: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes.suffix(16)))
        hasher.combine(bytes.count)
        return hasher.finalize()
    }

    private static func same(_ stored: String, _ token: Substring) -> Bool {
        var stored = stored
        var token = token
        return stored.withUTF8 { a in
            token.withUTF8 { b in
                a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
            }
        }
    }
}

@available(*, unavailable)
extension RecentTokens: Sendable {}
