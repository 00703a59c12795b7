import NIOHTTP1

/// A credential beside tokens: the API key in the configured header (docs/policies.md, "API
/// keys"), which `CredentialExtraction` found. The key's claims then stand in for a token's
/// everywhere (`require`, identity headers, rate limits), as an `Identity` of kind `apiKey`:
/// no proof of possession and no profile (a profile fetch would present the key to the auth
/// service, and a key never leaves the gateway).
///
/// Hostile keys (empty, huge, non-ASCII, a valid key with a suffix, sent twice) are all 401
/// `apikey.invalid`; a key together with an access token is 400 `apikey.ambiguous` (decided at
/// extraction): the gateway does not guess which credential speaks.
struct APIKeyAuthentication: AuthenticationStep {
    /// Longer keys are refused before hashing: `apikey new` makes 47 bytes.
    static let maximumKeyBytes = 256

    /// nil without `tokens.apiKeys`: no request presents a key then.
    let table: APIKeyTable?

    init(table: APIKeyTable?) { self.table = table }

    init(_ context: StepContext) { self.init(table: context.features.apiKeys) }

    func run(_ state: AuthState, _ request: AuthRequest) -> StepResult<AuthState> {
        guard case .apiKey(let presented) = state.credential, let table = self.table else { return .next(state) }
        guard let key = table.key(presented), !key.isExpired(now: request.now) else { return .refuse(.apiKeyInvalid) }
        var identity = Identity(
            token: key.token, accessToken: ExtractedToken(value: presented[...], location: table.location),
            issuer: APIKeyTable.issuer, kind: .apiKey)
        identity.apiKeyID = key.id
        var state = state
        state.identity = identity
        return .next(state)
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
