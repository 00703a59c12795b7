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
/// SHA-256 of the token, a shard lock and an LRU update per hit (measured: ~2.5 % of the CPU
/// of a proxied `GET`); this memo costs a hash of the token's last bytes and one byte-wise
/// comparison with the stored token, and it is confined to its loop, so it takes no lock.
///
/// It only ever holds what the shared cache returned as verified, and an entry is used only
/// when the whole token is byte-for-byte the stored one and was verified under the current
/// key generation, so it decides nothing the shared cache would not: the shared cache still
/// verifies each token once per process, and callers still run the clock checks on every hit.
/// Direct-mapped: a colliding token simply replaces the slot's entry. A token enters on its
/// first shared-cache hit, so one-off tokens never displace repeated ones.
package final class RecentTokens {
    private struct Entry {
        let token: String
        let verified: VerifiedToken
    }

    static let defaultSlotCount = 256

    private var slots: [Entry?]

    package init(slotCount: Int = RecentTokens.defaultSlotCount) {
        precondition(slotCount > 0 && slotCount & (slotCount - 1) == 0, "slot count must be a power of two")
        self.slots = Array(repeating: nil, count: slotCount)
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
        let slot = token.withUTF8 { Self.slot(of: UnsafeRawBufferPointer($0), count: self.slots.count) }
        if let entry = self.slots[slot], entry.verified.generation == keys.generation, Self.same(entry.token, token) {
            return .success(entry.verified)
        }
        let (result, fromCache) = shared.lookUpOrVerify(token, keys: keys)
        checkedSignature = !fromCache
        // Only a token seen before (a cache hit) is memoized: a client that repeats its
        // token gets here on its second request, while a stream of distinct tokens never
        // pays for copying each into the memo and evicting the last.
        if fromCache, case .success(let verified) = result {
            self.slots[slot] = Entry(token: String(token), verified: verified)
        }
        return result
    }

    /// The slot of a token: a hash (randomly seeded per process) of its last 16 bytes, the
    /// end of the signature for a JWS. Which slot a token lands in only decides what it
    /// evicts; a hit needs the whole token to match.
    private static func slot(of bytes: UnsafeRawBufferPointer, count: Int) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes.suffix(16)))
        hasher.combine(bytes.count)
        return hasher.finalize() & (count - 1)
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
