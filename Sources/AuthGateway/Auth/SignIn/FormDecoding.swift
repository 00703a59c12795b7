/// `application/x-www-form-urlencoded` parsing (WHATWG URL §5.1): the callback's query, a
/// back-channel logout's body, a sign-in's `rd`.
enum FormDecoding {
    /// The name/value pairs of `text`; malformed escapes are kept as written.
    static func pairs(_ text: Substring) -> HeaderFields {
        text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (Self.decode(parts[0]), parts.count > 1 ? Self.decode(parts[1]) : "")
        }
    }

    /// The first value of `name` in `text`, when there is exactly one (two are ambiguous: nil).
    static func value(_ name: String, in text: Substring) -> String? {
        let values = Self.pairs(text).filter { $0.name == name }
        return values.count == 1 ? values[0].value : nil
    }

    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var index = text.utf8.startIndex
        let end = text.utf8.endIndex
        while index < end {
            let byte = text.utf8[index]
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), text.utf8.distance(from: index, to: end) >= 3,
                let high = Self.hex(text.utf8[text.utf8.index(index, offsetBy: 1)]),
                let low = Self.hex(text.utf8[text.utf8.index(index, offsetBy: 2)])
            {
                bytes.append(high << 4 | low)
                index = text.utf8.index(index, offsetBy: 2)
            } else {
                bytes.append(byte)
            }
            index = text.utf8.index(after: index)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
