/// `tokens.apiKeys` (docs/policies.md, "API keys"): keys for machine clients, presented in one
/// header, each known only by the SHA-256 of its value.
public struct APIKeysConfiguration: Sendable, Equatable {
    public static let defaultHeader = "X-API-Key"

    /// The header a client presents its key in; never forwarded, never logged.
    public var header = Self.defaultHeader
    /// `keysFile`, resolved against the configuration's folder; read at every (re)load.
    public var keysFile: String?
    /// The inline `keys` and the file's, in that order.
    public var keys: [APIKeyEntry] = [] {
        didSet { self.index = nil }
    }
    /// `keys` by digest, as the loader built it (it finds keys listed twice with it); nil when
    /// `keys` was set otherwise, and the gateway builds it then.
    var index: APIKeyIndex?

    public init(header: String = Self.defaultHeader, keysFile: String? = nil, keys: [APIKeyEntry] = []) {
        self.header = header
        self.keysFile = keysFile
        self.keys = keys
    }

    /// The index is derived from `keys`, so it takes no part.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.header == rhs.header && lhs.keysFile == rhs.keysFile && lhs.keys == rhs.keys
    }
}

/// One API key: its name, the digest of its value, the claims it stands for.
///
/// Kept small, because a deployment may list a million (docs/policies.md, "API keys"): the
/// digest is stored inline, not as an array of its own.
public struct APIKeyEntry: Sendable, Equatable {
    /// Names the key in the access log and in `check --request`; never secret.
    public var id: String
    /// SHA-256 of the key's bytes.
    public var digest: TokenDigest
    /// The request's claims when the key is presented, as a token's would be.
    public var claims: JSONObject
    /// Unix seconds after which the key is refused; nil: it does not expire.
    public var expiresAt: Double?

    public init(id: String, digest: TokenDigest, claims: JSONObject, expiresAt: Double? = nil) {
        self.id = id
        self.digest = digest
        self.claims = claims
        self.expiresAt = expiresAt
    }

    /// `sha256` must be 32 bytes.
    public init(id: String, sha256: [UInt8], claims: JSONObject, expiresAt: Double? = nil) {
        guard let digest = TokenDigest(sha256: sha256) else { preconditionFailure("a SHA-256 is 32 bytes") }
        self.init(id: id, digest: digest, claims: claims, expiresAt: expiresAt)
    }

    /// The digest's 32 bytes.
    public var sha256: [UInt8] { self.digest.bytes }
}

/// The digest stays out of descriptions and dumps: it names the key as well as the key does
/// wherever digests are compared (docs/operations.md, "What is never logged").
extension APIKeyEntry: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "APIKeyEntry(id: \"\(self.id)\", sha256: <redacted>, expiresAt: \(self.expiresAt.map { "\($0)" } ?? "nil"))"
    }
    public var debugDescription: String { self.description }
    public var customMirror: Mirror {
        Mirror(self, children: ["id": self.id, "claims": self.claims, "expiresAt": self.expiresAt as Any])
    }
}
