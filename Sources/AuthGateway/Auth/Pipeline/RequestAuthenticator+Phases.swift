import NIOCore

/// The turns of the pipeline for tokens: which step follows which.
extension RequestAuthenticator {
    func extract(_ request: AuthRequest) -> Step {
        if let apiKeys, let outcome = apiKeys.authenticate(request) { return Self.step(after: outcome) }
        switch self.extraction.extract(from: request.headers, auth: request.route.auth) {
        case .anonymous: return .next(.done(.anonymous))
        case .refused(let error): return .refuse(error)
        case .token(let token): return .next(.verify(token, keys: request.keys, refetched: false))
        case .session(let handle): return .next(.session(handle))
        }
    }

    func verify(_ token: ExtractedToken, _ keys: KeySnapshot, _ refetched: Bool, _ request: AuthRequest) -> Step {
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
    }

    /// The clock checks of a verified JWT (docs/authentication.md, "Claims"); an expired token
    /// presented with a refresh token (or a session's) is refreshed transparently.
    func checkClock(
        _ verified: VerifiedToken, _ token: ExtractedToken, keys: KeySnapshot, _ request: AuthRequest
    )
        -> Step
    {
        guard let failure = verified.timeFailure(now: request.now) else {
            let identity = Identity(
                token: verified, accessToken: token, issuer: keys.issuers[verified.issuerIndex].issuer)
            // `forJWTs`: a verified JWT is introspected too, so that a revoked one is refused.
            if let introspection, introspection.coversJWTs { return .next(.introspect(token, verified: identity)) }
            return .next(.proofOfPossession(identity))
        }
        if failure == .expired, case .session(let digest) = token.location {
            return .next(.refreshSession(digest, verified, keys: keys))
        }
        guard failure == .expired, let refresh else { return .refuse(.tokenRejected(failure)) }
        switch refresh.start(expired: verified, headers: request.headers, now: request.now) {
        case .refused(let error): return .refuse(error)
        case .refresh(let refreshToken):
            return .next(.refresh(verified, access: token, refresh: refreshToken, keys: keys))
        }
    }

    func redeem(
        _ refreshToken: ExtractedToken, _ verified: VerifiedToken, _ presented: TokenRefresh.Presented,
        _ keys: KeySnapshot, _ request: AuthRequest
    ) -> Step {
        guard let redeemed = self.refresh?.redeem(refreshToken, claims: verified.claims, trace: request.trace) else {
            return .refuse(.authServiceUnavailable)
        }
        return .wait(redeemed.map { .adoptRefresh($0, presented, keys: keys, refetched: false) })
    }

    func adoptRefresh(
        _ outcome: RefreshOutcome, _ presented: TokenRefresh.Presented, _ keys: KeySnapshot, _ refetched: Bool,
        _ request: AuthRequest
    ) -> Step {
        guard let refresh = self.refresh else { return .refuse(.authServiceUnavailable) }
        switch refresh.adopt(outcome, presented, keys: keys, refetched: refetched, request: request) {
        case .identity(let identity): return .next(.proofOfPossession(identity))
        case .refused(let error, let headers): return .next(.done(.rejected(error, headers: headers)))
        case .unknownKey(let issuer):
            // A rotated key the new token is the first to use: refetch and adopt again (in the
            // cooldown another request just refetched: take the store's keys).
            return self.refetching(issuer, keys, inCooldown: self.verification.currentKeys) {
                .adoptRefresh(outcome, presented, keys: $0, refetched: true)
            }
        }
    }

    /// Refetches the issuer's keys for an unknown `kid`, then goes on with `retry` under the new
    /// keys. In the cooldown: `inCooldown` keys when given, else refused (503 when the issuer's
    /// keys were never fetched: nothing can be checked; Envoy answers 401 there).
    func refetching(
        _ issuerIndex: Int, _ keys: KeySnapshot, inCooldown: KeySnapshot?,
        then retry: @escaping @Sendable (KeySnapshot) -> Phase
    ) -> Step {
        switch self.verification.refetchKeys(issuerIndex: issuerIndex, keys: keys) {
        case .notAllowed(let neverFetched):
            if let inCooldown { return .next(retry(inCooldown)) }
            return .refuse(neverFetched ? .keysUnavailable : .tokenRejected(.unknownKey))
        case .pending(let refetched):
            // A failed refetch is 503 with nothing cleared: the client retries.
            return .wait(refetched.map { $0.map(retry) ?? .done(.reject(.keysUnavailable)) })
        }
    }

    /// After introspection: an identity goes on to DPoP; an answer to wait for is adopted on the
    /// request's loop (the step fills the loop's memo).
    func next(after outcome: TokenIntrospection.Outcome, _ token: ExtractedToken, _ verified: Identity?) -> Step {
        switch outcome {
        case .identity(let identity): return .next(.proofOfPossession(identity))
        case .refused(let error): return .refuse(error)
        case .pending(let answer): return .wait(answer.map { .adoptIntrospection($0, token, verified: verified) })
        }
    }
}

extension RequestAuthenticator {
    /// An API key's identity goes straight to the requirements: it has no proof of possession,
    /// and no profile, because a profile fetch presents the caller's credential to the auth
    /// service and an API key never leaves the gateway (docs/policies.md, "API keys").
    static func step(after outcome: APIKeyAuthentication.Outcome) -> Step {
        switch outcome {
        case .identity(let identity): return .next(.requirements(identity))
        case .refused(let error): return .refuse(error)
        }
    }
}

extension Result where Success == Identity, Failure == GatewayError {
    /// The phase after a step that waited: `next` with the identity, or the refusal.
    func then(_ next: (Identity) -> RequestAuthenticator.Phase) -> RequestAuthenticator.Phase {
        switch self {
        case .success(let identity): return next(identity)
        case .failure(let error): return .done(.reject(error))
        }
    }
}
