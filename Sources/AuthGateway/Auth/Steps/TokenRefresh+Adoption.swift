import NIOCore

/// A refresh's outcome, adopted the same way for a bearer token and a browser session's token.
extension TokenRefresh {
    /// The new access token is verified like any other, **at the time the answer arrived**
    /// (`clock`, not the request's arrival): the provider issued it after the request began, so
    /// its `iat`/`nbf` may lie after the arrival, and it is about to be used now. One rule for
    /// both kinds of refresh (`TokenRefreshTests` pins it). Verified: the identity goes on (a
    /// bearer's new token replaces the old one and goes back to the client; a session's record
    /// is updated and the cookie stays). A token signed with a `kid` the issuer's keys lack
    /// refetches them once; anything else the gateway refuses signs the client out.
    func adopt(
        _ outcome: RefreshOutcome, _ ticket: Ticket, _ state: inout AuthState, keys: KeySnapshot, refetched: Bool
    ) -> StepResult {
        let now = self.clock()
        switch outcome {
        case .unavailable:
            return .refuse(.authServiceUnavailable)
        case .rejected:
            return self.refusal(self.signOut(ticket))
        case .refreshed(let accessToken, let rotated):
            switch self.verification.verifyFetched(accessToken[...], keys: keys) {
            case .verified(let token) where token.timeFailure(now: now) == nil:
                guard let identity = self.identity(token, accessToken, rotated, ticket, keys: keys) else {
                    return self.refusal(self.signOut(ticket))
                }
                state.identity = identity
                state.expired = nil
                state.keys = keys
                state.refreshed = true
                return .next
            case .unknownKey(let issuerIndex) where !refetched:
                // A rotated key the new token is the first to use: refetch and adopt again (in
                // the cooldown another request just refetched: take the store's keys).
                return self.verification.refetching(
                    issuerIndex, keys, &state, inCooldown: self.verification.currentKeys
                ) { keys, state in self.adopt(outcome, ticket, &state, keys: keys, refetched: true) }
            case .verified(let token):
                self.logMisconfiguration(reason: token.timeFailure(now: now)?.rawValue ?? "invalid")
            case .unknownKey:
                self.logMisconfiguration(reason: TokenFailure.unknownKey.rawValue)
            case .refused(let error):
                self.logMisconfiguration(reason: error.authFailureReason ?? error.errorType)
            }
            // The refresh token was spent on a token this gateway refuses: the session is over.
            return self.refusal(self.signOut(ticket))
        }
    }

    /// The identity of a verified new token; nil when a session ended meanwhile.
    private func identity(
        _ token: VerifiedToken, _ accessToken: String, _ rotated: String?, _ ticket: Ticket, keys: KeySnapshot
    ) -> Identity? {
        let issuer = keys.issuers[token.issuerIndex].issuer
        switch ticket {
        case .bearer(let presented):
            var identity = Identity(token: token, accessToken: presented.access, issuer: issuer)
            identity.replacementAccessToken = accessToken
            identity.responseHeaders =
                self.bearer?.responseHeaders(
                    accessToken: accessToken, rotated: rotated, presented: presented) ?? []
            return identity
        case .session(let digest):
            guard let sessions = self.session?.signIn.sessions, var record = sessions.held(digest) else { return nil }
            record.accessToken = accessToken
            if let rotated { record.refreshToken = rotated }
            sessions.update(digest, record)
            return Identity(
                token: token, accessToken: SessionAuthentication.token(of: record, digest: digest), issuer: issuer)
        }
    }

    private func refusal(_ refusal: Refusal) -> StepResult {
        .refuse(refusal.error, headers: refusal.headers)
    }

    /// The refresh was refused (or spent on a token the gateway refuses): 401, and the client
    /// signed out — a bearer's session cookies cleared; a session ended everywhere, its cookie
    /// cleared.
    func signOut(_ ticket: Ticket) -> Refusal {
        switch ticket {
        case .bearer(let presented):
            let cookies = SessionCookies(isTLS: presented.isTLS)
            return Refusal(error: .refreshRejected, headers: BearerRefresh.signOutHeaders(presented, cookies: cookies))
        case .session(let digest):
            guard let signIn = self.session?.signIn else { return Refusal(error: .refreshRejected) }
            signIn.sessions.end(digest)
            self.metrics.increment(.signOut(.refreshRejected))
            return Refusal(error: .refreshRejected, headers: [("Set-Cookie", signIn.cookies.clearingSession)])
        }
    }

    /// The auth service issued an access token this gateway refuses: its keys, issuer or
    /// audience do not match the configuration. Logged (never the token), then 401.
    func logMisconfiguration(reason: String) {
        self.logger.error(
            "refresh.token_not_accepted",
            metadata: ["auth.failure": "\(reason)", "hint": "check tokens.issuers against the auth service"])
    }
}

extension BearerRefresh {
    /// The new tokens for the client: `Set-Cookie`s when the refresh token came from a cookie,
    /// else the `responseHeaders` names. A rotated refresh token goes back only when it differs
    /// and is a plain token (it goes into a header or cookie).
    func responseHeaders(
        accessToken: String, rotated newRefreshToken: String?, presented: TokenRefresh.Presented
    ) -> HeaderFields {
        let cookies = SessionCookies(isTLS: presented.isTLS)
        let (oldAccess, oldRefresh) = (presented.access, presented.refresh)
        var headers: HeaderFields = []
        let rotated = newRefreshToken.flatMap {
            $0 == String(oldRefresh.value) || !SessionCookies.isSafeValue($0) ? nil : $0
        }
        if case .cookie(let refreshCookie) = oldRefresh.location {
            let accessCookie: String? =
                if case .cookie(let name) = oldAccess.location { name } else { self.accessTokenCookie }
            if let accessCookie { headers.append(("Set-Cookie", cookies.setting(accessCookie, to: accessToken))) }
            if let rotated { headers.append(("Set-Cookie", cookies.setting(refreshCookie, to: rotated))) }
            if accessCookie == nil, let header = self.configuration.accessTokenResponseHeader {
                headers.append((header, accessToken))
            }
        } else {
            if let header = self.configuration.accessTokenResponseHeader { headers.append((header, accessToken)) }
            if let rotated, let header = self.configuration.refreshTokenResponseHeader {
                headers.append((header, rotated))
            }
        }
        return headers
    }

    /// Sign-out: `Set-Cookie`s clearing the session cookies the client holds.
    static func signOutHeaders(
        _ presented: TokenRefresh.Presented, cookies: SessionCookies
    ) -> HeaderFields {
        var headers: HeaderFields = []
        if case .cookie(let refreshCookie) = presented.refresh.location {
            if case .cookie(let accessCookie) = presented.access.location {
                headers.append(("Set-Cookie", cookies.clearing(accessCookie)))
            }
            headers.append(("Set-Cookie", cookies.clearing(refreshCookie)))
        }
        return headers
    }
}
