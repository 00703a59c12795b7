import Crypto
import NIOCore
import NIOHTTP1

/// What a sign-in endpoint, or a request sent to sign in, is answered with.
enum SignInAnswer: Sendable {
    /// 302 to `location`, setting `cookies`.
    case redirect(location: String, cookies: [String])
    case refused(GatewayError, cookies: [String])
    /// A back-channel logout was taken: 200.
    case loggedOut
    /// A back-channel logout was refused: 400 `{"error":"invalid_request"}`.
    case invalidLogout
}

/// Browser sign-in (docs/browser-sign-in.md), process-wide and per configuration: starting
/// flows, finishing them at the callback, signing out, and back-channel logout. Kept across
/// reloads with its sessions while `browserSignIn` is unchanged.
final class BrowserSignIn: Sendable {
    let configuration: BrowserSignInConfiguration
    let cookies: SignInCookies
    let sessions: SessionStore
    let lifetime: SessionLifetime
    private let sealer: SignInFlowSealer
    private let keyStore: KeyStore
    /// Finished flows and logout tokens' `jti`s, while they could be replayed.
    private let seen: ReplayCache
    /// With `sharedState`: the same, across instances.
    private let sharedSeen: SharedDPoPReplay?
    private let metrics: ProcessMetrics
    /// Unix seconds: an answer that arrives after a wait is judged at the time it arrived.
    private let clock: @Sendable () -> Double

    init(
        configuration: BrowserSignInConfiguration, sessions: SessionStore, flowKey: SymmetricKey, keyStore: KeyStore,
        seen: ReplayCache, sharedSeen: SharedDPoPReplay?, metrics: ProcessMetrics,
        clock: @escaping @Sendable () -> Double
    ) {
        self.clock = clock
        self.configuration = configuration
        self.cookies = SignInCookies(configuration: configuration)
        self.sessions = sessions
        self.lifetime = SessionLifetime(
            idleSeconds: configuration.sessionIdleSeconds, maxSeconds: configuration.sessionMaxSeconds)
        self.sealer = SignInFlowSealer(key: flowKey)
        self.keyStore = keyStore
        self.seen = seen
        self.sharedSeen = sharedSeen
        self.metrics = metrics
    }

    /// Now, for what arrives after a wait (a refreshed token is judged when it arrives).
    var now: Double { self.clock() }

    private var document: DiscoveryDocument? { self.keyStore.discoveryDocument(issuer: self.configuration.issuer) }

    // MARK: Starting a sign-in

    /// A redirect to the provider's `authorization_endpoint` with a new flow (and its cookie);
    /// past `SignInFlow.maximumCookies` flows, the oldest cookies are cleared.
    func start(returnPath: String, headers: HTTPHeaders, now: Double) -> SignInAnswer {
        guard let authorize = self.document?.authorizationEndpoint else {
            return .refused(.signInUnavailable, cookies: [])
        }
        let flow = SignInFlow.start(returnPath: returnPath, now: now)
        let name = self.cookies.flowName(flow.id)
        var cookies = [self.cookies.flow(flow.id, value: self.sealer.seal(flow, cookieName: name))]
        cookies += self.surplusFlows(in: headers, now: now).map(self.cookies.clearingFlow(named:))
        let query = FormEncoding.body([
            ("response_type", "code"), ("client_id", self.configuration.clientID),
            ("redirect_uri", self.configuration.redirectURI),
            ("scope", self.configuration.scopes.joined(separator: " ")),
            ("state", flow.id), ("nonce", flow.nonce), ("code_challenge", flow.challenge),
            ("code_challenge_method", "S256"),
        ])
        let base = authorize.description
        return .redirect(location: base + (base.contains("?") ? "&" : "?") + query, cookies: cookies)
    }

    /// The flow cookies to clear so that, with the new one, at most `maximumCookies` remain:
    /// unreadable ones first, then the oldest.
    private func surplusFlows(in headers: HTTPHeaders, now: Double) -> [String] {
        let held = self.cookies.flows(in: headers)
        guard held.count >= SignInFlow.maximumCookies else { return [] }
        let prefix = self.configuration.flowCookiePrefix
        let ages = held.map { cookie -> (name: String, expiresAt: Double) in
            let id = String(cookie.name.dropFirst(prefix.count))
            let flow = self.sealer.open(cookie.value, cookieName: cookie.name, id: id, now: now)
            return (cookie.name, flow?.expiresAt ?? -1)
        }
        return ages.sorted { $0.expiresAt < $1.expiresAt }.prefix(held.count - SignInFlow.maximumCookies + 1).map(
            \.name)
    }

