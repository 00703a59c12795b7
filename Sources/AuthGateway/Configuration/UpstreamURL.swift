/// An `http://` or `https://` base URL of something behind the gateway: a backend, the auth
/// service, a JWKS endpoint.
public struct UpstreamURL: Sendable, Hashable, CustomStringConvertible {
    public enum Scheme: String, Sendable {
        case http, https
    }

    public var scheme: Scheme
    /// Host name or IP literal, without brackets.
    public var host: String
    public var port: Int
    /// Path and query after the authority ("" when none); used for JWKS URLs.
    public var pathAndQuery: String

    public var isTLS: Bool { self.scheme == .https }

    /// The value of a `Host` header for this URL.
    public var hostHeader: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let defaultPort = self.scheme == .https ? 443 : 80
        return self.port == defaultPort ? host : "\(host):\(self.port)"
    }

    public var description: String { "\(self.scheme.rawValue)://\(self.hostHeader)\(self.pathAndQuery)" }

    /// Parses an absolute URL; nil with a reason on failure.
    public static func parse(_ text: String) -> Result<UpstreamURL, ParseError> {
        let lower = text.lowercased()
        let scheme: Scheme
        let rest: Substring
        if lower.hasPrefix("http://") {
            scheme = .http
            rest = text.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            scheme = .https
            rest = text.dropFirst(8)
        } else {
            return .failure(.init("must start with http:// or https://"))
        }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let pathAndQuery = String(rest[authorityEnd...])
        if pathAndQuery.contains("#") { return .failure(.init("must not contain a fragment")) }
        if authority.contains("@") { return .failure(.init("must not contain credentials")) }
        if pathAndQuery.contains(where: { $0.isWhitespace }) { return .failure(.init("must not contain spaces")) }
        switch URLAuthority.hostAndPort(
            authority, defaultPort: scheme == .https ? 443 : 80, example: "http://[::1]:8080")
        {
        case .success(let (host, port)):
            return .success(UpstreamURL(scheme: scheme, host: host, port: port, pathAndQuery: pathAndQuery))
        case .failure(let problem):
            return .failure(.init(problem.message))
        }
    }

    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }
}
