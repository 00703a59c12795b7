/// One signed-in browser's session (docs/browser-sign-in.md): who signed in, the provider's
/// tokens, and its clock. Kept under the handle's digest, in this process and, with
/// `sharedState`, sealed (AES-256-GCM) in PostgreSQL.
struct SessionRecord: Sendable, Equatable {
    /// The ID token's `sub`.
    var subject: String
    /// The ID token's `sid` (the provider's session), for back-channel logout.
    var providerSessionID: String?
    /// For RP-initiated logout (`id_token_hint`).
    var idToken: String
    /// Authenticates the session's requests exactly as a bearer token would.
    var accessToken: String {
        get { String(self.accessTokenSlice) }
        set { self.bearerAuthorization = Self.bearerPrefix + newValue }
    }
    /// `Bearer <access token>`: the `Authorization` value the backend gets, made once per token
    /// rather than on every request (docs/benchmarks.md).
    private(set) var bearerAuthorization: String
    var refreshToken: String?
    /// Unix seconds.
    var createdAt: Double
    var lastUsedAt: Double

    private static let bearerPrefix = "Bearer "

    init(
        subject: String, providerSessionID: String? = nil, idToken: String, accessToken: String,
        refreshToken: String? = nil, createdAt: Double, lastUsedAt: Double
    ) {
        self.subject = subject
        self.providerSessionID = providerSessionID
        self.idToken = idToken
        self.bearerAuthorization = Self.bearerPrefix + accessToken
        self.refreshToken = refreshToken
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }

    /// The access token as a slice of `bearerAuthorization`: no copy.
    var accessTokenSlice: Substring {
        let utf8 = self.bearerAuthorization.utf8
        return self.bearerAuthorization[utf8.index(utf8.startIndex, offsetBy: Self.bearerPrefix.utf8.count)...]
    }

    /// When the session ends: `sessionIdleSeconds` after its last use or `sessionMaxSeconds`
    /// after sign-in, whichever comes first.
    func endsAt(_ lifetime: SessionLifetime) -> Double {
        min(self.lastUsedAt + lifetime.idleSeconds, self.createdAt + lifetime.maxSeconds)
    }

    func isLive(at now: Double, _ lifetime: SessionLifetime) -> Bool { now < self.endsAt(lifetime) }
}

/// `sessionIdleSeconds` and `sessionMaxSeconds`.
struct SessionLifetime: Sendable, Equatable {
    let idleSeconds: Double
    let maxSeconds: Double

    init(idleSeconds: Int, maxSeconds: Int) {
        self.idleSeconds = Double(idleSeconds)
        self.maxSeconds = Double(maxSeconds)
    }

    /// How stale `lastUsedAt` may get before a use records itself again: a session's clock is
    /// updated at most this often (not on every request), and the idle limit is kept to within it.
    var touchGranularitySeconds: Double { max(1, min(60, self.idleSeconds / 20)) }
}
