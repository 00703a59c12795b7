/// What the authentication steps have learned about a request so far: the value each step
/// reads and hands on (docs/architecture.md, "Authentication: one step contract").
///
/// Small (a credential, three references): it is handed from step to step on every request.
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

    /// This state with `identity` as the verified caller (a step that added to it).
    func with(_ identity: Identity) -> AuthState {
        var state = self
        state.identity = identity
        return state
    }

    /// The access token presented (or a session's), when the credential is one.
    var token: ExtractedToken? {
        if case .token(let token) = self.credential { return token }
        return nil
    }
}
