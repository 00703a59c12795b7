/// The `htu` a proof must carry: the request's URL as the client saw it, without query and
/// fragment (RFC 9449 §4.3). Both sides are compared in the canonical form every other decision
/// uses (docs/forwarding.md, "Request targets"): scheme lower-cased, the host canonical
/// (`CanonicalHost`: lower-cased, no trailing dot), the default port dropped, the path canonical
/// (`CanonicalPath`: a superset of RFC 3986 §6.2.2's syntax-based normalization). A proof for
/// `/a/../admin` is a proof for `/admin`, the path the request was decided on.
enum DPoPTarget {
    /// `scheme://authority`, normalized; nil when the authority is no canonical-able host.
    static func normalizedBase(scheme: String, authority: String) -> String? {
        guard let host = try? CanonicalHost.make(authority[...]) else { return nil }
        return URLAuthority.normalizedOrigin(scheme: scheme, authority: host.authority)
    }

    /// The normalized URL of a request: `base` (already normalized) and its canonical path.
    static func expected(base: String, canonicalPath: String) -> String { base + canonicalPath }

    /// A proof's `htu`, normalized; nil when it is no absolute http(s) URL, carries a query or
    /// fragment (RFC 9449 §4.2: "without query and fragment parts"), or a path the gateway
    /// refuses (an ambiguous spelling is never equal to a decided request).
    static func normalized(htu: String, paths: PathSettings) -> String? {
        guard !htu.contains("?"), !htu.contains("#") else { return nil }
        let scheme: String
        if ASCII.hasPrefixIgnoringCase(htu, "https://") {
            scheme = "https"
        } else if ASCII.hasPrefixIgnoringCase(htu, "http://") {
            scheme = "http"
        } else {
            return nil
        }
        let rest = htu.dropFirst(scheme.count + 3)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        guard !authority.isEmpty, let base = Self.normalizedBase(scheme: scheme, authority: String(authority)) else {
            return nil
        }
        let path = rest[slash...]
        guard path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
            let canonical = try? CanonicalPath.make(path.isEmpty ? "/" : path, settings: paths)
        else { return nil }
        return base + canonical
    }
}
