/// What a long-lived stream records of the credential that opened it (docs/streams.md): when
/// the credential runs out, the session it belongs to, and who it is. Taken once, when a
/// response is still streaming after its head (or a tunnel opens) — never for the requests
/// that finish at once.
struct StreamCredential: Sendable, Equatable {
    /// The access token's (or API key's) expiry, Unix seconds; `.infinity` for none (an API
    /// key without `expiresAt`).
    var tokenExpiresAt: Double
    /// The browser session's digest, when the stream was opened with the session cookie.
    var session: TokenDigest?
    /// When the session ends by idle or maximum time (Unix seconds), as known now.
    var sessionEndsAt: Double?
    /// The provider session `sid`: the session's, or the token's `sid` claim.
    var providerSessionID: String?
    /// The token's (or session's) `sub`.
    var subject: String?

    /// Nothing to run out: an anonymous request on an `auth: none` or `optional` route.
    static let anonymous = StreamCredential(tokenExpiresAt: .infinity)

    init(
        tokenExpiresAt: Double, session: TokenDigest? = nil, sessionEndsAt: Double? = nil,
        providerSessionID: String? = nil, subject: String? = nil
    ) {
        self.tokenExpiresAt = tokenExpiresAt
        self.session = session
        self.sessionEndsAt = sessionEndsAt
        self.providerSessionID = providerSessionID
        self.subject = subject
    }

    /// The credential of a decided request's identity (nil: anonymous). A session's record is
    /// read from this process's store (no I/O: the request just found it there).
    init(identity: Identity?, signIn: BrowserSignIn?) {
        guard let identity else {
            self = .anonymous
            return
        }
        // A token issued within a provider session names it (`sid`, OpenID Connect Front- and
        // Back-Channel Logout): a logout of that session ends the token's streams too.
        self.init(
            tokenExpiresAt: identity.token.expiresAt, providerSessionID: identity.token.claims["sid"]?.stringValue,
            subject: identity.token.subject)
        if case .session(let digest) = identity.accessToken.location {
            self.session = digest
            if let signIn, let record = signIn.sessions.held(digest) {
                self.sessionEndsAt = record.endsAt(signIn.lifetime)
                self.providerSessionID = record.providerSessionID
                self.subject = record.subject
            }
        }
    }

    /// When the stream must end (Unix seconds), by `settings`: the token's expiry plus the
    /// leeway when `closeAtExpiry`, and a session's end whatever the setting (an ended session
    /// is a revocation, docs/streams.md); nil when nothing runs out.
    func deadline(_ settings: StreamsConfiguration) -> Double? {
        var deadline: Double?
        if settings.closeAtExpiry, self.tokenExpiresAt.isFinite {
            deadline = self.tokenExpiresAt + Double(settings.leewaySeconds)
        }
        if let end = self.sessionEndsAt { deadline = min(deadline ?? end, end) }
        return deadline
    }

    /// A session stream's credential as its session is now (`record`: the record this process
    /// holds, nil once it ended): a refresh since brought a new access token (its `exp` read
    /// from the token the gateway verified when it stored it), a use moved the idle end. nil
    /// when the session is over. Other credentials cannot be renewed: `self`.
    func renewed(record: SessionRecord?, lifetime: SessionLifetime?) -> StreamCredential? {
        guard self.session != nil else { return self }
        guard let record else { return nil }
        var renewed = self
        if let lifetime { renewed.sessionEndsAt = record.endsAt(lifetime) }
        if let expiry = Self.expiry(ofJWT: record.accessTokenSlice) {
            renewed.tokenExpiresAt = expiry
        }
        return renewed
    }

    /// The `exp` of a session's access token (`CompactJWS.storedPayload`: verified by the
    /// gateway before it was stored); nil for an opaque token.
    static func expiry(ofJWT token: Substring) -> Double? {
        guard case .number(let exp)? = CompactJWS.storedPayload(token)?["exp"] else { return nil }
        return exp.double
    }
}