    // MARK: The callback

    /// The flow the callback's `state` names, or why there is none. Marks it used.
    func finishFlow(
        query: Substring, headers: HTTPHeaders, now: Double
    ) -> Result<(SignInFlow, code: String), SignInFailure> {
        guard let state = FormDecoding.value("state", in: query), SignInFlow.isFlowID(state[...]) else {
            return .failure(SignInFailure(.signInInvalidState, outcome: "invalid_state"))
        }
        let name = self.cookies.flowName(state)
        let clear = [self.cookies.clearingFlow(named: name)]
        guard let cookie = self.cookies.flows(in: headers).first(where: { $0.name == name }),
            let flow = self.sealer.open(cookie.value, cookieName: name, id: state, now: now)
        else {
            return .failure(SignInFailure(.signInInvalidState, outcome: "invalid_state", cookies: clear))
        }
        if let error = FormDecoding.value("error", in: query) {
            return .failure(SignInFailure(.signInDenied(error), outcome: "denied", cookies: clear))
        }
        guard let code = FormDecoding.value("code", in: query), !code.isEmpty else {
            return .failure(
                SignInFailure(
                    .malformedRequest("The callback carries no code"), outcome: "invalid_state", cookies: clear))
        }
        guard self.seen.firstUse(Self.flowDigest(flow.id), until: flow.expiresAt, now: now) else {
            return .failure(SignInFailure(.signInInvalidState, outcome: "replayed", cookies: clear))
        }
        return .success((flow, code))
    }

    /// The callback, after `finishFlow`: exchanges the code, checks the ID token, creates the
    /// session and sends the browser where it was going — once the session is where every
    /// instance finds it (`SessionStore.written`: with `sharedState`, the browser's next
    /// request may reach another instance).
    func complete(
        _ flow: SignInFlow, code: String, headers: HTTPHeaders, endpoint: UpstreamEndpoint?
    ) -> EventLoopFuture<SignInAnswer>? {
        guard let endpoint else { return nil }
        let eventLoop = endpoint.client.eventLoop
        let configuration = self.configuration
        // The flow is used once fleet-wide (with `sharedState`): its cookie opens on every
        // instance, so the local mark of `finishFlow` alone would let another instance take
        // the same callback again. Called on the endpoint's loop, where the answer arrives.
        let exchanged: EventLoopFuture<CodeExchange.Outcome?>
        let keepSeconds = flow.expiresAt - self.clock()
        if let shared = self.sharedSeen?.firstUse(Self.flowDigest(flow.id), keepSeconds: keepSeconds, on: eventLoop) {
            exchanged = shared.assumeIsolated().flatMap { first -> EventLoopFuture<CodeExchange.Outcome?> in
                guard first else { return eventLoop.makeSucceededFuture(nil) }
                return CodeExchange.exchange(
                    code: code, verifier: flow.verifier, configuration: configuration, endpoint: endpoint
                ).map(Optional.some)
            }.nonisolated()
        } else {
            exchanged = CodeExchange.exchange(
                code: code, verifier: flow.verifier, configuration: configuration, endpoint: endpoint
            ).map(Optional.some)
        }
        return exchanged.flatMap { exchangedOutcome in
            guard let outcome = exchangedOutcome else {
                self.metrics.increment(.signIn(outcome: "replayed"))
                let clearFlow = self.cookies.clearingFlow(named: self.cookies.flowName(flow.id))
                return eventLoop.makeSucceededFuture(.refused(.signInInvalidState, cookies: [clearFlow]))
            }
            let (answer, created) = self.adopt(outcome, flow: flow, headers: headers, now: self.clock())
            guard let created else { return eventLoop.makeSucceededFuture(answer) }
            return self.sessions.written(created, on: eventLoop).map { answer }
        }
    }

