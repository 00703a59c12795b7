import Foundation
import Testing

@testable import AuthGateway

@Suite("Base64URL")
struct Base64URLTests {
    /// Reference encoding via Foundation's standard base64, translated to the URL alphabet.
    private func reference(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test("random bytes of every length 0…64 round trip and match the reference encoding")
    func roundTrips() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            for _ in 0..<8 {
                let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
                let encoded = Base64URL.encode(bytes)
                #expect(encoded == reference(bytes), "length \(length)")
                #expect(!encoded.contains("="))
                #expect(encoded.count == (length * 4 + 2) / 3)
                #expect(Base64URL.decode(encoded) == bytes, "length \(length)")
            }
        }
    }

    @Test("the bytes that map to - and _ round trip")
    func urlAlphabet() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0xFE]
        let encoded = Base64URL.encode(bytes)
        #expect(encoded == "-_-__g")
        #expect(Base64URL.decode(encoded) == bytes)
    }

    @Test("known vectors of RFC 4648 §10, unpadded")
    func rfc4648Vectors() {
        let vectors = [
            "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test("padding is refused", arguments: ["Zg==", "Zg=", "Zm8=", "Zm9vYg==", "===="])
    func refusesPadding(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("characters of the standard alphabet are refused", arguments: ["+/8A", "ab+c", "ab/c", "-_+/"])
    func refusesStandardAlphabet(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("other characters are refused", arguments: ["Zm9v Yg", "Zm9v\nYg", "Zm9.", "Zm9!", "Zé9v", "Zm9v\u{0}"])
    func refusesOtherCharacters(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("a length of 1 mod 4 is refused", arguments: ["A", "Zm9vY", "Zm9vYmFyZ"])
    func refusesImpossibleLength(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test("non-zero trailing bits are refused")
    func refusesNonCanonicalTrailingBits() {
        // "Zg" is canonical for "f"; "Zh"…"Zv" carry non-zero unused bits.
        #expect(Base64URL.decode("Zg") == [0x66])
        for last in "hijklmnopqrstuv" {
            #expect(Base64URL.decode("Z\(last)") == nil, "Z\(last)")
        }
        // "Zm8" is canonical for "fo"; the low two bits of the last character must be zero.
        #expect(Base64URL.decode("Zm8") == Array("fo".utf8))
        #expect(Base64URL.decode("Zm9") == nil)
        #expect(Base64URL.decode("Zm-") == nil)
        #expect(Base64URL.decode("Zm_") == nil)
    }

    @Test("every 2- and 3-character tail is accepted exactly when it is canonical")
    func canonicalTailsExhaustive() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var accepted = 0
        for a in alphabet {
            for b in alphabet {
                let text = String([a, b])
                guard let decoded = Base64URL.decode(text) else { continue }
                accepted += 1
                #expect(decoded.count == 1)
                #expect(Base64URL.encode(decoded) == text)
            }
        }
        // Each single byte has exactly one accepted 2-character encoding.
        #expect(accepted == 256)

        // After "Zm", 16 of the 64 characters leave the two unused bits zero.
        var acceptedThird = 0
        for c in alphabet {
            let text = "Zm" + String(c)
            guard let decoded = Base64URL.decode(text) else { continue }
            acceptedThird += 1
            #expect(Base64URL.encode(decoded) == text)
        }
        #expect(acceptedThird == 16)
    }
}
