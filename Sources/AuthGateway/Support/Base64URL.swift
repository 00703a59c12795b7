/// Base64url without padding (RFC 4648 §5), as JWS compact serialization uses it (RFC 7515 §2).
///
/// Strict on purpose: padding, characters outside the URL-safe alphabet, impossible lengths and
/// non-zero trailing bits are refused, so each byte string has exactly one accepted encoding.
public enum Base64URL {
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            table[Int(char)] = UInt8(index)
        }
        return table
    }()

    private static let encodeTable: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Whether `byte` is one of the 64 characters of the URL-safe alphabet.
    @inline(__always)
    public static func isAlphabetByte(_ byte: UInt8) -> Bool {
        Self.decodeTable[Int(byte)] != 0xFF
    }

    /// Decodes `input`, or returns nil when it is not canonical unpadded base64url.
    public static func decode(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        let count = input.count
        let remainder = count % 4
        if remainder == 1 { return nil }
        let outputCount = count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        // Written in place into an array of the exact size (every token verification decodes
        // three parts: appending byte by byte showed in the profile of unique tokens).
        var valid = true
        let output = Self.decodeTable.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
                var index = 0, written = 0
                while index + 4 <= count {
                    let a = table[Int(input[index])], b = table[Int(input[index + 1])]
                    let c = table[Int(input[index + 2])], d = table[Int(input[index + 3])]
                    if (a | b | c | d) == 0xFF {
                        valid = false
                        break
                    }
                    out[written] = a << 2 | b >> 4
                    out[written + 1] = b << 4 | c >> 2
                    out[written + 2] = c << 6 | d
                    index += 4
                    written += 3
                }
                if valid {
                    switch remainder {
                    case 2:
                        let a = table[Int(input[index])], b = table[Int(input[index + 1])]
                        if (a | b) == 0xFF || b & 0x0F != 0 {
                            valid = false
                        } else {
                            out[written] = a << 2 | b >> 4
                            written += 1
                        }
                    case 3:
                        let a = table[Int(input[index])], b = table[Int(input[index + 1])],
                            c = table[Int(input[index + 2])]
                        if (a | b | c) == 0xFF || c & 0x03 != 0 {
                            valid = false
                        } else {
                            out[written] = a << 2 | b >> 4
                            out[written + 1] = b << 4 | c >> 2
                            written += 2
                        }
                    default:
                        break
                    }
                }
                // UInt8 is trivial: leaving the rest uninitialized after a failure is fine.
                initialized = written
            }
        }
        return valid ? output : nil
    }

    public static func decode(_ string: some StringProtocol) -> [UInt8]? {
        var copy = String(string)
        return copy.withUTF8 { Self.decode(UnsafeRawBufferPointer($0)) }
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        let table = Self.encodeTable
        var output = [UInt8]()
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= input.count {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(table[Int(value >> 18 & 0x3F)])
            output.append(table[Int(value >> 12 & 0x3F)])
            output.append(table[Int(value >> 6 & 0x3F)])
            output.append(table[Int(value & 0x3F)])
            index += 3
        }
        switch input.count - index {
        case 1:
            let value = UInt32(input[index]) << 16
            output.append(table[Int(value >> 18 & 0x3F)])
            output.append(table[Int(value >> 12 & 0x3F)])
        case 2:
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(table[Int(value >> 18 & 0x3F)])
            output.append(table[Int(value >> 12 & 0x3F)])
            output.append(table[Int(value >> 6 & 0x3F)])
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }
}
