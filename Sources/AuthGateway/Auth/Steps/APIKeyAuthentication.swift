import NIOHTTP1

/// A credential beside tokens: the API key in the configured header (docs/policies.md, "API
/// keys"). Runs first, and only for requests that present that header; the key's claims then
/// stand in for a token's everywhere (`require`, identity headers, rate limits), as an
/// `Identity` built like a JWT's.
///
/// Hostile keys (empty, huge, non-ASCII, a valid key with a suffix) are all 401
/// `apikey.invalid`; a key together with an access token is 400 `apikey.ambiguous`: the
/// gateway does not guess which credential speaks.
struct APIKeyAuthentication {
    enum Outcome {
        case identity(Identity)
        case refused(GatewayError)
    }

    /// Longer keys are refused before hashing: `apikey new` makes 47 bytes.
    static let maximumKeyBytes = 256

    let table: APIKeyTable
    /// The configured token sources: a key and a token in one request is ambiguous.
    let tokenSources: [TokenSourceConfiguration]

    /// nil when the request presents no key (or the route has `auth: none`): the token
    /// sources decide, and the request paid one header scan here.
    func authenticate(_ request: AuthRequest) -> Outcome? {
        guard request.route.auth != .none else { return nil }
        var presented: String?
        var lines = 0
        for (name, value) in request.headers where ASCII.equalsIgnoringCase(name, self.table.header) {
            presented = value
            lines += 1
        }
        guard let presented else { return nil }
        guard lines == 1 else { return .refused(.apiKeyInvalid) }
        if TokenExtractor.extract(from: request.headers, sources: self.tokenSources) != .none {
            return .refused(.apiKeyAmbiguous)
        }
        guard let key = self.table.key(presented), !key.isExpired(now: request.now) else {
            return .refused(.apiKeyInvalid)
        }
        var identity = Identity(
            token: key.token, accessToken: ExtractedToken(value: presented[...], location: self.table.location),
            issuer: APIKeyTable.issuer)
        identity.apiKeyID = key.id
        return .identity(identity)
    }
}

/// The configured API keys, by the SHA-256 of their value: built once per configuration
/// (`RuntimeSnapshot`, so a reload reads `keysFile` again) and shared by every loop.
///
/// Why a dictionary keyed by digest is constant-time where it matters: the presented key is
/// hashed whole before anything is compared, so what the lookup's timing can depend on is the
/// presented key's digest, never how many leading bytes it shares with a real key (a real key
/// plus a suffix, or its first half, hashes to an unrelated digest). Learning that some digest's
/// first word collides with a stored one would take a 2^64 search and still say nothing of the
/// key (SHA-256 is preimage resistant). Length and byte checks before hashing read only the
/// presented value's shape, which is not secret.
final class APIKeyTable: Sendable {
    /// The `issuer` of an API key's identity: profiles and caches never mix it with a JWT's.
    static let issuer = "urn:auth-gateway:api-key"

    struct Key: Sendable {
        let id: String
        let expiresAt: Double?
        /// The key's claims as a verified token's, built once: a request allocates nothing.
        let token: VerifiedToken

        func isExpired(now: Double) -> Bool { self.expiresAt.map { now >= $0 } ?? false }
    }

    let header: String
    /// Where the key was found, for the token edits (never forwarded in any case).
    let location: TokenLocation
    private let keys: [TokenDigest: Key]

    init(_ configuration: APIKeysConfiguration) {
        self.header = configuration.header
        self.location = .header(name: configuration.header, bearer: false)
        var keys: [TokenDigest: Key] = [:]
        for entry in configuration.keys {
            guard let digest = TokenDigest(sha256: entry.sha256) else { continue }
            let token = VerifiedToken(
                issuerIndex: -1, generation: 0, claims: entry.claims, subject: entry.claims["sub"]?.stringValue,
                expiresAt: entry.expiresAt ?? .infinity, notBefore: nil, issuedAt: nil, leewaySeconds: 0)
            keys[digest] = Key(id: entry.id, expiresAt: entry.expiresAt, token: token)
        }
        self.keys = keys
    }

    var count: Int { self.keys.count }

    /// The key `presented` is, or nil: empty, over `maximumKeyBytes`, any byte outside
    /// visible ASCII, or an unknown digest.
    func key(_ presented: String) -> Key? {
        var presented = presented
        return presented.withUTF8 { bytes -> Key? in
            guard !bytes.isEmpty, bytes.count <= APIKeyAuthentication.maximumKeyBytes else { return nil }
            for byte in bytes where byte < 0x21 || byte > 0x7E { return nil }
            return self.keys[TokenDigest(of: UnsafeRawBufferPointer(bytes))]
        }
    }
}
