import NIOCore

/// Decides who a request is (docs/architecture.md, "Authentication pipeline"): the steps in
/// order, each a type in `Auth/Steps/` with a narrow input and a typed outcome.
///
///     extract → verify (→ refetch keys) → clock (→ refresh) → introspect (opaque tokens,
///     `forJWTs`) → proof of possession (DPoP) → profile → requirements
///
/// A `Phase` names the next step and carries what it needs. What is synchronous stays so (a
/// cached token on a route without profile needs no future); a step that must wait hands back
/// a future of the next phase, run on the request's loop. One per event loop and configuration
/// (`Worker` builds it), so steps hold the loop's caches and clients. A new step is a file in
/// `Steps/`, a phase and a case below.
final class RequestAuthenticator {
    let extraction: CredentialExtraction
    let verification: JWTVerification
    let refresh: TokenRefresh?
    let introspection: TokenIntrospection?
    let proofOfPossession: ProofOfPossession
    let profile: ProfileLookup

    init(
        extraction: CredentialExtraction, verification: JWTVerification, refresh: TokenRefresh?,
        introspection: TokenIntrospection?, proofOfPossession: ProofOfPossession, profile: ProfileLookup
    ) {
        self.extraction = extraction
        self.verification = verification
        self.refresh = refresh
        self.introspection = introspection
        self.proofOfPossession = proofOfPossession
        self.profile = profile
    }

    enum Phase {
        case extract
        /// `refetched`: the issuer's keys were refetched for this token already (once only).
        case verify(ExtractedToken, keys: KeySnapshot, refetched: Bool)
        case refresh(VerifiedToken, access: ExtractedToken, refresh: ExtractedToken, keys: KeySnapshot)
        case adoptRefresh(RefreshOutcome, TokenRefresh.Presented, keys: KeySnapshot, refetched: Bool)
        /// `verified`: the JWT's own identity, when a verified JWT is introspected (`forJWTs`).
        case introspect(ExtractedToken, verified: Identity?)
        case adoptIntrospection(IntrospectionOutcome, ExtractedToken, verified: Identity?)
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
    func authenticate(_ request: AuthRequest) -> AuthDecision { self.run(from: .extract, request) }

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
        case .extract:
            switch self.extraction.extract(from: request.headers, auth: request.route.auth) {
            case .anonymous: return .next(.done(.anonymous))
            case .refused(let error): return .refuse(error)
            case .token(let token): return .next(.verify(token, keys: request.keys, refetched: false))
            }
        case .verify(let token, let keys, let refetched):
            // Not a compact JWS: an opaque token, for the introspection endpoint.
            if self.introspection != nil && !CompactJWS.hasCompactShape(token.value) {
                return .next(.introspect(token, verified: nil))
            }
            switch self.verification.verify(token.value, keys: keys, trace: request.trace) {
            case .verified(let verified): return self.checkClock(verified, token, keys: keys, request)
            case .refused(let error): return .refuse(error)
            case .unknownKey where refetched: return .refuse(.tokenRejected(.unknownKey))
            case .unknownKey(let issuer):
                return self.refetching(issuer, keys, inCooldown: nil) { .verify(token, keys: $0, refetched: true) }
            }
        case .refresh(let verified, let access, let refreshToken, let keys):
            let presented = TokenRefresh.Presented(access: access, refresh: refreshToken)
            guard let redeemed = self.refresh?.redeem(refreshToken, claims: verified.claims, trace: request.trace)
            else { return .refuse(.authServiceUnavailable) }
            return .wait(redeemed.map { .adoptRefresh($0, presented, keys: keys, refetched: false) })
        case .adoptRefresh(let outcome, let presented, let keys, let refetched):
            guard let refresh = self.refresh else { return .refuse(.authServiceUnavailable) }
            switch refresh.adopt(outcome, presented, keys: keys, refetched: refetched, request: request) {
            case .identity(let identity): return .next(.proofOfPossession(identity))
            case .refused(let error, let headers): return .next(.done(.rejected(error, headers: headers)))
            case .unknownKey(let issuer):
                // A rotated key the new token is the first to use: refetch and adopt again (in
                // the cooldown another request just refetched: take the store's keys).
                return self.refetching(issuer, keys, inCooldown: self.verification.currentKeys) {
                    .adoptRefresh(outcome, presented, keys: $0, refetched: true)
                }
            }
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
