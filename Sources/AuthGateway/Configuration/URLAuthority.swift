/// The host and port of a URL's authority — `host`, `host:port`, `[v6]` or `[v6]:port` — as
/// `UpstreamURL` and `PostgresURL` both read them: the host lower-cased and checked (letters,
/// digits, `.`, `-`, `_`, and `:` inside brackets), the port 1–65535 or `defaultPort`.
enum URLAuthority {
    struct Problem: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    /// `example` completes the message for an unbracketed IPv6 address ("write …").
    static func hostAndPort(
        _ authority: Substring, defaultPort: Int, example: String
    ) -> Result<(host: String, port: Int), Problem> {
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                return .failure(Problem("has an unterminated IPv6 address"))
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let afterBracket = authority[authority.index(after: close)...]
            if !afterBracket.isEmpty {
                guard afterBracket.hasPrefix(":") else { return .failure(Problem("has an invalid host")) }
                portText = afterBracket.dropFirst()
            }
        } else if authority.filter({ $0 == ":" }).count > 1 {
            return .failure(Problem("has an IPv6 address without brackets (write \(example))"))
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { return .failure(Problem("has no host")) }
        guard
            host.allSatisfy({
                $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_")
            })
        else {
            return .failure(Problem("has an invalid host"))
        }
        var port = defaultPort
        if let portText {
            guard let parsed = Int(portText), (1...65535).contains(parsed) else {
                return .failure(Problem("port must be between 1 and 65535"))
            }
            port = parsed
        }
        return .success((host.lowercased(), port))
    }

    /// `scheme://authority` normalized as RFC 3986 §6.2.2–6.2.3 says: scheme and host
    /// lower-cased, the scheme's default port dropped. The base of DPoP's `htu` (RFC 9449
    /// §4.3), whether configured (`dpop.publicBaseURL`) or taken from a request.
    static func normalizedOrigin(scheme: String, authority: String) -> String {
        let scheme = scheme.lowercased()
        var authority = authority.lowercased()
        if scheme == "https", authority.hasSuffix(":443") { authority.removeLast(4) }
        if scheme == "http", authority.hasSuffix(":80") { authority.removeLast(3) }
        return "\(scheme)://\(authority)"
    }
}
