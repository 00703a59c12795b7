/// What the authentication steps have learned about a request so far: the value each step
/// reads and hands on (docs/architecture.md, "Authentication: one step contract").
///
/// The pipeline holds one for the request and each step adds to it in place (`inout`): it is
/// never copied on the way through the list, only into a waiting step's continuation.
struct AuthState: Sendable {
    /// The credential as the steps have resolved it so far (a session's handle becomes the
    /// session's access token).
    var credential: Credential
    /// The verified caller, once a step verified one; the steps after it add to it.
    var identity: Identity?
    /// A JWT whose signature and claims verified but whose `exp` passed: `TokenRefresh`'s
    /// business, and a refusal if no step renews it.
    var expired: VerifiedToken?
    /// The keys tokens are checked against: the request's loop's, or newer after a refetch.
    var keys: KeySnapshot
    /// `TokenRefresh` renewed the token: the identity's is not the one presented.
    var refreshed = false

    init(credential: Credential = .none, identity: Identity? = nil, keys: KeySnapshot) {
        self.credential = credential
        self.identity = identity
        self.keys = keys
    }

    /// The access token presented (or a session's), when the credential is one.
    var token: ExtractedToken? {
        if case .token(let token) = self.credential { return token }
        return nil
    }
}
