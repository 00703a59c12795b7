import Crypto

/// One-time things seen while they could still be replayed: the `jti`s of accepted DPoP proofs
/// (RFC 9449 §11.1), sign-in flows already finished, logout tokens' `jti`s
/// (docs/browser-sign-in.md). Process-wide, sharded by hash (short critical sections, no global
/// lock), each entry kept until it could no longer be accepted anyway. DPoP proofs are keyed by
/// SHA-256 of the key's thumbprint and the `jti`, so a client cannot burn another client's
/// `jti`s; other kinds by a digest of their own, with a prefix naming the kind.
///
/// Bounded: past `capacity` the oldest entries go first. They are the ones closest to leaving
/// the window anyway; the bound is a replay window for floods of over `capacity` accepted proofs
/// within `maxAgeSeconds + 2 × leewaySeconds`.
final class ReplayCache: Sendable {
    private let shards: Sharded<LRUCache<TokenDigest, Double>>

    init(capacity: Int = 1_000_000) {
        self.shards = Sharded(capacity: capacity) { LRUCache(capacity: $0) }
    }

    /// Records `proof`; false when its `jti` was seen (for the same key) and has not expired.
    func firstUse(of proof: DPoPVerifiedProof, until expiresAt: Double, now: Double) -> Bool {
        self.firstUse(Self.digest(of: proof), until: expiresAt, now: now)
    }

    /// Records `key` until `expiresAt`; false when it was recorded before and has not expired.
    func firstUse(_ key: TokenDigest, until expiresAt: Double, now: Double) -> Bool {
        self.shards.withShard(for: key) { cache in
            if let seenUntil = cache.get(key), seenUntil > now { return false }
            _ = cache.set(key, expiresAt)
            return true
        }
    }

    /// The key of `proof` here and (its first 16 bytes) in the shared table.
    static func digest(of proof: DPoPVerifiedProof) -> TokenDigest {
        TokenDigest(of: Substring(proof.thumbprint + ":" + proof.jti))
    }
}
