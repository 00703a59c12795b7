/// A verified caller, as far as the backend is concerned: what the authentication steps have
/// learned so far, handed from one step to the next.
///
/// A value with its fields in one shared box (copy on write): the identity travels through every
/// phase of the pipeline, its outcome and the decision, and as eight inline fields (160 bytes)
/// each hand-over copied all of them and retained each reference (measured: ~0.4 µs of a cached
/// bearer request, docs/benchmarks.md). Now a hand-over is one pointer; a step that adds to the
/// identity (a profile, a DPoP thumbprint) writes into the box in place when it holds the only
/// reference, as it does in the pipeline, and copies it first otherwise.
struct Identity {
    /// How the caller proved who it is: what a signed assertion names in its `auth` claim
    /// (docs/assertions.md), and which steps apply (an API key has no proof of possession and
    /// no profile).
    enum Kind: String, Sendable {
        /// A JWT verified with the issuers' keys.
        case jwt
        /// An opaque token the introspection endpoint said is active.
        case introspection
        /// A key of `tokens.apiKeys`.
        case apiKey = "apikey"
        /// A browser session's access token (docs/browser-sign-in.md).
        case session
    }

    private final class Fields: @unchecked Sendable {
        // `@unchecked`: written only through `Identity`'s setters, which copy the box unless the
        // writer holds its only reference (`isKnownUniquelyReferenced`); every other holder reads.
        let token: VerifiedToken
        let accessToken: ExtractedToken
        let issuer: String
        let kind: Kind
        var profile: JSONObject?
        var replacementAccessToken: String?
        var responseHeaders: HeaderFields = []
        var dpopThumbprint: String?
        var apiKeyID: String?
        var backendHeaders: HeaderFields = []
        var backendAuthorization: String?

        init(token: VerifiedToken, accessToken: ExtractedToken, issuer: String, kind: Kind) {
            self.token = token
            self.accessToken = accessToken
            self.issuer = issuer
            self.kind = kind
        }

        func copy() -> Fields {
            let copy = Fields(token: self.token, accessToken: self.accessToken, issuer: self.issuer, kind: self.kind)
            copy.profile = self.profile
            copy.replacementAccessToken = self.replacementAccessToken
            copy.responseHeaders = self.responseHeaders
            copy.dpopThumbprint = self.dpopThumbprint
            copy.apiKeyID = self.apiKeyID
            copy.backendHeaders = self.backendHeaders
            copy.backendAuthorization = self.backendAuthorization
            return copy
        }
    }

    private var fields: Fields

    /// `kind`: by default a JWT's, or a session's when the token is a session's.
    init(token: VerifiedToken, accessToken: ExtractedToken, issuer: String, kind: Kind? = nil) {
        let kind = kind ?? (accessToken.location.isSession ? .session : .jwt)
        self.fields = Fields(token: token, accessToken: accessToken, issuer: issuer, kind: kind)
    }

    /// The box, to write into: copied first unless this identity holds its only reference.
    private var writable: Fields {
        mutating get {
            if !isKnownUniquelyReferenced(&self.fields) { self.fields = self.fields.copy() }
            return self.fields
        }
    }

    var token: VerifiedToken { self.fields.token }
    /// The access token as the client sent it.
    var accessToken: ExtractedToken { self.fields.accessToken }
    /// The issuer that verified it (profiles are cached per issuer and subject).
    var issuer: String { self.fields.issuer }
    var kind: Kind { self.fields.kind }
    var profile: JSONObject? {
        get { self.fields.profile }
        set { self.writable.profile = newValue }
    }
    /// After a transparent refresh: the new access token to forward instead of the old one.
    var replacementAccessToken: String? {
        get { self.fields.replacementAccessToken }
        set { self.writable.replacementAccessToken = newValue }
    }
    /// Headers for the client's response (new tokens after a refresh, a new `DPoP-Nonce`).
    var responseHeaders: HeaderFields {
        get { self.fields.responseHeaders }
        set { self.writable.responseHeaders = newValue }
    }
    /// The thumbprint of the key whose DPoP proof came with a bound token (`dpop.jkt`).
    var dpopThumbprint: String? {
        get { self.fields.dpopThumbprint }
        set { self.writable.dpopThumbprint = newValue }
    }
    /// The API key's `id` when the caller presented one instead of a token (for the access log).
    var apiKeyID: String? {
        get { self.fields.apiKeyID }
        set { self.writable.apiKeyID = newValue }
    }

    /// Headers a step made for the backend (a signed assertion, docs/assertions.md): added after
    /// the identity headers, and handed to a proxy in authorizer mode.
    var backendHeaders: HeaderFields {
        get { self.fields.backendHeaders }
        set { self.writable.backendHeaders = newValue }
    }
    /// The `Authorization` the backend gets instead of the caller's token, which then reaches it
    /// nowhere (an exchanged token, docs/token-exchange.md).
    var backendAuthorization: String? {
        get { self.fields.backendAuthorization }
        set { self.writable.backendAuthorization = newValue }
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
