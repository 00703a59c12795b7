import Crypto

/// SHA-256 of a token: the key of the caches that remember tokens without storing them.
///
/// A cryptographic hash, because a collision with a cached valid token would be an
/// authentication bypass. Hashing uses one 64-bit word, which is already uniformly random.
public struct TokenDigest: Hashable, Sendable {
    let words: (UInt64, UInt64, UInt64, UInt64)

    public init(of bytes: UnsafeRawBufferPointer) {
        let digest = SHA256.hash(data: bytes)
        self.words = digest.withUnsafeBytes { raw in
            (
                raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
            )
        }
    }

    /// A digest computed elsewhere: 32 bytes (an API key's `sha256` in the configuration).
    public init?(sha256 bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.words = bytes.withUnsafeBytes { raw in
            (
                raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
            )
        }
    }

    public init(of text: Substring) {
        var text = text
        self = text.withUTF8 { TokenDigest(of: UnsafeRawBufferPointer($0)) }
    }

    public static func == (lhs: TokenDigest, rhs: TokenDigest) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2
            && lhs.words.3 == rhs.words.3
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(self.words.0) }
}
