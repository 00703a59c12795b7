public struct RouteConfiguration: Sendable {
    public enum PathMatch: Sendable, Equatable {
        case prefix(String)
        case exact(String)
    }

    public enum AuthMode: String, Sendable {
        case required, optional, none
    }

    public var name: String
    /// Lower-cased; compared with the request's host without port.
    public var host: String?
    public var pathMatch: PathMatch
    /// Upper-case method names; nil matches every method.
    public var methods: Set<String>?
    public var backend: String
    public var auth: AuthMode
    /// `require` (docs/policies.md): a requirement tree, parsed and checked at load;
    /// `Requirement.empty` when the route has none.
    public var require: Requirement
    public var stripPathPrefix: Bool
    public var forwardAccessToken: Bool
    /// `off` ignores `cnf.jkt`; `allowed` checks proofs of bound tokens; `required` refuses
    /// unbound tokens too (docs/authentication.md).
    public var dpop: DPoPMode = .allowed
    /// Forward the `DPoP` header to the backend (removed by default).
    public var forwardDPoPProof = false
    /// A browser navigation without credentials is sent to sign in (docs/browser-sign-in.md).
    public var signIn = false
    /// Cross-origin browser calls (docs/policies.md, "CORS"); nil: the gateway adds no CORS.
    public var cors: CORSConfiguration? = nil
    /// Long-lived responses of the route (docs/streams.md): closed at the credential's expiry.
    public var streams = StreamsConfiguration()
    /// `assertion` (docs/assertions.md): the backend gets an assertion the gateway signed; nil: none.
    public var assertion: RouteAssertion? = nil
    /// `exchange` (docs/token-exchange.md): the backend gets an exchanged token; nil: none.
    public var exchange: ExchangeConfiguration? = nil

    public enum DPoPMode: String, Sendable {
        case off, allowed, required
    }

    package init(
        name: String, host: String?, pathMatch: PathMatch, methods: Set<String>?, backend: String, auth: AuthMode,
        require: Requirement = .empty,
        stripPathPrefix: Bool, forwardAccessToken: Bool
    ) {
        self.name = name
        self.host = host
        self.pathMatch = pathMatch
        self.methods = methods
        self.backend = backend
        self.auth = auth
        self.require = require
        self.stripPathPrefix = stripPathPrefix
        self.forwardAccessToken = forwardAccessToken
    }
}

/// An outgoing header filled from a verified identity value.
public struct IdentityHeader: Sendable {
    public var name: String
    public var path: IdentityValuePath
}

/// A value rules read about a request (`IdentityFields`): `claims.<name>`, `profile.<name>`,
/// `dpop.jkt`, `client.ip`, `request.method` or `request.header.<name>`. Each place that takes
/// one says which sources it accepts (identity headers and rate-limit keys take no `request.*`).
public struct IdentityValuePath: Sendable, Hashable, CustomStringConvertible {
    public enum Source: String, Sendable, Hashable {
        case claims, profile
        /// `dpop.jkt`: the thumbprint of a verified DPoP proof's key (docs/authentication.md).
        case dpop
        /// `client.ip`: the client's address (docs/rate-limits.md).
        case client
        /// `request.method`, `request.header.<name>`, and the canonical `request.host` and
        /// `request.path` (docs/policies.md, docs/forwarding.md "Request targets").
        case request
    }

    /// `client.ip`.
    public static let clientIP = IdentityValuePath(source: .client, name: "ip")
    /// `request.method`.
    public static let requestMethod = IdentityValuePath(source: .request, name: "method")

    public let source: Source
    /// What follows the source: `realm_access.roles`, `jkt`, `ip`, `method`, `header.X-Tenant`.
    public let name: String
    /// `name` cut once, so that a request's lookup allocates nothing: the dot segments of a
    /// dotted `claims` or `profile` name (empty without dots), or the header name alone of
    /// `request.header.<name>`.
    let segments: [String]
    /// A string value reads as a space-separated list too: the `scope` and `scp` claims
    /// (RFC 8693 §4.2, RFC 9068 §2.2.3), and profile members of those names.
    let readsAsList: Bool

    public init(source: Source, name: String) {
        self.source = source
        self.name = name
        switch source {
        case .claims, .profile:
            self.segments =
                name.contains(".") ? name.split(separator: ".", omittingEmptySubsequences: false).map(String.init) : []
            self.readsAsList = IdentityLookup.readsAsList(name)
        case .request:
            self.segments = name.hasPrefix("header.") ? [String(name.dropFirst("header.".count))] : []
            self.readsAsList = false
        case .dpop, .client:
            self.segments = []
            self.readsAsList = false
        }
    }

    public init?(parsing text: String) {
        // Names end up in error descriptions and logs: no control characters.
        guard text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { return nil }
        guard let dot = text.firstIndex(of: ".") else { return nil }
        guard let source = Source(rawValue: String(text[..<dot])) else { return nil }
        let name = String(text[text.index(after: dot)...])
        guard !name.isEmpty else { return nil }
        switch source {
        case .claims, .profile: break
        case .dpop: guard name == "jkt" else { return nil }
        case .client: guard name == "ip" else { return nil }
        case .request:
            guard
                name == "method" || name == "host" || name == "path"
                    || (name.hasPrefix("header.") && HTTPToken.isValid(name.dropFirst("header.".count)))
            else { return nil }
        }
        self.init(source: source, name: name)
    }

    /// The header `request.header.<name>` reads; nil for every other path.
    var requestHeaderName: String? {
        self.source == .request && !self.segments.isEmpty ? self.segments[0] : nil
    }

    public var description: String { "\(self.source.rawValue).\(self.name)" }
}
