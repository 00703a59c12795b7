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

    static let byteCount = 32

    /// The 32 bytes SHA-256 produced, in order: the primary key of the shared refresh table
    /// and the authenticated data of its sealed outcomes.
    var bytes: [UInt8] {
        withUnsafeBytes(of: self.words) { Array($0) }
    }

    init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        self.words = words
    }

    /// Lower-case hex: the payload of the "outcome stored" notification.
    var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: Self.byteCount * 2) { text in
            for (index, byte) in self.bytes.enumerated() {
                text[2 * index] = digits[Int(byte >> 4)]
                text[2 * index + 1] = digits[Int(byte & 0x0F)]
            }
            return Self.byteCount * 2
        }
    }

    /// 64 hex digits, either case (a notification's payload; an API key's `sha256`, of which a
    /// keys file may hold a million: no allocation here).
    init?(hex text: String) {
        var text = text
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let parsed = text.withUTF8 { digits in
            guard digits.count == 2 * Self.byteCount else { return false }
            return withUnsafeMutableBytes(of: &words) { raw -> Bool in
                var invalid: UInt8 = 0
                for index in 0..<Self.byteCount {
                    let high = Self.nibble(digits[2 * index])
                    let low = Self.nibble(digits[2 * index + 1])
                    invalid |= (high | low) & 0x10
                    raw[index] = high << 4 | low & 0x0F
                }
                return invalid == 0
            }
        }
        guard parsed else { return nil }
        self.words = words
    }

    /// The value of a hex digit, or 0x10 (a bit no digit has) for anything else: checked once per
    /// digest, not per digit (a keys file may hold a million `sha256`s).
    private static func nibble(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        default: return 0x10
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
