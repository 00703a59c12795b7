import Crypto
import Foundation

/// A rate-limited value (a `sub`, an address…) as the tables hold it: the first 128 bits of
/// its HMAC-SHA-256, never the value itself (docs/rate-limits.md). A plain hash of an email address
/// or a small user id could be reversed with a dictionary; an HMAC cannot without the key.
struct RateLimitKey: Hashable, Sendable, CustomStringConvertible {
    let high: UInt64
    let low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Values of different kinds never share a bucket: an anonymous caller's address does
    /// not collide with a user whose `sub` happens to be the same text.
    enum Kind: UInt8 {
        case identity = 1
        case address = 2
        case route = 3
    }

    /// The HMAC of `value` under `key`.
    init(_ kind: Kind, _ value: String, key: SymmetricKey) {
        self.init(kind, value, keyed: KeyedSHA256(key: key))
    }

    /// The HMAC of `value` with `keyed`, the key's pads already absorbed: a copy of it skips
    /// the key schedule (two of the four SHA-256 blocks an HMAC of a short value costs;
    /// measured on the request path of every rate-limited request).
    init(_ kind: Kind, _ value: String, keyed: KeyedSHA256) {
        var tag = kind.rawValue
        var value = value
        let code = keyed.authenticationCode { hash in
            withUnsafeBytes(of: &tag) { hash.update(bufferPointer: $0) }
            value.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }
        (self.high, self.low) = code.withUnsafeBytes { raw in
            (
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }

    /// 32 hex digits, for the shared-state rows.
    var description: String {
        let high = String(self.high, radix: 16)
        let low = String(self.low, radix: 16)
        return String(repeating: "0", count: 16 - high.count) + high + String(repeating: "0", count: 16 - low.count)
            + low
    }

    /// The bits are already uniformly random: one word is enough to hash.
    func hash(into hasher: inout Hasher) { hasher.combine(self.low) }

    /// The key the HMACs are made with: derived (HKDF-SHA-256) from the shared-state key, so
    /// every instance on one database names a key alike, or random for this process.
    static func hashingKey(sharedStateKey: [UInt8]?) -> SymmetricKey {
        guard let sharedStateKey else { return SymmetricKey(size: .bits256) }
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: sharedStateKey),
            salt: Array("auth-gateway".utf8),
            info: Array("rate-limit keys v1".utf8),
            outputByteCount: 32
        )
    }
}

extension RateLimitKey {
    /// Parses the 32 hex digits of `description`.
    init?(hex: some StringProtocol) {
        guard hex.utf8.count == 32, let high = UInt64(hex.prefix(16), radix: 16),
            let low = UInt64(hex.suffix(16), radix: 16)
        else { return nil }
        self.init(high: high, low: low)
    }
}
