import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// The refresh step (docs/authentication.md, "Transparent refresh"): where the refresh token
/// comes from, and the one adoption that serves bearer tokens and sessions alike.
@Suite("TokenRefresh")
struct TokenRefreshTests {
    let fixture: AuthStepFixture
    let bearer: BearerRefresh

    init() throws {
        self.fixture = try AuthStepFixture(
            extra: #""authService":{"url":"http://127.0.0.1:1","refresh":{"maxExpiredSeconds":3600}}"#)
        let configuration = self.fixture.configuration
        let refresher = SessionRefresher(
            configuration: configuration.authService!.refresh!, callTimeoutMilliseconds: 1000,
            store: LocalRefreshStore(clock: { 0 }), metrics: ProcessMetrics(), clock: { 0 })
        self.bearer = BearerRefresh(
            configuration: configuration.authService!.refresh!, refresher: refresher,
            tokenSources: configuration.tokens.sources, endpoint: { nil })
    }

    /// The step, judging a refreshed token at `clock`'s time.
    func step(
        _ fixture: AuthStepFixture? = nil, clock: @escaping @Sendable () -> Double
    ) -> TokenRefresh {
        let fixture = fixture ?? self.fixture
        return TokenRefresh(
            bearer: self.bearer, session: nil, verification: fixture.verification(), metrics: WorkerMetrics(),
            logger: .init(label: "test"), clock: clock)
    }

    var now: Double { self.fixture.now }

    /// The step at the request's own time.
    var current: TokenRefresh {
        let now = self.now
        return self.step(clock: { now })
    }

    private var headerTokens: TokenRefresh.Ticket {
        .bearer(
            TokenRefresh.Presented(
                access: ExtractedToken(value: "old-access", location: .header(name: "Authorization", bearer: true)),
                refresh: ExtractedToken(value: "rt-1", location: .header(name: "X-Refresh-Token", bearer: false)),
                isTLS: false))
    }

    private func cookieTokens(isTLS: Bool = false) -> TokenRefresh.Ticket {
        .bearer(
            TokenRefresh.Presented(
                access: ExtractedToken(value: "old-access", location: .cookie(name: "access_token")),
                refresh: ExtractedToken(value: "rt-1", location: .cookie(name: "refresh_token")), isTLS: isTLS))
    }

    private func adopt(
        _ outcome: RefreshOutcome, _ ticket: TokenRefresh.Ticket, refresh: TokenRefresh? = nil,
        keys: KeySnapshot? = nil, refetched: Bool = false
    ) -> StepAnswer {
        let refresh = refresh ?? self.current
        let keys = keys ?? self.fixture.keys
        var state = AuthState(keys: keys)
        var result = refresh.adopt(outcome, ticket, &state, keys: keys, refetched: refetched)
        // A key refetch (nothing to fetch from here) is waited for on the embedded loop.
        while case .wait(let future) = result {
            var settled: StepResumption?
            future.assumeIsolated().whenSuccess { settled = $0 }
            self.fixture.eventLoop.run()
            guard let settled else { break }
            (state, result) = (settled.state, settled.result)
        }
        return StepAnswer(state: state, result: result)
    }

    // MARK: start

    @Test("an expired token with a refresh token is refreshed; without one, too old, or two of them it is refused")
    func start() throws {
        let expired = try self.fixture.verified(TestKeys.token(now: self.now, expiresIn: -60))
        #expect(
            try self.bearer.start(expired: expired, headers: ["X-Refresh-Token": "rt-1"], now: self.now).get().value
                == "rt-1")
        #expect(
            self.refusal(self.bearer.start(expired: expired, headers: [:], now: self.now)) == .tokenRejected(.expired))
        let ancient = try self.fixture.verified(TestKeys.token(now: self.now, expiresIn: -7200))
        let tooOld = self.bearer.start(expired: ancient, headers: ["X-Refresh-Token": "rt-1"], now: self.now)
        #expect(self.refusal(tooOld) == .tokenRejected(.expired))
        let two = HTTPHeaders([("X-Refresh-Token", "rt-1"), ("Cookie", "refresh_token=rt-2")])
        #expect(self.refusal(self.bearer.start(expired: expired, headers: two, now: self.now)) == .ambiguousToken)
    }

    private func refusal(_ result: Result<ExtractedToken, GatewayError>) -> GatewayError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    @Test("without a refresh endpoint (no discovery document yet) nothing is redeemed: 503")
    func noEndpoint() throws {
        let expired = TestKeys.token(now: self.now, expiresIn: -60)
        let request = self.fixture.request([("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", "rt-1")])
        var state = self.fixture.state(.token(self.fixture.bearer(expired)), for: request)
        state.expired = try self.fixture.verified(expired)
        #expect(self.current.run(state, request).refusal?.error == .authServiceUnavailable)
        // Nothing expired: the step stands aside.
        state.expired = nil
        #expect(self.current.run(state, request).next != nil)
    }

    // MARK: adopt

    @Test("a refusal of a cookie session clears both cookies; unavailable is 503 and clears nothing")
    func refusals() {
        guard let refused = self.adopt(.rejected, self.cookieTokens()).refusal else {
            Issue.record("a refused refresh is a refusal")
            return
        }
        #expect(refused.error == .refreshRejected)
        #expect(refused.headers.map(\.value).contains { $0.hasPrefix("access_token=;") && $0.contains("Max-Age=0") })
        #expect(refused.headers.map(\.value).contains { $0.hasPrefix("refresh_token=;") && $0.contains("Max-Age=0") })
        guard let unavailable = self.adopt(.unavailable, self.cookieTokens()).refusal else {
            Issue.record("an unavailable auth service is a refusal")
            return
        }
        #expect(unavailable.error == .authServiceUnavailable)
        #expect(unavailable.headers.isEmpty)
    }

    @Test("the new token replaces the old one and goes back in headers, with the rotated refresh token")
    func adoptedInHeaders() {
        let newToken = TestKeys.token(subject: "hank")
        guard
            let state = self.adopt(.refreshed(accessToken: newToken, refreshToken: "rt-2"), self.headerTokens).next,
            let identity = state.identity
        else {
            Issue.record("an adopted refresh is an identity")
            return
        }
        #expect(state.refreshed && state.expired == nil)
        #expect(identity.replacementAccessToken == newToken)
        #expect(identity.token.subject == "hank")
        #expect(identity.responseHeaders.map(\.name) == ["X-Access-Token", "X-Refresh-Token"])
        #expect(identity.responseHeaders.map(\.value) == [newToken, "rt-2"])
    }

    @Test("a cookie session gets Set-Cookies (Secure over TLS); an unchanged refresh token is not sent again")
    func adoptedInCookies() {
        let newToken = TestKeys.token(subject: "hank")
        guard
            let identity = self.adopt(
                .refreshed(accessToken: newToken, refreshToken: "rt-1"), self.cookieTokens(isTLS: true)
            ).next?.identity
        else {
            Issue.record("an adopted refresh is an identity")
            return
        }
        #expect(identity.responseHeaders.map(\.name) == ["Set-Cookie"])
        let cookie = identity.responseHeaders[0].value
        #expect(cookie.hasPrefix("access_token=\(newToken);"))
        #expect(cookie.contains("HttpOnly") && cookie.hasSuffix("; Secure"))
    }

    /// The one clock rule (docs/authentication.md, "Transparent refresh"): a refreshed token is
    /// judged when the answer arrived, not when the request did. The provider issued it after
    /// the request began: a `nbf` after the arrival is fine once the answer is in, and a token
    /// that expired while the call took its time is not adopted. Bearer tokens and sessions
    /// share `adopt`, so both follow it.
    @Test("a refreshed token is judged at the time its answer arrived")
    func theClockOfTheAnswerDecides() {
        let arrival = self.now
        let answered = arrival + 3
        let afterArrival = TestKeys.token(
            subject: "nora", now: arrival, expiresIn: 300, extra: ["nbf": .number(JSONNumber(Int(arrival) + 2))])
        let atAnswer = self.step(clock: { answered })
        #expect(
            self.adopt(.refreshed(accessToken: afterArrival, refreshToken: nil), self.headerTokens, refresh: atAnswer)
                .next?.identity != nil)
        // The arrival's clock would have refused it (leeway 0): the rule is what decides.
        let atArrival = self.step(clock: { arrival })
        #expect(
            self.adopt(.refreshed(accessToken: afterArrival, refreshToken: nil), self.headerTokens, refresh: atArrival)
                .refusal?.error == .refreshRejected)
        // A token that expired during the call is not adopted, though it was current at arrival.
        let shortLived = TestKeys.token(subject: "nora", now: arrival, expiresIn: 1)
        #expect(
            self.adopt(.refreshed(accessToken: shortLived, refreshToken: nil), self.headerTokens, refresh: atAnswer)
                .refusal?.error == .refreshRejected)
    }

    @Test("a new token that does not verify signs out (never forwarded); an unknown kid asks for keys once")
    func unverifiableNewTokens() throws {
        let forged = RefreshOutcome.refreshed(accessToken: TestKeys.token(signer: TestKeys.otherRSA), refreshToken: nil)
        guard let refused = self.adopt(forged, self.cookieTokens()).refusal else {
            Issue.record("an unverifiable new token is refused")
            return
        }
        #expect(refused.error == .refreshRejected)
        #expect(refused.headers.filter { $0.name == "Set-Cookie" && $0.value.contains("Max-Age=0") }.count == 2)

        let remote = try AuthStepFixture(
            extra: #""authService":{"url":"http://127.0.0.1:1","refresh":{"maxExpiredSeconds":3600}}"#,
            jwksURL: "http://127.0.0.1:1/jwks.json")
        let now = self.now
        let refresh = self.step(remote, clock: { now })
        let rotated = RefreshOutcome.refreshed(
            accessToken: TestKeys.token(signer: try JWTSigner.generateRS256(kid: "new")), refreshToken: nil)
        // The keys were never fetched: nothing can be checked (503), and nothing is signed out.
        #expect(
            self.adopt(rotated, self.headerTokens, refresh: refresh, keys: remote.keys).refusal?.error
                == .keysUnavailable)
        // After a refetch, a still unknown kid signs out.
        #expect(
            self.adopt(rotated, self.headerTokens, refresh: refresh, keys: remote.keys, refetched: true).refusal?.error
                == .refreshRejected)
    }
}
