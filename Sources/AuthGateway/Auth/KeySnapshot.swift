/// The trusted issuers and their keys at one moment: immutable, shared by every event loop.
///
/// When keys change (a JWKS refresh, a config reload) a new snapshot with a higher
/// `generation` replaces this one on each loop; verified-token cache entries of an older
/// generation are then treated as misses, so a key removed from a JWKS stops verifying at once.
public final class KeySnapshot: Sendable {
    public struct Issuer: Sendable {
        public let issuer: String
        public let audiences: [String]?
        public let leewaySeconds: Int
        public let requiredClaims: [String]
        public let keysByID: [String: VerificationKey]
        public let keysWithoutID: [VerificationKey]
        /// Whether an unknown `kid` may be resolved by refetching the issuer's JWKS.
        public let hasRemoteKeys: Bool
        /// When the remote key set was last fetched (Unix seconds); nil for static keys or
        /// before the first successful fetch.
        public let remoteKeysFetchedAt: Double?

        public var keyCount: Int { self.keysByID.count + self.keysWithoutID.count }

        package init(
            issuer: String, audiences: [String]?, leewaySeconds: Int, requiredClaims: [String],
            keysByID: [String: VerificationKey],
            keysWithoutID: [VerificationKey], hasRemoteKeys: Bool, remoteKeysFetchedAt: Double?
        ) {
            self.issuer = issuer
            self.audiences = audiences
            self.leewaySeconds = leewaySeconds
            self.requiredClaims = requiredClaims
            self.keysByID = keysByID
            self.keysWithoutID = keysWithoutID
            self.hasRemoteKeys = hasRemoteKeys
            self.remoteKeysFetchedAt = remoteKeysFetchedAt
        }
    }

    public let generation: UInt64
    public let issuers: [Issuer]
    private let indexByIssuer: [String: Int]

    public init(generation: UInt64, issuers: [Issuer]) {
        self.generation = generation
        self.issuers = issuers
        var index: [String: Int] = [:]
        for (position, issuer) in issuers.enumerated() { index[issuer.issuer] = position }
        self.indexByIssuer = index
    }

    public func issuerIndex(for issuer: String) -> Int? { self.indexByIssuer[issuer] }

    /// Builds the issuers of `configuration` with their static keys plus the given remote
    /// keys (by issuer name).
    public static func issuers(
        from configuration: TokensConfiguration,
        remoteKeys: [String: (keys: [VerificationKey], fetchedAt: Double)] = [:]
    ) -> [Issuer] {
        configuration.issuers.map { issuer in
            let remote = remoteKeys[issuer.issuer]
            // Static keys come last so they win over a remote key with the same kid:
            // configuration is explicit.
            var byID: [String: VerificationKey] = [:]
            var withoutID: [VerificationKey] = []
            for key in (remote?.keys ?? []) + issuer.staticKeys {
                if let kid = key.kid { byID[kid] = key } else { withoutID.append(key) }
            }
            return Issuer(
                issuer: issuer.issuer,
                audiences: issuer.audiences,
                leewaySeconds: issuer.leewaySeconds,
                requiredClaims: issuer.requiredClaims,
                keysByID: byID,
                keysWithoutID: withoutID,
                hasRemoteKeys: issuer.jwks != nil,
                remoteKeysFetchedAt: remote?.fetchedAt
            )
        }
    }
}
