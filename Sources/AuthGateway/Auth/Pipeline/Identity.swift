/// A verified caller, as far as the backend is concerned: what the authentication steps have
/// learned so far, handed from one step to the next.
struct Identity {
    let token: VerifiedToken
    /// The access token as the client sent it.
    let accessToken: ExtractedToken
    /// The issuer that verified it (profiles are cached per issuer and subject).
    let issuer: String
    var profile: JSONObject?
    /// After a transparent refresh: the new access token to forward instead of the old one.
    var replacementAccessToken: String?
    /// Headers for the client's response (new tokens after a refresh, a new `DPoP-Nonce`).
    var responseHeaders: [(name: String, value: String)] = []
    /// The thumbprint of the key whose DPoP proof came with a bound token (`dpop.jkt`).
    var dpopThumbprint: String?
    /// The API key's `id` when the caller presented one instead of a token (for the access log).
    var apiKeyID: String?

    init(token: VerifiedToken, accessToken: ExtractedToken, issuer: String) {
        self.token = token
        self.accessToken = accessToken
        self.issuer = issuer
    }

    /// The access token a call made on the caller's behalf (a profile fetch) presents.
    var currentAccessToken: String { self.replacementAccessToken ?? String(self.accessToken.value) }
}
