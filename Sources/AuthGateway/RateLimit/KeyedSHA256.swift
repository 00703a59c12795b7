import Crypto

/// HMAC-SHA-256 (RFC 2104) with its key's two padded blocks absorbed once, for the rate-limit
/// keys made on the request path (`RateLimitKey`).
///
/// It computes exactly what swift-crypto's `HMAC<SHA256>` computes, through the library's own
/// `SHA256`. `HMAC` is generic over its hash function and is not specialised outside
/// swift-crypto, so each code went through witness tables and `DataProtocol` regions: ~1.5 µs for
/// a client address, against ~0.6 µs here (docs/benchmarks.md, "Cost at scale"). The tests hold
/// it equal to `HMAC<SHA256>` for random keys and messages.
struct KeyedSHA256: Sendable {
    /// SHA-256 after (key ⊕ ipad) and after (key ⊕ opad): copied for each code.
    private let inner: SHA256
    private let outer: SHA256

    init(key: SymmetricKey) {
        var block = [UInt8](repeating: 0, count: SHA256.blockByteCount)
        key.withUnsafeBytes { bytes in
            if bytes.count > SHA256.blockByteCount {
                SHA256.hash(data: bytes).withUnsafeBytes { block.replaceSubrange(0..<$0.count, with: $0) }
            } else {
                block.replaceSubrange(0..<bytes.count, with: bytes)
            }
        }
        var inner = SHA256()
        block.map { $0 ^ 0x36 }.withUnsafeBytes { inner.update(bufferPointer: $0) }
        var outer = SHA256()
        block.map { $0 ^ 0x5c }.withUnsafeBytes { outer.update(bufferPointer: $0) }
        self.inner = inner
        self.outer = outer
    }

    /// The code of the message that `feed` gives, in as many parts as it likes, to the hash.
    @inline(__always)
    func authenticationCode(_ feed: (inout SHA256) -> Void) -> SHA256Digest {
        var inner = self.inner
        feed(&inner)
        let innerDigest = inner.finalize()
        var outer = self.outer
        innerDigest.withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize()
    }
}
