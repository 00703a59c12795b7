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
        var rest = Substring(uri)
        // Byte-wise (UTF-8 view) throughout: Character-based scanning pays for grapheme
        // breaking, and `String.contains(String)` resolves to Foundation's NSString search
        // (measured: ~2 % of the CPU of a proxied request together).
        let bytes = rest.utf8
        // A fragment never belongs in a request target; bytes outside visible ASCII never do.
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }) else { throw .malformed }
        var authority: Substring?
        if bytes.first != UInt8(ascii: "/") {
            // absolute-form: scheme "://" authority path-abempty [ "?" query ]
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
        }
        var rawPath = rest
        if let mark = rest.utf8.firstIndex(of: UInt8(ascii: "?")) {
            rawPath = rest[..<mark]
            self.query = rest[rest.utf8.index(after: mark)...]
        } else {
            self.query = nil
        }
        self.path = try CanonicalPath.make(rawPath, settings: settings)
        let fieldHost = try hostField.map { value throws(TargetRefusal) in try CanonicalHost.make(value) }
        if let authority {
            let host = try CanonicalHost.make(authority)
            // RFC 9112 §3.2.2 says to ignore `Host` here; a `Host` that names another host is
            // what a server reading `Host` would route by, so neither is guessed.
            if let fieldHost, fieldHost.name != host.name { throw .ambiguousHost(.differsFromAuthority) }
            self.host = host
            self.rewritesHost = true
        } else if let fieldHost, let hostField {
            self.host = fieldHost
            self.rewritesHost = !fieldHost.isSpelled(as: hostField)
        } else {
            self.host = nil
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
