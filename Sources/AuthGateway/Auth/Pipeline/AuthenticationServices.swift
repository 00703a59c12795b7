import Crypto

/// What authentication keeps for the life of the process, whatever the configuration: what
/// the gateway has learned (verified tokens, proofs seen, sessions, refresh outcomes) and the
/// keys it checks with. Built once (`GatewayComposition.makeShared`), kept across reloads
/// (docs/operations.md, "Reload"). One value for the concern, so that `GatewayShared` does not
/// grow with each way in.
final class AuthenticationState: Sendable {
    let keyStore: KeyStore
    let verifiedTokens: VerifiedTokenCache
    /// `jti`s of accepted DPoP proofs (docs/authentication.md, "DPoP").
    let dpopReplay = ReplayCache()
    /// The `DPoP-Nonce` key (`DPoPNonce.key`): derived from `sharedState.encryptionKeyBase64`,
    /// else random per process.
    let dpopNonceKey: SymmetricKey
    /// With `sharedState`: the DPoP replay check across instances, behind `dpopReplay`.
    let sharedDPoPReplay: SharedDPoPReplay?
    /// Browser sessions (docs/browser-sign-in.md): with `sharedState`, the database's
    /// read-through cache.
    let sessions: SessionStore
    /// Seals sign-in flow cookies (`SignInFlowSealer.key`).
    let signInFlowKey: SymmetricKey
    /// The refresh single flight and grace table (process- or fleet-wide).
    let refreshStore: RefreshStore
    /// The token-exchange single flight and cache (docs/token-exchange.md): with `sharedState`,
    /// shared by every instance.
    let exchangeStore: ExchangeStore
    /// Advanced by a Shared Signals event that forgets a subject: the loops' memos follow it.
    let subjectChanges = SubjectChanges()

    init(
        keyStore: KeyStore, verifiedTokens: VerifiedTokenCache, dpopNonceKey: SymmetricKey,
        sharedDPoPReplay: SharedDPoPReplay?, sessions: SessionStore, signInFlowKey: SymmetricKey,
        refreshStore: RefreshStore, exchangeStore: ExchangeStore
    ) {
        self.exchangeStore = exchangeStore
        self.keyStore = keyStore
        self.verifiedTokens = verifiedTokens
        self.dpopNonceKey = dpopNonceKey
        self.sharedDPoPReplay = sharedDPoPReplay
        self.sessions = sessions
        self.signInFlowKey = signInFlowKey
        self.refreshStore = refreshStore
    }
}

/// Each authentication feature's resolved configuration and services, for one configuration:
/// one value per feature, nil when it is not configured (so its step stands aside). Built per
/// (re)load (`GatewayComposition.makeSnapshot`), keeping what a feature has learned while its
/// section is unchanged.
final class AuthenticationFeatures: Sendable {
    /// `authService.refresh`: bearer tokens presented with a refresh token.
    let refresh: SessionRefresher?
    /// `browserSignIn`: flows, sessions, and the refresher of sessions' tokens.
    let signIn: SignInFeature?
    /// `tokens.introspection`.
    let introspector: TokenIntrospector?
    /// `authService.profile`.
    let profiles: ProfileCache?
    /// `tokens.apiKeys`, read (with its `keysFile`) at this (re)load.
    let apiKeys: APIKeyTable?
    /// With `identityAssertion`: where the main listener serves its keys' JWKS.
    let assertionJWKSPath: String?

    init(
        refresh: SessionRefresher? = nil, signIn: SignInFeature? = nil, introspector: TokenIntrospector? = nil,
        profiles: ProfileCache? = nil, apiKeys: APIKeyTable? = nil, assertionJWKSPath: String? = nil
    ) {
        self.assertionJWKSPath = assertionJWKSPath
        self.refresh = refresh
        self.signIn = signIn
        self.introspector = introspector
        self.profiles = profiles
        self.apiKeys = apiKeys
    }
}

/// Browser sign-in's services: the flows and sessions, and the refresher of sessions' tokens at
/// the provider's `token_endpoint`.
struct SignInFeature: Sendable {
    let browserSignIn: BrowserSignIn
    let refresher: SessionRefresher
}
