import NIOCore

/// Opaque tokens (and, with `forJWTs`, verified JWTs) asked about at the RFC 7662
/// introspection endpoint (docs/authentication.md, "Introspection"): through the loop's memo,
/// then the process-wide cache and single flight (`TokenIntrospector`).
struct TokenIntrospection {
    enum Outcome {
        case identity(Identity)
        case refused(GatewayError)
        /// Asked the endpoint (or joined a call): adopt the outcome once it arrives.
        case pending(EventLoopFuture<IntrospectionOutcome>)
    }

    let introspector: TokenIntrospector
    /// The loop's memo of adopted answers (owned by the loop: no lock).
    let memo: RecentIntrospections
    /// Where a call goes now; asked only when a call is made.
    let endpoint: () -> UpstreamEndpoint?
    let eventLoop: EventLoop
    let metrics: WorkerMetrics

    /// `tokens.introspection.forJWTs`: verified JWTs are asked about too.
    var coversJWTs: Bool { self.introspector.configuration.forJWTs }

    /// The identity of `token`: remembered by this loop, cached by the process, or pending a
    /// call. `verified`: the JWT's own identity, when `token` verified as one.
    func introspect(_ token: ExtractedToken, verified: Identity?, now: Double, trace: RequestTrace?) -> Outcome {
        let metrics = self.metrics
        // A JWT's clock was checked already on this request (`forJWTs` comes after it).
        if let known = self.memo.lookup(token.value, introspector: self.introspector, now: now) {
            metrics.increment(.introspectionCached)
            let issuer = verified?.issuer ?? self.introspector.configuration.identityIssuer
            return .identity(Identity(token: known, accessToken: token, issuer: issuer))
        }
        let lookup = self.introspector.lookup(token.value, eventLoop: self.eventLoop, endpoint: self.endpoint) {
            label in metrics.increment(.introspection(outcome: label))
        }
        switch lookup {
        case .known(let outcome):
            return self.adopt(outcome, token, verified: verified)
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
    func adopt(_ outcome: IntrospectionOutcome, _ token: ExtractedToken, verified: Identity?) -> Outcome {
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
                    token.value, verified: adopted, validUntil: validUntil, introspector: self.introspector)
                return .identity(Identity(token: adopted, accessToken: verified.accessToken, issuer: verified.issuer))
            }
            // No issuer index: an introspected identity never reaches the steps that use the
            // key snapshot (clock checks and refresh are the endpoint's business).
            let introspected = VerifiedToken(
                issuerIndex: -1, generation: 0, claims: claims, subject: claims["sub"]?.stringValue,
                expiresAt: validUntil, notBefore: nil, issuedAt: nil, leewaySeconds: 0
            )
            self.memo.remember(
                token.value, verified: introspected, validUntil: validUntil, introspector: self.introspector)
            let issuer = self.introspector.configuration.identityIssuer
            return .identity(Identity(token: introspected, accessToken: token, issuer: issuer))
        }
    }
}
