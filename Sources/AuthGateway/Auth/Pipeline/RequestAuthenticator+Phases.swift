import NIOCore

/// The turns of the pipeline that more than one phase takes.
extension RequestAuthenticator {
    /// The clock checks of a verified JWT (docs/authentication.md, "Claims"); an expired token
    /// presented with a refresh token is refreshed transparently.
    func checkClock(
        _ verified: VerifiedToken, _ token: ExtractedToken, keys: KeySnapshot, _ request: AuthRequest
    ) -> Step {
        guard let failure = verified.timeFailure(now: request.now) else {
            let identity = Identity(
                token: verified, accessToken: token, issuer: keys.issuers[verified.issuerIndex].issuer)
            // `forJWTs`: a verified JWT is introspected too, so that a revoked one is refused.
            if let introspection, introspection.coversJWTs { return .next(.introspect(token, verified: identity)) }
            return .next(.proofOfPossession(identity))
        }
        guard failure == .expired, let refresh else { return .refuse(.tokenRejected(failure)) }
        switch refresh.start(expired: verified, headers: request.headers, now: request.now) {
        case .refused(let error): return .refuse(error)
        case .refresh(let refreshToken):
            return .next(.refresh(verified, access: token, refresh: refreshToken, keys: keys))
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

extension Result where Success == Identity, Failure == GatewayError {
    /// The phase after a step that waited: `next` with the identity, or the refusal.
    func then(_ next: (Identity) -> RequestAuthenticator.Phase) -> RequestAuthenticator.Phase {
        switch self {
        case .success(let identity): return next(identity)
        case .failure(let error): return .done(.reject(error))
        }
    }
}
