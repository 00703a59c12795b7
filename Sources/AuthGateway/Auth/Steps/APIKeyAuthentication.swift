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

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard case .apiKey(let presented) = state.credential, let table = self.table else { return .next }
        guard let key = table.key(presented), !key.isExpired(now: request.now) else { return .refuse(.apiKeyInvalid) }
        var identity = Identity(
            token: key.token, accessToken: ExtractedToken(value: presented[...], location: table.location),
            issuer: APIKeyTable.issuer, kind: .apiKey)
        identity.apiKeyID = key.id
        state.identity = identity
        return .next
    }
}

/// The configured API keys, by the SHA-256 of their value: built once per configuration
/// (`RuntimeSnapshot`, so a reload reads `keysFile` again) and shared by every loop.
///
/// Sized for a million keys (docs/policies.md, "API keys"): the entries are the configuration's
/// own array (shared, not copied), and its `APIKeyIndex` finds them; each key adds only its
/// verified-token object.
///
/// Why lookup by digest is constant-time where it matters: the presented key is hashed whole
/// before anything is compared, so what the lookup's timing can depend on is the presented key's
/// digest, never how many leading bytes it shares with a real key (a real key plus a suffix, or
/// its first half, hashes to an unrelated digest). Learning that some digest's first word
/// collides with a stored one would take a 2^64 search and still say nothing of the key
/// (SHA-256 is preimage resistant). Length and byte checks before hashing read only the
/// presented value's shape, which is not secret.
final class APIKeyTable: Sendable {
    /// The `issuer` of an API key's identity: profiles and caches never mix it with a JWT's.
    static let issuer = "urn:auth-gateway:api-key"

    struct Key: Sendable {
        let id: String
        /// The key's claims as a verified token's, built once: a request allocates nothing.
        /// Its `expiresAt` is the key's (infinity when it does not expire).
        let token: VerifiedToken

        func isExpired(now: Double) -> Bool { now >= self.token.expiresAt }
    }

    let header: String
    /// Where the key was found, for the token edits (never forwarded in any case).
    let location: TokenLocation
    private let entries: [APIKeyEntry]
    /// `tokens[i]` stands for `entries[i]`.
    private let tokens: [VerifiedToken]
    private let index: APIKeyIndex

    init(_ configuration: APIKeysConfiguration) {
        self.header = configuration.header
        self.location = .header(name: configuration.header, bearer: false)
        self.entries = configuration.keys
        self.tokens = configuration.keys.map { entry in
            VerifiedToken(
                issuerIndex: -1, generation: 0, claims: entry.claims, subject: entry.claims["sub"]?.stringValue,
                expiresAt: entry.expiresAt ?? .infinity, notBefore: nil, issuedAt: nil, leewaySeconds: 0)
        }
        self.index = configuration.index ?? APIKeyIndex.build(configuration.keys).index
    }

    var count: Int { self.entries.count }

    /// The key `presented` is, or nil: empty, over `maximumKeyBytes`, any byte outside
    /// visible ASCII, or an unknown digest.
    func key(_ presented: String) -> Key? {
        var presented = presented
        let digest = presented.withUTF8 { bytes -> TokenDigest? in
            guard !bytes.isEmpty, bytes.count <= APIKeyAuthentication.maximumKeyBytes else { return nil }
            for byte in bytes where byte < 0x21 || byte > 0x7E { return nil }
            return TokenDigest(of: UnsafeRawBufferPointer(bytes))
        }
        guard let digest, let position = self.index.position(of: digest, in: self.entries) else { return nil }
        return Key(id: self.entries[position].id, token: self.tokens[position])
    }
}
