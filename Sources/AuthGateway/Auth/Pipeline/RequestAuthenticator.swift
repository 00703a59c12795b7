import NIOCore

/// Decides who a request is (docs/architecture.md, "Authentication pipeline"): the steps in
/// order, each a type in `Auth/Steps/` with a narrow input and a typed outcome.
///
///     API key (only when its header is present: → requirements)
///     → extract (a token, or a browser session's token) → verify (→ refetch keys) → clock
///     (→ refresh) → introspect (opaque tokens, `forJWTs`) → proof of possession (DPoP)
///     → profile → requirements;  then: a navigation refused for want of credentials signs in
///
/// A `Phase` names the next step and carries what it needs. What is synchronous stays so (a
/// cached token on a route without profile needs no future); a step that must wait hands back
/// a future of the next phase, run on the request's loop. One per event loop and configuration
/// (`Worker` builds it), so steps hold the loop's caches and clients. A new step is a file in
/// `Steps/`, a phase and a case below (its turns in `RequestAuthenticator+Phases.swift`).
final class RequestAuthenticator {
    let extraction: CredentialExtraction
    let verification: JWTVerification
    let refresh: TokenRefresh?
    let introspection: TokenIntrospection?
    let proofOfPossession: ProofOfPossession
    let profile: ProfileLookup
    /// With `browserSignIn`: sessions, and sending navigations to sign in.
    let session: SessionAuthentication?
    let signInRedirect: SignInRedirect?
    /// With `tokens.apiKeys`: the key header, checked before the token sources.
    let apiKeys: APIKeyAuthentication?

    init(
        extraction: CredentialExtraction, verification: JWTVerification, refresh: TokenRefresh?,
        introspection: TokenIntrospection?, proofOfPossession: ProofOfPossession, profile: ProfileLookup,
        session: SessionAuthentication? = nil, signInRedirect: SignInRedirect? = nil,
        apiKeys: APIKeyAuthentication? = nil
    ) {
        self.extraction = extraction
        self.verification = verification
        self.refresh = refresh
        self.introspection = introspection
        self.proofOfPossession = proofOfPossession
        self.profile = profile
        self.session = session
        self.signInRedirect = signInRedirect
        self.apiKeys = apiKeys
    }

    /// Every hand-over between steps copies a phase, so a phase is kept small: the cases of
    /// the slow paths (a refresh, a session, an answer from the auth service: each already waits
    /// on I/O) are `indirect`, boxed, and the fast path's carry a token or an identity inline.
    enum Phase {
        case extract
        case session(SessionHandle)
        indirect case adoptSession(SessionRecord?, TokenDigest)
        /// `refetched`: the issuer's keys were refetched for this token already (once only).
        case verify(ExtractedToken, keys: KeySnapshot, refetched: Bool)
        indirect case refresh(VerifiedToken, access: ExtractedToken, refresh: ExtractedToken, keys: KeySnapshot)
        indirect case adoptRefresh(RefreshOutcome, TokenRefresh.Presented, keys: KeySnapshot, refetched: Bool)
        indirect case refreshSession(TokenDigest, VerifiedToken, keys: KeySnapshot)
        indirect case adoptSessionRefresh(RefreshOutcome, TokenDigest, keys: KeySnapshot, refetched: Bool)
        /// `verified`: the JWT's own identity, when a verified JWT is introspected (`forJWTs`).
        case introspect(ExtractedToken, verified: Identity?)
        indirect case adoptIntrospection(IntrospectionOutcome, ExtractedToken, verified: Identity?)
        case proofOfPossession(Identity)
        case profile(Identity)
        case requirements(Identity)
        case done(AuthOutcome)
    }

    enum Step {
        case next(Phase)
        /// Wait for the auth service, an endpoint or a key refetch; then go on with its phase.
        case wait(EventLoopFuture<Phase>)

        static func refuse(_ error: GatewayError) -> Step { .next(.done(.reject(error))) }
    }

    /// Runs the phases from `extract` until authentication is over or must wait.
    func authenticate(_ request: AuthRequest) -> AuthDecision {
        switch self.run(from: .extract, request) {
        case .done(let outcome): return .done(self.signInRedirect?.apply(outcome, request) ?? outcome)
        case .pending(let future):
            guard let redirect = self.signInRedirect else { return .pending(future) }
            return .pending(future.assumeIsolated().map { redirect.apply($0, request) }.nonisolated())
        }
    }

    private func run(from start: Phase, _ request: AuthRequest) -> AuthDecision {
        var phase = start
        while true {
            switch self.step(phase, request) {
            case .next(.done(let outcome)):
                return .done(outcome)
            case .next(let next):
                phase = next
            case .wait(let future):
                let loop = self.verification.eventLoop
                return .pending(
                    future.hop(to: loop).assumeIsolated().flatMap { self.run(from: $0, request).future(on: loop) }
                        .nonisolated())
            }
        }
    }

    func step(_ phase: Phase, _ request: AuthRequest) -> Step {
        switch phase {
        case .extract: return self.extract(request)
        case .session(let handle): return self.lookUpSession(handle, request)
        case .adoptSession(let record, let digest): return self.adoptSession(record, digest, request)
        case .verify(let token, let keys, let refetched): return self.verify(token, keys, refetched, request)
        case .refresh(let verified, let access, let refreshToken, let keys):
            return self.redeem(
                refreshToken, verified, TokenRefresh.Presented(access: access, refresh: refreshToken), keys, request)
        case .adoptRefresh(let outcome, let presented, let keys, let refetched):
            return self.adoptRefresh(outcome, presented, keys, refetched, request)
        case .refreshSession(let digest, let verified, let keys):
            return self.refreshSession(digest, verified, keys, request)
        case .adoptSessionRefresh(let outcome, let digest, let keys, let refetched):
            return self.adoptSessionRefresh(outcome, digest, keys, refetched, request)
        case .introspect(let token, let verified):
            guard let introspection else { return .refuse(.introspectionUnavailable) }
            let outcome = introspection.introspect(token, verified: verified, now: request.now, trace: request.trace)
            return self.next(after: outcome, token, verified)
        case .adoptIntrospection(let outcome, let token, let verified):
            guard let introspection else { return .refuse(.introspectionUnavailable) }
            return self.next(after: introspection.adopt(outcome, token, verified: verified), token, verified)
        case .proofOfPossession(let identity):
            switch self.proofOfPossession.check(identity, request) {
            case .accepted(let identity): return .next(.profile(identity))
            case .refused(let error, let headers): return .next(.done(.rejected(error, headers: headers)))
            case .pending(let checked): return .wait(checked.map { $0.then(Phase.profile) })
            }
        case .profile(let identity):
            switch self.profile.lookup(identity, route: request.route, trace: request.trace) {
            case .found(let identity): return .next(.requirements(identity))
            case .refused(let error): return .refuse(error)
            case .pending(let fetched): return .wait(fetched.map { $0.then(Phase.requirements) })
            }
        case .requirements(let identity):
            return .next(.done(RequirementCheck.check(identity, request: request)))
        case .done(let outcome):
            return .next(.done(outcome))
        }
    }
}
