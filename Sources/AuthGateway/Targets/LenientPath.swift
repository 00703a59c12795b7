/// A canonical path as a lenient matcher reads it (docs/forwarding.md, "Spellings that are
/// refused"): without case, and without trailing dots and spaces. Caddy's path matchers
/// lower-case the decoded path with Go's `strings.ToLower` (`/ADMIN/x`, and `/adm%C4%B0n/x` with
/// a dotted capital I, are `/admin/x` there) and, before 2.7, trimmed trailing dots and spaces
/// on every system, as Windows and IIS do with file names (`/admin.` is `/admin`); Java's
/// `equalsIgnoreCase` also compares upper-case forms (`ı` matches `i`). Only a key for finding
/// a path that names another route read that way (`LenientRoutes`); never forwarded.
///
/// ASCII letters are lower-cased; a percent-encoded non-ASCII character (a canonical path holds
/// UTF-8 as escapes) becomes the lower case of its upper case, decoded (`ſ` → `s`, `ı` → `i`,
/// the Kelvin sign → `k`, `ß` → `ss`), and `İ` becomes `i` (Go's simple mapping); escapes of
/// ASCII characters (`%20`, `%2F` when kept) stay as they are; then trailing `.` and `%20` go.
/// Reading more leniently than any one server only ever means a refusal where routes would
/// differ, never a wrong route.
enum LenientPath {
    /// The lenient key of `path`; nil when it is `path` itself (no upper-case ASCII letter
    /// outside an escape, no escaped non-ASCII byte, no trailing dot or space): one scan in the
    /// common case.
    static func key(_ path: Substring) -> String? {
        guard Self.mayChange(path.utf8) else { return nil }
        let bytes = path.utf8
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        // The bytes of consecutive escapes of non-ASCII bytes: one UTF-8 sequence or more.
        var encoded: [UInt8] = []
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == .percent, let value = Self.escape(bytes, at: index) {
                let end = bytes.index(index, offsetBy: 3)
                if value >= 0x80 {
                    encoded.append(value)
                } else {
                    Self.flush(&encoded, into: &output)
                    output.append(contentsOf: bytes[index..<end])
                }
                index = end
                continue
            }
            Self.flush(&encoded, into: &output)
            output.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte)
            index = bytes.index(after: index)
        }
        Self.flush(&encoded, into: &output)
        Self.trimTrailingDotsAndSpaces(&output)
        let key = String(decoding: output, as: UTF8.self)
        return key.utf8.elementsEqual(path.utf8) ? nil : key
    }

    private static func mayChange(_ bytes: Substring.UTF8View) -> Bool {
        if bytes.last == .dot || Self.endsWithEscapedSpace(bytes) { return true }
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { return true }
            if byte == .percent, let value = Self.escape(bytes, at: index) {
                if value >= 0x80 { return true }
                index = bytes.index(index, offsetBy: 3)
                continue
            }
            index = bytes.index(after: index)
        }
        return false
    }

    private static func endsWithEscapedSpace<Bytes: BidirectionalCollection>(_ bytes: Bytes) -> Bool
    where Bytes.Element == UInt8 {
        bytes.count >= 3 && bytes.suffix(3).elementsEqual("%20".utf8)
    }

    private static func trimTrailingDotsAndSpaces(_ output: inout [UInt8]) {
        while true {
            if output.last == .dot {
                output.removeLast()
            } else if Self.endsWithEscapedSpace(output) {
                output.removeLast(3)
            } else {
                return
            }
        }
    }

    /// The value of the escape `%XY` at `index`, if there is a whole one.
    private static func escape(_ bytes: Substring.UTF8View, at index: Substring.UTF8View.Index) -> UInt8? {
        guard bytes.distance(from: index, to: bytes.endIndex) >= 3,
            let high = Self.hexValue(bytes[bytes.index(index, offsetBy: 1)]),
            let low = Self.hexValue(bytes[bytes.index(index, offsetBy: 2)])
        else { return nil }
        return high << 4 | low
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Appends the folded characters of the UTF-8 in `encoded` (decoded), and empties it.
    private static func flush(_ encoded: inout [UInt8], into output: inout [UInt8]) {
        guard !encoded.isEmpty else { return }
        for scalar in String(decoding: encoded, as: UTF8.self).unicodeScalars {
            // Go's simple mapping: İ is i (the full mapping adds a combining dot).
            let folded = scalar == "\u{130}" ? "i" : String(scalar).uppercased().lowercased()
            output.append(contentsOf: folded.utf8)
        }
        encoded.removeAll(keepingCapacity: true)
    }
}

extension UInt8 {
    fileprivate static let percent = UInt8(ascii: "%")
    fileprivate static let dot = UInt8(ascii: ".")
}
