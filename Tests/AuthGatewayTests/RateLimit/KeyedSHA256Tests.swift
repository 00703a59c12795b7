import Crypto
import Foundation
import Testing

@testable import AuthGateway

/// The HMAC-SHA-256 that names rate-limit keys: RFC 4231's vectors, swift-crypto's `HMAC`
/// over random keys and messages, and a key named as Python's `hmac` names it, so that the
/// names a fleet shares through PostgreSQL stay what they were.
@Suite("KeyedSHA256")
struct KeyedSHA256Tests {
    func code(_ key: [UInt8], _ message: [UInt8]) -> String {
        KeyedSHA256(key: SymmetricKey(data: key)).authenticationCode { hash in
            message.withUnsafeBytes { hash.update(bufferPointer: $0) }
        }.map { String(format: "%02x", $0) }.joined()
    }

    @Test("RFC 4231 test cases 1, 2, 6 and 7 (a key longer than a block is hashed first)")
    func rfc4231() {
        #expect(
            self.code(Array(repeating: 0x0b, count: 20), Array("Hi There".utf8))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(
            self.code(Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let long = [UInt8](repeating: 0xaa, count: 131)
        #expect(
            self.code(long, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        let data =
            "This is a test using a larger than block-size key and a larger than block-size data. "
            + "The key needs to be hashed before being used by the HMAC algorithm."
        #expect(self.code(long, Array(data.utf8)) == "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2")
    }

    @Test("equal to swift-crypto's HMAC<SHA256> for random keys and messages, fed in random parts")
    func matchesTheLibrary() {
        var random = SeededRandom(seed: 0x5EED_4A11)
        for _ in 0..<2_000 {
            let keyLength = random.pick([0, 1, 31, 32, 63, 64, 65, 100, 200])
            let key = (0..<keyLength).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let message = (0..<random.int(0...300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let keyed = KeyedSHA256(key: SymmetricKey(data: key))
            let cut = random.int(0...message.count)
            let ours = keyed.authenticationCode { hash in
                message[..<cut].withUnsafeBytes { hash.update(bufferPointer: $0) }
                message[cut...].withUnsafeBytes { hash.update(bufferPointer: $0) }
            }
            let library = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
            #expect(Array(ours) == Array(library), "key \(key.count) bytes, message \(message.count) bytes")
        }
    }

    @Test("a rate-limit key is the first 128 bits of HMAC(key, kind ‖ value), as Python's hmac makes it")
    func rateLimitKeysKeepTheirNames() {
        // python3 -c "import hmac,hashlib; print(hmac.new(bytes(range(32)), b'\x02' + b'203.0.113.5',
        //   hashlib.sha256).hexdigest()[:32])"
        let key = RateLimitKey(.address, "203.0.113.5", key: SymmetricKey(data: Array(0..<32) as [UInt8]))
        #expect(key.description == "2ac5596e7dd76791dc84c7b31219826e")
    }
}
