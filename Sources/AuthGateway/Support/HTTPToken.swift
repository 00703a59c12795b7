/// RFC 9110 §5.6.2 `token` characters: what header names, methods and cookie names consist of.
enum HTTPToken {
    static func isValid(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(Self.isTokenByte)
    }

    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"),
            UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `value` may be sent as a header value: visible ASCII/UTF-8, spaces and tabs, no
    /// CR, LF or NUL (which would split or truncate the header block).
    static func isSafeHeaderValue(_ value: some StringProtocol) -> Bool {
        // Over the contiguous bytes of a native string, without a branch per byte (a 700-byte
        // token in every HTTP/2 request's HEADERS: the per-byte `UTF8View` walk was ~3 % of a
        // stream's CPU, perf); the general walk otherwise.
        if let safe = value.utf8.withContiguousStorageIfAvailable(Self.isSafeHeaderValue) { return safe }
        return value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    private static func isSafeHeaderValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var unsafe: UInt8 = 0
        for byte in bytes { unsafe |= (byte < 0x20 && byte != 0x09 ? 1 : 0) | (byte == 0x7F ? 1 : 0) }
        return unsafe == 0
    }
}
