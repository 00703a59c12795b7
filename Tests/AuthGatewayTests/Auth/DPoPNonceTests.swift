import Crypto
import Foundation
import Testing

@testable import AuthGateway

/// Stateless `DPoP-Nonce` values (RFC 9449 §8): a sealed issue time, checked with an injected
/// clock.
@Suite("DPoPNonce")
struct DPoPNonceTests {
    static let secret = SharedStateConfiguration.EncryptionKey(bytes: Array(repeating: 3, count: 32))!
    static let key = DPoPNonce.key(sharedSecret: Self.secret)
    static let issuedAt = 1_700_000_000.25

    func check(_ nonce: String, at now: Double, key: SymmetricKey = Self.key) -> DPoPNonce.Verdict {
        DPoPNonce.check(nonce, key: key, now: now, lifetimeSeconds: 60, leewaySeconds: 5)
    }

    @Test func aNonceIsFreshThenRenewedThenRefusedAsItAges() {
        let nonce = DPoPNonce.issue(key: Self.key, now: Self.issuedAt)
        #expect(self.check(nonce, at: Self.issuedAt) == .fresh)
        #expect(self.check(nonce, at: Self.issuedAt + 30) == .fresh)
        #expect(self.check(nonce, at: Self.issuedAt + 30.5) == .renew, "past half its life a new one is handed out")
        #expect(self.check(nonce, at: Self.issuedAt + 60) == .renew)
        #expect(self.check(nonce, at: Self.issuedAt + 60.5) == .invalid, "older than maxAgeSeconds")
        // Another instance whose clock runs behind by up to the leeway accepts it.
        #expect(self.check(nonce, at: Self.issuedAt - 5) == .fresh)
        #expect(self.check(nonce, at: Self.issuedAt - 5.5) == .invalid)
    }

    @Test func theNonceRevealsNothingAndNeverRepeats() {
        let one = DPoPNonce.issue(key: Self.key, now: Self.issuedAt)
        let two = DPoPNonce.issue(key: Self.key, now: Self.issuedAt)
        #expect(one != two, "a fresh random nonce per seal")
        #expect(one.utf8.count == 50)
        // RFC 9449 §8.1: NQCHAR (base64url is a subset).
        #expect(one.utf8.allSatisfy { Base64URL.isAlphabetByte($0) })
        let bytes = Base64URL.decode(one)!
        let time = withUnsafeBytes(of: UInt64(Self.issuedAt * 1000).bigEndian) { Array($0) }
        #expect(!bytes.indices.contains { Array(bytes[$0...].prefix(time.count)) == time }, "the time is encrypted")
    }

    @Test func aNonceUnderAnotherKeyIsRefused() {
        let other = DPoPNonce.key(
            sharedSecret: SharedStateConfiguration.EncryptionKey(bytes: Array(repeating: 4, count: 32))!)
        let nonce = DPoPNonce.issue(key: other, now: Self.issuedAt)
        #expect(self.check(nonce, at: Self.issuedAt, key: other) == .fresh)
        #expect(self.check(nonce, at: Self.issuedAt) == .invalid)
        // Without sharedState each process draws its own key.
        let random = DPoPNonce.issue(key: DPoPNonce.key(sharedSecret: nil), now: Self.issuedAt)
        #expect(self.check(random, at: Self.issuedAt, key: DPoPNonce.key(sharedSecret: nil)) == .invalid)
    }

    /// Instances sharing `encryptionKeyBase64` derive the same key, independent of the secret
    /// itself (a nonce never opens with the outcome key).
    @Test func instancesSharingTheSecretVerifyEachOthersNonces() {
        let instanceA = DPoPNonce.key(sharedSecret: Self.secret)
        let instanceB = DPoPNonce.key(
            sharedSecret: SharedStateConfiguration.EncryptionKey(bytes: Array(repeating: 3, count: 32))!)
        #expect(
            self.check(DPoPNonce.issue(key: instanceA, now: Self.issuedAt), at: Self.issuedAt + 1, key: instanceB)
                == .fresh)
        let raw = SymmetricKey(data: Self.secret.bytes)
        #expect(self.check(DPoPNonce.issue(key: raw, now: Self.issuedAt), at: Self.issuedAt) == .invalid)
    }

    @Test func alteredOrMalformedNoncesAreRefused() {
        let nonce = DPoPNonce.issue(key: Self.key, now: Self.issuedAt)
        var bytes = Base64URL.decode(nonce)!
        for index in bytes.indices {
            bytes[index] ^= 0x01
            #expect(self.check(Base64URL.encode(bytes), at: Self.issuedAt) == .invalid, "byte \(index) altered")
            bytes[index] ^= 0x01
        }
        for malformed in [
            "", "not base64!", String(nonce.dropLast(4)), nonce + "AAAA", String(repeating: "A", count: 500),
        ] {
            #expect(self.check(malformed, at: Self.issuedAt) == .invalid)
        }
    }
}
