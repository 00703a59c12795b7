/// The `htu` a proof must carry: the request's URL as the client saw it, without query and
/// fragment, compared after RFC 3986 §6.2.2–6.2.3 normalization (RFC 9449 §4.3): scheme and
/// host lower-cased, the default port dropped, an empty path as "/", percent-encoded
/// unreserved characters decoded and the remaining escapes upper-cased.
enum DPoPTarget {
    /// `scheme://authority`, normalized.
    static func normalizedBase(scheme: String, authority: String) -> String {
        let scheme = scheme.lowercased()
        var authority = authority.lowercased()
        if scheme == "https", authority.hasSuffix(":443") { authority.removeLast(4) }
        if scheme == "http", authority.hasSuffix(":80") { authority.removeLast(3) }
        return "\(scheme)://\(authority)"
    }

    /// The normalized URL of a request: `base` (already normalized) and the path of `uri`
    /// (origin-form; its query and fragment dropped).
    static func expected(base: String, uri: String) -> String {
        var path = Substring(uri)
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        return base + Self.normalizedPath(path)
    }

    /// A proof's `htu`, normalized; nil when it is no absolute http(s) URL or carries a query or
    /// fragment (RFC 9449 §4.2: "without query and fragment parts").
    static func normalized(htu: String) -> String? {
        guard !htu.contains("?"), !htu.contains("#") else { return nil }
        let lower = htu.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") {
            scheme = "https"
        } else if lower.hasPrefix("http://") {
            scheme = "http"
        } else {
            return nil
        }
        let rest = htu.dropFirst(scheme.count + 3)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        return Self.normalizedBase(scheme: scheme, authority: String(authority)) + Self.normalizedPath(rest[slash...])
    }

    /// Percent-escapes of unreserved characters decoded, the others upper-cased; "" → "/".
    static func normalizedPath(_ path: Substring) -> String {
        guard !path.isEmpty else { return "/" }
        guard path.contains("%") else { return String(path) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(path.utf8.count)
        var input = Array(path.utf8)[...]
        while let byte = input.popFirst() {
            guard byte == UInt8(ascii: "%"), input.count >= 2, let high = Self.hex(input[input.startIndex]),
                let low = Self.hex(input[input.startIndex + 1])
            else {
                bytes.append(byte)
                continue
            }
            input = input.dropFirst(2)
            let decoded = high << 4 | low
            if Self.isUnreserved(decoded) {
                bytes.append(decoded)
            } else {
                bytes.append(UInt8(ascii: "%"))
                let hex = String(decoded, radix: 16, uppercase: true)
                bytes.append(contentsOf: ((hex.count == 1 ? "0" : "") + hex).utf8)
            }
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

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
