/// A request's target made canonical, once, by one function (docs/forwarding.md, "Request
/// targets"): the path (`CanonicalPath`), the untouched query and the host (`CanonicalHost`).
/// Route matching, `require` on `request.*`, rate-limit keys, DPoP's `htu`, every authorizer
/// contract, `check --request` and the forwarded request all read this value, so no decision is
/// taken on one spelling while the backend acts on another.
struct RequestTarget: Equatable {
    /// Canonical: what routes match and the backend receives (minus a stripped prefix).
    var path: String
    /// Everything after the first `?`, without it, unchanged; nil when there is no `?`.
    var query: Substring?
    /// The canonical host: the absolute-form authority's, else the `Host` field's; nil when the
    /// request names none (HTTP/1.0 without `Host`).
    var host: CanonicalHost?
    /// Whether the backend's `Host` must be rewritten to `host.authority`: the target was
    /// absolute-form (RFC 9112 §3.2.2: its authority replaces `Host`), or the `Host` field was
    /// not spelled canonically. False in the common case: the client's field goes on as it is.
    var rewritesHost = false

    init(path: String, query: Substring?, host: CanonicalHost? = nil, rewritesHost: Bool = false) {
        self.path = path
        self.query = query
        self.host = host
        self.rewritesHost = rewritesHost
    }

    /// The canonical target of `uri` (origin-form, or http(s) absolute-form) and the request's
    /// `hostField` (its one `Host` value, or HTTP/2's `:authority`). Throws the refusal the
    /// request gets instead of a decision.
    init(uri: String, hostField: Substring?, settings: PathSettings) throws(TargetRefusal) {
        var uri = uri
        // Byte-wise, over contiguous bytes: Character-based scanning pays for grapheme breaking,
        // `String.contains(String)` resolves to Foundation's NSString search, and one walk of the
        // UTF-8 view per rule cost ~1 % of a request's CPU (measured, docs/benchmarks.md).
        let scan = uri.withUTF8 { TargetScan($0) }
        // A fragment never belongs in a request target; bytes outside visible ASCII never do.
        guard scan.isVisibleASCII else { throw .malformed }
        var authority: Substring?
        var rawPath = uri[...]
        if scan.isOriginForm {
            // The common case, decided by the one scan: the path is canonical as sent unless the
            // scan met what `CanonicalPath` rewrites.
            if let mark = scan.queryMark {
                let index = uri.utf8.index(uri.startIndex, offsetBy: mark)
                rawPath = uri[..<index]
                self.query = uri[uri.utf8.index(after: index)...]
            } else {
                self.query = nil
            }
            if scan.pathNeedsRebuild {
                self.path = try CanonicalPath.rebuild(rawPath, settings: settings)
            } else {
                self.path = scan.queryMark == nil ? uri : String(rawPath)
            }
        } else {
            // absolute-form: scheme "://" authority path-abempty [ "?" query ]
            var rest = uri[...]
            let schemeLength: Int
            if ASCII.hasPrefixIgnoringCase(rest, "http://") {
                schemeLength = 7
            } else if ASCII.hasPrefixIgnoringCase(rest, "https://") {
                schemeLength = 8
            } else {
                throw .malformed
            }
            rest = rest[rest.utf8.index(rest.startIndex, offsetBy: schemeLength)...]
            let end =
                rest.utf8.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }) ?? rest.endIndex
            authority = rest[..<end]
            rest = rest[end...]
            if rest.utf8.first != UInt8(ascii: "/") { rest = "/" + rest }
            rawPath = rest
            if let mark = rest.utf8.firstIndex(of: UInt8(ascii: "?")) {
                rawPath = rest[..<mark]
                self.query = rest[rest.utf8.index(after: mark)...]
            } else {
                self.query = nil
            }
            self.path = try CanonicalPath.make(rawPath, settings: settings)
        }
        (self.host, self.rewritesHost) = try Self.host(authority: authority, hostField: hostField)
    }

    /// The canonical host, from an absolute-form `authority` or else the `hostField`, and whether
    /// the backend's `Host` must be rewritten to it.
    private static func host(
        authority: Substring?, hostField: Substring?
    ) throws(TargetRefusal) -> (CanonicalHost?, rewritesHost: Bool) {
        let field = try hostField.map { value throws(TargetRefusal) in try CanonicalHost.canonicalizing(value) }
        if let authority {
            let host = try CanonicalHost.make(authority)
            // RFC 9112 §3.2.2 says to ignore `Host` here; a `Host` that names another host is
            // what a server reading `Host` would route by, so neither is guessed.
            if let field, field.host.name != host.name { throw .ambiguousHost(.differsFromAuthority) }
            return (host, true)
        }
        guard let field else { return (nil, false) }
        return (field.host, !field.isSpelled)
    }

    /// What one pass over a request target's bytes learns of it.
    private struct TargetScan {
        /// Every byte is visible ASCII, and none is `#`.
        var isVisibleASCII = true
        /// It starts with `/` (else it must be absolute-form).
        var isOriginForm: Bool
        /// Offset of the first `?` (origin-form only).
        var queryMark: Int?
        /// The path before the `?` holds what `CanonicalPath` rewrites (origin-form only).
        var pathNeedsRebuild = false

        init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.isOriginForm = bytes.first == UInt8(ascii: "/")
            var previous: UInt8 = 0
            for index in bytes.indices {
                let byte = bytes[index]
                if byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "#") { self.isVisibleASCII = false }
                if self.queryMark == nil {
                    if byte == UInt8(ascii: "?") {
                        self.queryMark = index
                    } else if CanonicalPath.startsRebuild(byte, after: previous) {
                        self.pathNeedsRebuild = true
                    }
                    previous = byte
                }
            }
        }
    }

    /// The target to send upstream: `path` (possibly with a prefix stripped) plus the query.
    func upstreamURI(strippingPrefix prefix: String?) -> String {
        var path = self.path
        if let prefix, path.hasPrefix(prefix) {
            path = String(path.dropFirst(prefix.count))
            if !path.hasPrefix("/") { path = "/" + path }
        }
        guard let query = self.query else { return path }
        return path + "?" + query
    }

    /// The backend's `Host` when it must differ from the client's field (`rewritesHost`).
    var backendHost: String? {
        guard self.rewritesHost, let host = self.host else { return nil }
        return host.authority
    }
}
