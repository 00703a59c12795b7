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
    public var require: [Requirement]
    public var stripPathPrefix: Bool
    public var forwardAccessToken: Bool
    /// `off` ignores `cnf.jkt`; `allowed` checks proofs of bound tokens; `required` refuses
    /// unbound tokens too (SPEC §4.14).
    public var dpop: DPoPMode = .allowed
    /// Forward the `DPoP` header to the backend (removed by default).
    public var forwardDPoPProof = false
    /// A browser navigation without credentials is sent to sign in (docs/browser-sign-in.md).
    public var signIn = false

    public enum DPoPMode: String, Sendable {
        case off, allowed, required
    }

    package init(
        name: String, host: String?, pathMatch: PathMatch, methods: Set<String>?, backend: String, auth: AuthMode,
        require: [Requirement],
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

/// One entry of a route's `require`: the value at `path` must equal `expected`
/// (or, for an array value, contain it).
public struct Requirement: Sendable {
    public var path: IdentityValuePath
    public var expected: JSONValue
}

/// An outgoing header filled from a verified identity value.
public struct IdentityHeader: Sendable {
    public var name: String
    public var path: IdentityValuePath
}

/// A value rules read about a request (`IdentityFields`): `claims.<name>`, `profile.<name>`,
/// `dpop.jkt`, or `client.ip`. Each place that takes one says which sources it accepts.
public struct IdentityValuePath: Sendable, Hashable, CustomStringConvertible {
    public enum Source: String, Sendable, Hashable {
        case claims, profile
        /// `dpop.jkt`: the thumbprint of a verified DPoP proof's key (docs/authentication.md).
        case dpop
        /// `client.ip`: the client's address (docs/rate-limits.md).
        case client
    }

    /// `client.ip`.
    public static let clientIP = IdentityValuePath(source: .client, name: "ip")

    public var source: Source
    public var name: String

    public init(source: Source, name: String) {
        self.source = source
        self.name = name
    }

    public init?(parsing text: String) {
        // Names end up in error descriptions and logs: no control characters.
        guard text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { return nil }
        guard let dot = text.firstIndex(of: ".") else { return nil }
        guard let source = Source(rawValue: String(text[..<dot])) else { return nil }
        let name = String(text[text.index(after: dot)...])
        guard !name.isEmpty, source != .dpop || name == "jkt", source != .client || name == "ip" else { return nil }
        self.init(source: source, name: name)
    }

    public var description: String { "\(self.source.rawValue).\(self.name)" }
}
