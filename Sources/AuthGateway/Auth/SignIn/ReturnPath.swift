/// Where a browser goes after signing in (docs/browser-sign-in.md, "Return paths"): a relative
/// path on this origin, or `/`. Never an open redirect: `//evil`, `https://evil`, `/\evil`,
/// control characters, and the same written with percent-escapes all become `/`.
enum ReturnPath {
    static let maximumLength = 2048

    static func sanitize(_ candidate: Substring?) -> String {
        guard let candidate, Self.isSafe(candidate) else { return "/" }
        return String(candidate)
    }

    /// A path that starts with exactly one `/` and stays on this origin, as written and after
    /// percent-decoding (a browser or a backend may decode it before following it).
    static func isSafe(_ path: Substring) -> Bool {
        guard path.utf8.count <= Self.maximumLength, Self.isSafeText(path.utf8) else { return false }
        guard let decoded = Self.percentDecoded(path.utf8) else { return false }
        return Self.isSafeText(decoded)
    }

    private static func isSafeText(_ bytes: some Collection<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        guard iterator.next() == UInt8(ascii: "/") else { return false }
        var index = 1
        for byte in bytes.dropFirst() {
            // `//host` and `/\host` are scheme-relative in browsers (WHATWG URL treats `\` as `/`).
            if index == 1 && (byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\")) { return false }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte == 0x7F { return false }
            index += 1
        }
        return true
    }

    /// The bytes with `%XX` escapes decoded once; nil for a malformed escape.
    private static func percentDecoded(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue)
            else { return nil }
            output.append(high << 4 | low)
        }
        return output
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
