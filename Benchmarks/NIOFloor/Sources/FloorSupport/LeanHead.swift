// The lean proxy floor's HTTP/1.1 head work, on the bytes it read: no `String` per field, no
// header collection. Strict enough to be honest about cost (CRLF only, token names, value
// bytes checked eight at a time, framing fields found), not a general parser: GET-style
// requests only (a body is refused), which is what the benchmark sends.

/// One field of a head, as offsets into its bytes.
public struct LeanField {
    public var nameStart: Int
    public var nameEnd: Int
    public var valueStart: Int
    public var valueEnd: Int
}

public enum LeanHead {
    /// The length of the first head in `bytes` (through its blank line), if it is complete;
    /// eight bytes at a time past bytes that hold no LF.
    public static func headLength(in bytes: UnsafeRawBufferPointer) -> Int? {
        let count = bytes.count
        var index = 0
        var lineStart = 0
        while index < count {
            if index + 8 <= count, !containsLineFeed(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                index += 8
                continue
            }
            if bytes[index] == 0x0A {
                if index - lineStart == 1, bytes[lineStart] == 0x0D { return index + 1 }
                lineStart = index + 1
            }
            index += 1
        }
        return nil
    }

    @inline(__always)
    static func containsLineFeed(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let x = word ^ (ones &* 0x0A)
        return (x &- ones) & ~x & 0x8080_8080_8080_8080 != 0
    }

    /// Splits `bytes[0..<end]` (a complete head, ending in its blank line) into its start line's
    /// end and its fields (appended to `fields`, emptied first). nil when malformed.
    public static func split(_ bytes: UnsafeRawBufferPointer, end: Int, fields: inout [LeanField]) -> Int? {
        fields.removeAll(keepingCapacity: true)
        var index = 0
        while index < end, bytes[index] != 0x0D {
            guard bytes[index] != 0x0A else { return nil }
            index += 1
        }
        guard index + 1 < end, bytes[index + 1] == 0x0A, index > 0 else { return nil }
        let startLineEnd = index
        var line = index + 2
        while line < end {
            if bytes[line] == 0x0D { return line + 2 == end && bytes[line + 1] == 0x0A ? startLineEnd : nil }
            var cursor = line
            while cursor < end, bytes[cursor] != UInt8(ascii: ":") {
                guard isTokenByte(bytes[cursor]) else { return nil }
                cursor += 1
            }
            guard cursor < end, cursor > line else { return nil }
            let nameEnd = cursor
            cursor += 1
            while cursor < end, bytes[cursor] == 0x20 || bytes[cursor] == 0x09 { cursor += 1 }
            let valueStart = cursor
            while true {
                while cursor + 8 <= end, isPlainText(bytes.loadUnaligned(fromByteOffset: cursor, as: UInt64.self)) {
                    cursor += 8
                }
                guard cursor < end else { return nil }
                let byte = bytes[cursor]
                if byte == 0x0D {
                    guard cursor + 1 < end, bytes[cursor + 1] == 0x0A else { return nil }
                    break
                }
                guard byte == 0x09 || (byte >= 0x20 && byte != 0x7F) else { return nil }
                cursor += 1
            }
            var valueEnd = cursor
            while valueEnd > valueStart, bytes[valueEnd - 1] == 0x20 || bytes[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            fields.append(LeanField(nameStart: line, nameEnd: nameEnd, valueStart: valueStart, valueEnd: valueEnd))
            line = cursor + 2
        }
        return nil
    }

    /// Whether `bytes[start..<end]` equals `lowercased` ignoring ASCII case.
    @inline(__always)
    public static func nameIs(
        _ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ lowercased: StaticString
    )
        -> Bool
    {
        guard end - start == lowercased.utf8CodeUnitCount else { return false }
        let other = lowercased.utf8Start
        for offset in 0..<(end - start) where bytes[start + offset] | 0x20 != other[offset] { return false }
        return true
    }

    /// Whether `bytes[start..<end]` starts with `lowercased` ignoring ASCII case.
    @inline(__always)
    public static func nameHasPrefix(
        _ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ lowercased: StaticString
    ) -> Bool {
        guard end - start >= lowercased.utf8CodeUnitCount else { return false }
        let other = lowercased.utf8Start
        for offset in 0..<lowercased.utf8CodeUnitCount where bytes[start + offset] | 0x20 != other[offset] {
            return false
        }
        return true
    }

    /// Fields a proxy never forwards (RFC 9110 §7.6.1), and the framing ones it sets itself.
    public static func isHopByHop(_ bytes: UnsafeRawBufferPointer, _ field: LeanField) -> Bool {
        let (start, end) = (field.nameStart, field.nameEnd)
        switch end - start {
        case 2: return nameIs(bytes, start, end, "te")
        case 7: return nameIs(bytes, start, end, "upgrade") || nameIs(bytes, start, end, "trailer")
        case 10: return nameIs(bytes, start, end, "connection") || nameIs(bytes, start, end, "keep-alive")
        case 17: return nameIs(bytes, start, end, "transfer-encoding")
        case 16: return nameIs(bytes, start, end, "proxy-connection")
        default: return false
        }
    }

    /// A decimal `Content-Length` value; nil when not one.
    public static func decimal(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Int? {
        guard end > start, end - start <= 18 else { return nil }
        var value = 0
        for index in start..<end {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int(digit)
        }
        return value
    }

    @inline(__always)
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// No control byte and no DEL among eight bytes.
    @inline(__always)
    static func isPlainText(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        let belowSpace = (word &- ones &* 0x20) & ~word & high
        let del = word ^ (ones &* 0x7F)
        return belowSpace == 0 && (del &- ones) & ~del & high == 0
    }
}
