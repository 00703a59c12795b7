import NIOCore

/// The turns of the pipeline for browser sessions (docs/browser-sign-in.md): the session's
/// access token joins the token path at `verify`; an expired one is refreshed with the session's
/// refresh token.
extension RequestAuthenticator {
    func lookUpSession(_ handle: SessionHandle, _ request: AuthRequest) -> Step {
        guard let session else { return .refuse(.tokenMissing) }
        // The handle's SHA-256 (remembered by the loop for a handle it knows): the store's key,
        // and the session's name in the steps after (a refresh, a database read).
        let digest = session.recentDigests.digest(of: handle)
        let outcome = session.lookup(digest, request)
        if case .token = outcome { session.recentDigests.remember(handle, digest: digest) }
        return self.next(after: outcome, digest, request)
    }

    func adoptSession(_ record: SessionRecord?, _ digest: TokenDigest, _ request: AuthRequest) -> Step {
        guard let session else { return .refuse(.tokenMissing) }
        return self.next(after: session.adopt(record, digest: digest), digest, request)
    }

    private func next(
        after outcome: SessionAuthentication.Outcome, _ digest: TokenDigest, _ request: AuthRequest
    )
        -> Step
    {
        switch outcome {
        case .token(let token): return .next(.verify(token, keys: request.keys, refetched: false))
        // An unknown or ended session on an `optional` route is no credential at all.
        case .refused(.tokenMissing, _) where request.route.auth == .optional: return .next(.done(.anonymous))
        case .refused(let error, let headers): return .next(.done(.rejected(error, headers: headers)))
        case .pending(let record): return .wait(record.map { .adoptSession($0, digest) })
        }
    }

    func refreshSession(
        _ digest: TokenDigest, _ verified: VerifiedToken, _ keys: KeySnapshot, _ request: AuthRequest
    )
        -> Step
    {
        guard let session else { return .refuse(.tokenRejected(.expired)) }
        switch session.redeem(digest, verified: verified, trace: request.trace) {
        case .refused(let error, let headers): return .next(.done(.rejected(error, headers: headers)))
        case .pending(let redeemed):
            return .wait(redeemed.map { .adoptSessionRefresh($0, digest, keys: keys, refetched: false) })
        }
    }

    func adoptSessionRefresh(
        _ outcome: RefreshOutcome, _ digest: TokenDigest, _ keys: KeySnapshot, _ refetched: Bool, _ request: AuthRequest
    ) -> Step {
        guard let session else { return .refuse(.tokenRejected(.expired)) }
        // Judged when the answer arrived: the provider issued the token after the request began.
        switch session.adopt(outcome, digest: digest, keys: keys, refetched: refetched, now: session.signIn.now) {
        case .identity(let identity): return .next(.proofOfPossession(identity))
        case .refused(let error, let headers): return .next(.done(.rejected(error, headers: headers)))
        case .unknownKey(let issuer):
            return self.refetching(issuer, keys, inCooldown: self.verification.currentKeys) {
                .adoptSessionRefresh(outcome, digest, keys: $0, refetched: true)
            }
        }
    }
}
