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

    /// `Bearer <access token>` for a session's backend request. A session's token is a slice of
    /// its record's ready-made `Authorization` value (`SessionRecord.bearerAuthorization`): that
    /// value is handed on as it is, without building a new string per request.
    var bearerAuthorization: String {
        if let replacement = self.replacementAccessToken { return "Bearer " + replacement }
        let token = self.accessToken.value
        let base = token.base
        if token.endIndex == base.endIndex, base.utf8.count == token.utf8.count + 7,
            ASCII.hasBytePrefix(base, "Bearer ")
        {
            return base
        }
        return "Bearer " + token
    }
}
