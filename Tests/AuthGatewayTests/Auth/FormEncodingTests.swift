import Foundation
import Testing

@testable import AuthGateway

@Suite("FormEncoding")
struct FormEncodingTests {
    @Test(
        "application/x-www-form-urlencoded (WHATWG URL §5.2)",
        arguments: [
            ("", ""),
            ("abcXYZ019", "abcXYZ019"),
            ("*-._", "*-._"),
            ("a b", "a+b"),
            ("a+b", "a%2Bb"),
            ("~", "%7E"),
            ("a&b=c", "a%26b%3Dc"),
            ("100%", "100%25"),
            ("p@ss:w/rd?#", "p%40ss%3Aw%2Frd%3F%23"),
            ("\u{E9}", "%C3%A9"),
            ("\u{1F600}", "%F0%9F%98%80"),
            ("\n\t", "%0A%09"),
        ]
    )
    func encodes(_ plain: String, _ encoded: String) {
        #expect(FormEncoding.encode(plain) == encoded)
    }

    @Test("decoding the encoding gives the input back")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let scalars = (0..<Int.random(in: 0...20, using: &generator)).compactMap { _ in
                Unicode.Scalar(UInt32.random(in: 0x20...0x2FF, using: &generator))
            }
            var plain = ""
            plain.unicodeScalars.append(contentsOf: scalars)
            let encoded = FormEncoding.encode(plain)
            #expect(encoded.allSatisfy { $0.isASCII })
            #expect(!encoded.contains(" ") && !encoded.contains("&") && !encoded.contains("="))
            let decoded = encoded.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            #expect(decoded == plain, "\(plain.debugDescription) → \(encoded)")
        }
    }
}
