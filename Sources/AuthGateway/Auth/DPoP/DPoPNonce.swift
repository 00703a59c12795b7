import Crypto
import Foundation

/// Stateless `DPoP-Nonce` values (RFC 9449 §8, docs/authentication.md): a nonce is the time it was
/// issued, sealed with ChaCha20-Poly1305 under a key every instance holds, so any instance verifies
/// any instance's nonce without storing or exchanging anything. Pure: `now` comes in.
///
/// Layout, base64url without padding (50 characters, RFC 9449's `NQCHAR`s): a version byte
/// (1), then ChaChaPoly's combined form — a 12-byte random nonce, the 8-byte big-endian issue
/// time in milliseconds (encrypted), the 16-byte tag. The version byte is authenticated too.
///
/// A nonce is accepted while it is at most `lifetimeSeconds` (`tokens.dpop.maxAgeSeconds`)
/// old, and at most `leewaySeconds` in the future (another instance's clock may run ahead).
/// Past half its life it still passes, and the response carries a fresh one, so a busy
/// client rotates without ever meeting a `use_dpop_nonce` refusal.
enum DPoPNonce {
    static let version: UInt8 = 1
    /// Keeps the nonce key apart from every other use of the shared secret (HKDF `info`, and
    /// the authenticated data of each nonce).
    static let context = Array("auth-gateway DPoP-Nonce v1".utf8)

    enum Verdict: Equatable, Sendable {
        /// Valid and young: nothing to do.
        case fresh
        /// Valid, past half its life: the response carries a new nonce.
        case renew
        /// Malformed, sealed under another key, too old or too far in the future.
        case invalid
    }

    /// The nonce key: derived with HKDF-SHA-256 from `sharedState.encryptionKeyBase64` when
    /// there is one — every instance on the database already holds it, so nonces work across
    /// replicas with no new secret to distribute or rotate, and the derivation keeps this key
    /// independent of the AES-GCM key that seals stored outcomes. Without `sharedState` a
    /// random key per process (docs/authentication.md): nonces are then valid on the issuing process only.
    static func key(sharedSecret: SharedStateConfiguration.EncryptionKey?) -> SymmetricKey {
        guard let sharedSecret else { return SymmetricKey(size: .bits256) }
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: sharedSecret.bytes), info: Self.context, outputByteCount: 32)
    }

    static func issue(key: SymmetricKey, now: Double) -> String {
        let milliseconds = UInt64(max(0, now * 1000)).bigEndian
        let plaintext = withUnsafeBytes(of: milliseconds) { Array($0) }
        // Sealing 8 bytes with a fresh random nonce cannot fail.
        let box = try! ChaChaPoly.seal(plaintext, using: key, authenticating: Self.context + [Self.version])
        return Base64URL.encode([Self.version] + Array(box.combined))
    }

    static func check(
        _ nonce: String, key: SymmetricKey, now: Double, lifetimeSeconds: Double, leewaySeconds: Double
    ) -> Verdict {
        guard nonce.utf8.count <= 128, let bytes = Base64URL.decode(nonce), bytes.first == Self.version,
            let box = try? ChaChaPoly.SealedBox(combined: bytes.dropFirst()),
            let plaintext = try? ChaChaPoly.open(box, using: key, authenticating: Self.context + [Self.version]),
            plaintext.count == 8
        else { return .invalid }
        let milliseconds = plaintext.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let age = now - Double(milliseconds) / 1000
        guard age >= -leewaySeconds, age <= lifetimeSeconds else { return .invalid }
        return age > lifetimeSeconds / 2 ? .renew : .fresh
    }
}