    /// The callback's answer, and the digest of the session it created, if any.
    private func adopt(
        _ outcome: CodeExchange.Outcome, flow: SignInFlow, headers: HTTPHeaders, now: Double
    ) -> (SignInAnswer, created: TokenDigest?) {
        let clearFlow = self.cookies.clearingFlow(named: self.cookies.flowName(flow.id))
        switch outcome {
        case .unavailable:
            self.metrics.increment(.signIn(outcome: "unavailable"))
            return (.refused(.authServiceUnavailable, cookies: [clearFlow]), nil)
        case .refused:
            self.metrics.increment(.signIn(outcome: "code_rejected"))
            return (.refused(.signInCodeRejected, cookies: [clearFlow]), nil)
        case .tokens(let idToken, let accessToken, let refreshToken):
            let identity: IDToken
            switch OpenIDTokenChecks.idToken(
                idToken, keys: self.keyStore.snapshot, issuer: self.configuration.issuer,
                clientID: self.configuration.clientID, nonce: flow.nonce, now: now)
            {
            case .success(let checked):
                identity = checked
            case .failure(let failure):
                self.metrics.increment(.signIn(outcome: "id_token_rejected"))
                return (.refused(.signInIDTokenRejected(failure.rawValue), cookies: [clearFlow]), nil)
            }
            // A session the browser already had ends: a sign-in never continues another's.
            if let old = self.cookies.sessionHandle(in: headers) { self.sessions.end(old.digest, reason: .signOut) }
            let handle = SessionHandle.generate()
            self.sessions.create(
                handle.digest,
                SessionRecord(
                    subject: identity.subject, providerSessionID: identity.providerSessionID, idToken: idToken,
                    accessToken: accessToken, refreshToken: refreshToken, createdAt: now, lastUsedAt: now))
            self.metrics.increment(.signIn(outcome: "success"))
            return (
                .redirect(location: flow.returnPath, cookies: [self.cookies.session(handle), clearFlow]),
                handle.digest
            )
        }
    }

    // MARK: Signing out

    /// Ends the request's session everywhere and sends the browser to the provider's
    /// `end_session_endpoint` (with `id_token_hint`), or to `postSignOutPath`.
    func signOut(_ record: SessionRecord?, handle: SessionHandle?) -> SignInAnswer {
        if let handle {
            self.sessions.end(handle.digest, reason: .signOut)
            self.metrics.increment(.signOut(.rp))
        }
        let cookies = [self.cookies.clearingSession]
        guard let endSession = self.document?.endSessionEndpoint else {
            return .redirect(location: self.configuration.postSignOutPath, cookies: cookies)
        }
        var query = [("client_id", self.configuration.clientID)]
        if let record { query.insert(("id_token_hint", record.idToken), at: 0) }
        query.append(("post_logout_redirect_uri", self.configuration.postLogoutRedirectURI))
        let base = endSession.description
        return .redirect(location: base + (base.contains("?") ? "&" : "?") + FormEncoding.body(query), cookies: cookies)
    }

    // MARK: Back-channel logout

    /// A provider's logout token (form field `logout_token`); ends the sessions it names on
    /// every instance. Its `jti` is used once, here and (with `sharedState`) fleet-wide.
    func backchannelLogout(body: Substring, now: Double, on eventLoop: EventLoop) -> EventLoopFuture<SignInAnswer> {
        guard let token = FormDecoding.value("logout_token", in: body),
            case .success(let logout) = OpenIDTokenChecks.logoutToken(
                token, keys: self.keyStore.snapshot, issuer: self.configuration.issuer,
                clientID: self.configuration.clientID, now: now)
        else { return eventLoop.makeSucceededFuture(.invalidLogout) }
        let digest = TokenDigest(of: Substring("logout-jti:" + self.configuration.issuer + " " + logout.jti))
        let keepSeconds = logout.issuedAt + OpenIDTokenChecks.logoutTokenMaxAgeSeconds + 300 - now
        guard self.seen.firstUse(digest, until: now + keepSeconds, now: now) else {
            return eventLoop.makeSucceededFuture(.invalidLogout)
        }
        let end = { @Sendable () -> SignInAnswer in
            let ended = self.sessions.end(
                providerSessionID: logout.providerSessionID, subject: logout.subject, reason: .backchannel)
            self.metrics.increment(.signOut(.backchannel), by: UInt64(ended))
            return .loggedOut
        }
        guard let shared = self.sharedSeen?.firstUse(digest, keepSeconds: keepSeconds, on: eventLoop) else {
            return eventLoop.makeSucceededFuture(end())
        }
        return shared.map { first in first ? end() : .invalidLogout }
    }

    static func flowDigest(_ id: String) -> TokenDigest { TokenDigest(of: Substring("signin-flow:" + id)) }
}

/// A callback refused before any call: the error, the metric's outcome, the cookies to clear.
struct SignInFailure: Error {
    let error: GatewayError
    let outcome: String
    var cookies: [String] = []

    init(_ error: GatewayError, outcome: String, cookies: [String] = []) {
        self.error = error
        self.outcome = outcome
        self.cookies = cookies
    }
}
