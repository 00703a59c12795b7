import Crypto

/// Remembers tokens whose signature and claims verified, so each is checked with public-key
/// cryptography once per key generation, not once per request (HAProxy and Envoy verify on
/// every request).
///
/// Only successes are stored, and only the clock-independent part of verification; callers
/// run `VerifiedToken.timeFailure(now:)` on every hit. An entry from an older key generation
/// is a miss, so rotated-out keys stop counting immediately.
public final class VerifiedTokenCache: Sendable {
    private let storage: Sharded<ClockCache<TokenDigest, VerifiedToken>>?

    public init(capacity: Int) {
        self.storage = capacity > 0 ? Sharded(capacity: capacity) { ClockCache(capacity: $0) } : nil
    }

    /// Forgets every verification of `subject`'s tokens (a Shared Signals `credential-change`
    /// or `token-claims-change`: docs/streams.md), so that their next request is verified
    /// afresh. A walk over every shard: never on the request path.
    @discardableResult
    func forget(subject: String) -> Int {
        var forgotten = 0
        self.storage?.forEachShard { forgotten += $0.removeAll { _, token in token.subject == subject } }
        return forgotten
    }

    /// False when configured with no capacity: every request is verified.
    public var isEnabled: Bool { self.storage != nil }

    /// Verifies `token` (Substring of a header value), consulting and filling the cache.
    public func verify(_ token: Substring, keys: KeySnapshot) -> Result<VerifiedToken, TokenRejection> {
        self.lookUpOrVerify(token, keys: keys).result
    }

    /// `verify`, also telling whether the answer came from the cache (the token was seen
    /// before) rather than from a signature check just now.
    func lookUpOrVerify(
        _ token: Substring, keys: KeySnapshot
    ) -> (result: Result<VerifiedToken, TokenRejection>, fromCache: Bool) {
        var token = token
        return token.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            guard let storage = self.storage else {
                return (TokenVerifier.verifySignature(token: bytes, keys: keys), false)
            }
            let digest = TokenDigest(of: bytes)
            if let cached = storage.withShard(for: digest, { $0.get(digest) }), cached.generation == keys.generation {
                return (.success(cached), true)
            }
            // Verified outside the lock: other loops are not held up by the signature check.
            let result = TokenVerifier.verifySignature(token: bytes, keys: keys)
            if case .success(let verified) = result {
                storage.withShard(for: digest) { $0.set(digest, verified) }
            }
            return (result, false)
        }
    }

    /// Holds `verified` as `token`'s verification (`check --request`'s `--claims` and
    /// `--no-verify`: claims that stand in for a checked signature, offline).
    func remember(_ token: Substring, as verified: VerifiedToken) {
        var token = token
        token.withUTF8 { utf8 in
            let digest = TokenDigest(of: UnsafeRawBufferPointer(utf8))
            self.storage?.withShard(for: digest) { $0.set(digest, verified) }
        }
    }

    public var count: Int {
        var total = 0
        self.storage?.forEachShard { total += $0.count }
        return total
    }
}
