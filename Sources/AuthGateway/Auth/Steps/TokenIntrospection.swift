import NIOCore

/// Opaque tokens (and, with `forJWTs`, verified JWTs) asked about at the RFC 7662
/// introspection endpoint (docs/authentication.md, "Introspection"): through the loop's memo,
/// then the process-wide cache and single flight (`TokenIntrospector`).
struct TokenIntrospection: AuthenticationStep {
    enum Outcome {
        case identity(Identity)
        case refused(GatewayError)
        /// Asked the endpoint (or joined a call): adopt the outcome once it arrives.
        case pending(EventLoopFuture<IntrospectionOutcome>)
    }

    /// nil without `tokens.introspection`.
    let introspector: TokenIntrospector?
    /// The loop's memo of adopted answers (owned by the loop: no lock).
    let memo: RecentIntrospections
    /// Where a call goes now; asked only when a call is made.
    let endpoint: () -> UpstreamEndpoint?
    let eventLoop: EventLoop
    let metrics: WorkerMetrics

    init(
        introspector: TokenIntrospector?, memo: RecentIntrospections, endpoint: @escaping () -> UpstreamEndpoint?,
        eventLoop: EventLoop, metrics: WorkerMetrics
    ) {
        self.introspector = introspector
        self.memo = memo
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.metrics = metrics
    }

    init(_ context: StepContext) {
        self.init(
            introspector: context.features.introspector,
            memo: RecentIntrospections(subjectChanges: context.state.subjectChanges),
            endpoint: context.introspectionEndpoint, eventLoop: context.eventLoop, metrics: context.metrics)
    }

    /// `tokens.introspection.forJWTs`: verified JWTs are asked about too.
    var coversJWTs: Bool { self.introspector?.configuration.forJWTs ?? false }

    /// An opaque token (`JWTVerification` left it alone), or with `forJWTs` a JWT that just
    /// verified (not one a refresh renewed: its answer is the provider's word already).
    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard self.introspector != nil, case .token(let token) = state.credential else { return .next }
        let verified: Identity?
        if let identity = state.identity {
            guard self.coversJWTs, !state.refreshed, identity.kind == .jwt || identity.kind == .session else {
                return .next
            }
            verified = identity
        } else {
            guard state.expired == nil else { return .next }
            verified = nil
        }
        let changes = self.memo.changes
        let outcome = self.introspect(
            token, verified: verified, now: request.now, trace: request.trace, changes: changes)
        return self.answer(outcome, token, verified, changes: changes, &state)
    }

    /// The step's answer: the identity goes on in `state`; a pending answer is adopted on the
    /// request's loop (it fills the loop's memo).
    /// `changes`: the memo's count, read before the answer was looked up.
    private func answer(
        _ outcome: Outcome, _ token: ExtractedToken, _ verified: Identity?, changes: UInt64, _ state: inout AuthState
    ) -> StepResult {
        switch outcome {
        case .identity(let identity):
            state.identity = identity
            return .next
        case .refused(let error):
            return .refuse(error)
        case .pending(let answer):
            return .after(answer, on: self.eventLoop, resuming: state) { outcome, state in
                self.answer(
                    self.adopt(outcome, token, verified: verified, changes: changes), token, verified,
                    changes: changes, &state)
            }
        }
    }

    /// The identity of `token`: remembered by this loop, cached by the process, or pending a
    /// call. `verified`: the JWT's own identity, when `token` verified as one.
    /// `changes`: the memo's count, read before anything was looked up.
    func introspect(
        _ token: ExtractedToken, verified: Identity?, now: Double, trace: RequestTrace?, changes: UInt64
    ) -> Outcome {
        guard let introspector = self.introspector else { return .refused(.introspectionUnavailable) }
        let metrics = self.metrics
        // A JWT's clock was checked already on this request (`forJWTs` comes after it).
        if let known = self.memo.lookup(token.value, introspector: introspector, now: now) {
            metrics.increment(.introspectionCached)
            let issuer = verified?.issuer ?? introspector.configuration.identityIssuer
            return .identity(Identity(token: known, accessToken: token, issuer: issuer, kind: Self.kind(of: token)))
        }
        let lookup = introspector.lookup(token.value, eventLoop: self.eventLoop, endpoint: self.endpoint) {
            label in metrics.increment(.introspection(outcome: label))
        }
        switch lookup {
        case .known(let outcome):
            return self.adopt(outcome, token, verified: verified, changes: changes)
        case .pending(let answer):
            let span = trace?.child("auth.introspection", kind: .client)
            return .pending(
                answer.map { outcome in
                    span?.attributes["auth.introspection.outcome"] = outcome.label
                    span?.end()
                    return outcome
                })
        }
    }

    /// An active answer's members become the request's claims; inactive is 401, unavailable
    /// 503 (fail closed, nothing forwarded). Runs on the request's loop (it fills the memo).
    ///
    /// For a JWT introspected with `forJWTs`, the JWT's own verified claims stay the request's
    /// claims — the answer only says whether it is still active — and a `cnf.jkt` in the answer
    /// can add a DPoP binding, never remove or change one (`IntrospectedJWT` says why).
    func adopt(
        _ outcome: IntrospectionOutcome, _ token: ExtractedToken, verified: Identity?, changes: UInt64
    ) -> Outcome {
        guard let introspector = self.introspector else { return .refused(.introspectionUnavailable) }
        switch outcome {
        case .unavailable:
            return .refused(.introspectionUnavailable)
        case .inactive:
            return .refused(.tokenInactive)
        case .active(let claims, let validUntil):
            if let verified {
                // The provider names another key than the one the JWT is bound to.
                guard let adopted = IntrospectedJWT.adopt(verified.token, answer: claims) else {
                    return .refused(.tokenRejected(.invalidClaim))
                }
                self.memo.remember(
                    token.value, verified: adopted, validUntil: validUntil, introspector: introspector,
                    changes: changes)
                return .identity(
                    Identity(
                        token: adopted, accessToken: verified.accessToken, issuer: verified.issuer, kind: verified.kind)
                )
            }
            // No issuer index: an introspected identity never reaches the steps that use the
            // key snapshot (clock checks and refresh are the endpoint's business).
            let introspected = VerifiedToken(
                issuerIndex: -1, generation: 0, claims: claims, subject: claims["sub"]?.stringValue,
                expiresAt: validUntil, notBefore: nil, issuedAt: nil, leewaySeconds: 0
            )
            self.memo.remember(
                token.value, verified: introspected, validUntil: validUntil, introspector: introspector,
                changes: changes)
            let issuer = introspector.configuration.identityIssuer
            return .identity(
                Identity(token: introspected, accessToken: token, issuer: issuer, kind: Self.kind(of: token)))
        }
    }

    /// An opaque token is an introspected caller's — or a browser session's.
    private static func kind(of token: ExtractedToken) -> Identity.Kind {
        token.location.isSession ? .session : .introspection
    }
}
