import Testing

@testable import AuthGateway

@Suite("HTTPToken")
struct HTTPTokenTests {
    /// RFC 9110 §5.5: a field value is visible characters, spaces and tabs (and obs-text);
    /// CR, LF, NUL and the other controls (0x00–0x1F but HTAB, and DEL) are refused.
    @Test func aHeaderValueIsSafeWithoutControlCharactersWhereverTheyStand() {
        let refused = Set<UInt8>((0x00...0x1F).filter { $0 != 0x09 } + [0x7F])
        for byte in UInt8(0x00)...UInt8(0x7F) {
            let character = String(UnicodeScalar(byte))
            // Long enough for any vectorized loop; the byte first, in the middle, last.
            let filler = String(repeating: "a", count: 100)
            for value in [character + filler, filler + character + filler, filler + character] {
                #expect(
                    HTTPToken.isSafeHeaderValue(value) == !refused.contains(byte), "byte 0x\(String(byte, radix: 16))")
                // A substring takes the same path over its own bytes only.
                let substring = ("\u{0}" + value + "\u{0}").dropFirst().dropLast()
                #expect(
                    HTTPToken.isSafeHeaderValue(substring) == !refused.contains(byte),
                    "byte 0x\(String(byte, radix: 16)) in a substring")
            }
        }
        #expect(HTTPToken.isSafeHeaderValue("Bearer é∑ 漢字\tx"), "UTF-8 (obs-text) passes")
        #expect(HTTPToken.isSafeHeaderValue(""))
    }
}
