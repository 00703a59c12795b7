// The two byte scans both floors make on HTTP/1.1 requests, instead of parsing them.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public enum HeadBytes {
    /// The length of the first head in `bytes` (through its blank line), if it is complete.
    public static func headLength(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var index = 3
        while index < bytes.count {
            if bytes[index] == 0x0A, bytes[index - 1] == 0x0D, bytes[index - 2] == 0x0A, bytes[index - 3] == 0x0D {
                return index + 1
            }
            index += 1
        }
        return nil
    }

    /// Whether `head` holds `needle` byte for byte.
    public static func contains(_ head: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        guard head.count >= needle.count, !needle.isEmpty else { return false }
        return needle.withUnsafeBytes { needle in
            for start in 0...(head.count - needle.count) where head[start] == needle[0] {
                if memcmp(head.baseAddress! + start, needle.baseAddress!, needle.count) == 0 { return true }
            }
            return false
        }
    }
}
