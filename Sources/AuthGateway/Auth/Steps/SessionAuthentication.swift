import NIOCore
import NIOHTTP1

/// A browser session (docs/browser-sign-in.md, "Requests with a session"): the session cookie's
/// handle leads to the session's access token, which the steps after then authenticate exactly
/// as a bearer token (an expired one is renewed by `TokenRefresh`, with the session's refresh
/// token). An unsafe method must come from the gateway's own origin (CSRF), checked before
/// anything is looked up. No live session: 401 with the cookie cleared — or, on an `optional`
/// route, no credential at all.
struct SessionAuthentication: AuthenticationStep {
    /// nil without `browserSignIn`: no request presents a session then.
    let signIn: BrowserSignIn?
    /// This loop's handles and their digests (`RecentSessionDigests`).
    let recentDigests: RecentSessionDigests
    let eventLoop: EventLoop
    let metrics: WorkerMetrics

    init(signIn: BrowserSignIn?, recentDigests: RecentSessionDigests, eventLoop: EventLoop, metrics: WorkerMetrics) {
        self.signIn = signIn
        self.recentDigests = recentDigests
        self.eventLoop = eventLoop
        self.metrics = metrics
    }

    init(_ context: StepContext) {
        self.init(
            signIn: context.features.signIn?.browserSignIn, recentDigests: RecentSessionDigests(),
            eventLoop: context.eventLoop, metrics: context.metrics)
    }

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        guard case .session(let handle) = state.credential, let signIn = self.signIn else { return .next }
        guard
            BrowserRequest.isSameOrigin(
                method: request.method, headers: request.headers,
                publicBaseURL: signIn.configuration.publicBaseURL)
        else { return .refuse(.signInCSRF) }
        // The handle's SHA-256 (remembered by the loop for a handle it knows): the store's key,
        // and the session's name in the steps after (a refresh, a database read).
        let digest = self.recentDigests.digest(of: handle)
        switch signIn.sessions.lookup(digest, now: request.now, lifetime: signIn.lifetime, on: self.eventLoop) {
        case .found(let record):
            self.recentDigests.remember(handle, digest: digest)
            state.credential = .token(Self.token(of: record, digest: digest))
            return .next
        case .missing:
            return self.noSession(&state, request, signIn)
        case .expired:
            self.metrics.increment(.signOut(.expired))
            return self.noSession(&state, request, signIn)
        case .pending(let record):
            return .after(record, on: self.eventLoop, resuming: state) { record, state in
                guard let record else { return self.noSession(&state, request, signIn) }
                self.recentDigests.remember(handle, digest: digest)
                // The session's access token becomes the credential.
                state.credential = .token(Self.token(of: record, digest: digest))
                return .next
            }
        }
    }

    /// An unknown or ended session: on an `optional` route no credential at all; else 401 with
    /// the stale cookie cleared.
    private func noSession(_ state: inout AuthState, _ request: AuthRequest, _ signIn: BrowserSignIn) -> StepResult {
        guard request.route.auth != .optional else {
            state.credential = .none
            return .next
        }
        return .refuse(.tokenMissing, headers: [("Set-Cookie", signIn.cookies.clearingSession)])
    }

    static func token(of record: SessionRecord, digest: TokenDigest) -> ExtractedToken {
        ExtractedToken(value: record.accessTokenSlice, location: .session(digest))
    }
}
