/// The `htu` a proof must carry: the request's URL as the client saw it, without query and
/// fragment, compared after RFC 3986 §6.2.2–6.2.3 normalization (RFC 9449 §4.3): scheme and
/// host lower-cased, the default port dropped, an empty path as "/", percent-encoded
/// unreserved characters decoded and the remaining escapes upper-cased.
enum DPoPTarget {
    /// `scheme://authority`, normalized (`URLAuthority.normalizedOrigin`).
    static func normalizedBase(scheme: String, authority: String) -> String {
        URLAuthority.normalizedOrigin(scheme: scheme, authority: authority)
    }

    /// The normalized URL of a request: `base` (already normalized) and the path of `uri`
    /// (origin-form; its query and fragment dropped).
    static func expected(base: String, uri: String) -> String {
        var path = Substring(uri)
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        // The request's own target was checked when it was parsed (a bad escape is a 400).
        return base + (Self.normalizedPath(path) ?? String(path))
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
        guard let path = Self.normalizedPath(rest[slash...]) else { return nil }
        return Self.normalizedBase(scheme: scheme, authority: String(authority)) + path
    }

    /// Percent-escapes of unreserved characters decoded, the others upper-cased (the request
    /// path's own normalization, `RequestTarget`); "" → "/"; nil for a malformed escape.
    static func normalizedPath(_ path: Substring) -> String? {
        guard !path.isEmpty else { return "/" }
        guard path.contains("%") else { return String(path) }
        return try? RequestTarget.decodeUnreserved(path)
    }
}
