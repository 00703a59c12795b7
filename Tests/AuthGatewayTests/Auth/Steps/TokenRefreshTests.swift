import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

@Suite("TokenRefresh")
struct TokenRefreshTests {
    let fixture: AuthStepFixture
    let refresh: TokenRefresh

    init() throws {
        self.fixture = try AuthStepFixture(
            extra: #""authService":{"url":"http://127.0.0.1:1","refresh":{"maxExpiredSeconds":3600}}"#)
        let configuration = self.fixture.configuration
        let refresher = SessionRefresher(
            configuration: configuration.authService!.refresh!, callTimeoutMilliseconds: 1000,
            store: LocalRefreshStore(clock: { 0 }), metrics: ProcessMetrics(), clock: { 0 })
        self.refresh = TokenRefresh(
            configuration: configuration.authService!.refresh!, refresher: refresher,
            tokenSources: configuration.tokens.sources, endpoint: { nil }, verification: self.fixture.verification(),
            logger: .init(label: "test"))
    }

    private var headerTokens: TokenRefresh.Presented {
        TokenRefresh.Presented(
            access: ExtractedToken(value: "old-access", location: .header(name: "Authorization", bearer: true)),
            refresh: ExtractedToken(value: "rt-1", location: .header(name: "X-Refresh-Token", bearer: false)))
    }

    private var cookieTokens: TokenRefresh.Presented {
        TokenRefresh.Presented(
            access: ExtractedToken(value: "old-access", location: .cookie(name: "access_token")),
            refresh: ExtractedToken(value: "rt-1", location: .cookie(name: "refresh_token")))
    }

    // MARK: start

    @Test("an expired token with a refresh token is refreshed; without one, too old, or two of them it is refused")
    func start() throws {
        let expired = try self.fixture.verified(TestKeys.token(now: self.fixture.now, expiresIn: -60))
        guard
            case .refresh(let token) = self.refresh.start(
                expired: expired, headers: ["X-Refresh-Token": "rt-1"], now: self.fixture.now)
        else {
            Issue.record("an expired token with a refresh token is refreshed")
            return
        }
        #expect(token.value == "rt-1")
        guard case .refused(let none) = self.refresh.start(expired: expired, headers: [:], now: self.fixture.now) else {
            Issue.record("no refresh token: refused")
            return
        }
        #expect(none == .tokenRejected(.expired))
        let ancient = try self.fixture.verified(TestKeys.token(now: self.fixture.now, expiresIn: -7200))
        guard
            case .refused(let tooOld) = self.refresh.start(
                expired: ancient, headers: ["X-Refresh-Token": "rt-1"], now: self.fixture.now)
        else {
            Issue.record("past maxExpiredSeconds no refresh is tried")
            return
        }
        #expect(tooOld == .tokenRejected(.expired))
        let two = HTTPHeaders([("X-Refresh-Token", "rt-1"), ("Cookie", "refresh_token=rt-2")])
        guard case .refused(let ambiguous) = self.refresh.start(expired: expired, headers: two, now: self.fixture.now)
        else {
            Issue.record("two different refresh tokens are ambiguous")
            return
        }
        #expect(ambiguous == .ambiguousToken)
    }

    @Test("without a refresh endpoint (no discovery document yet) nothing is redeemed")
    func noEndpoint() {
        #expect(self.refresh.redeem(self.headerTokens.refresh, claims: [:], trace: nil) == nil)
    }

    // MARK: adopt

    @Test("a refusal of a cookie session clears both cookies; unavailable is 503 and clears nothing")
    func refusals() {
        let request = self.fixture.request([])
        guard
            case .refused(let error, let headers) = self.refresh.adopt(
                .rejected, self.cookieTokens, keys: self.fixture.keys, refetched: false, request: request)
        else {
            Issue.record("a refused refresh is a refusal")
            return
        }
        #expect(error == .refreshRejected)
        #expect(headers.map(\.value).contains { $0.hasPrefix("access_token=;") && $0.contains("Max-Age=0") })
        #expect(headers.map(\.value).contains { $0.hasPrefix("refresh_token=;") && $0.contains("Max-Age=0") })
        guard
            case .refused(let unavailable, let none) = self.refresh.adopt(
                .unavailable, self.cookieTokens, keys: self.fixture.keys, refetched: false, request: request)
        else {
            Issue.record("an unavailable auth service is a refusal")
            return
        }
        #expect(unavailable == .authServiceUnavailable)
        #expect(none.isEmpty)
    }

    @Test("the new token replaces the old one and goes back in headers, with the rotated refresh token")
    func adoptedInHeaders() {
        let newToken = TestKeys.token(subject: "hank")
        guard
            case .identity(let identity) = self.refresh.adopt(
                .refreshed(accessToken: newToken, refreshToken: "rt-2"), self.headerTokens, keys: self.fixture.keys,
                refetched: false, request: self.fixture.request([]))
        else {
            Issue.record("an adopted refresh is an identity")
            return
        }
        #expect(identity.replacementAccessToken == newToken)
        #expect(identity.token.subject == "hank")
        #expect(identity.responseHeaders.map(\.name) == ["X-Access-Token", "X-Refresh-Token"])
        #expect(identity.responseHeaders.map(\.value) == [newToken, "rt-2"])
    }

    @Test("a cookie session gets Set-Cookies (Secure over TLS); an unchanged refresh token is not sent again")
    func adoptedInCookies() {
        let newToken = TestKeys.token(subject: "hank")
        guard
            case .identity(let identity) = self.refresh.adopt(
                .refreshed(accessToken: newToken, refreshToken: "rt-1"), self.cookieTokens, keys: self.fixture.keys,
                refetched: false, request: self.fixture.request([], isTLS: true))
        else {
            Issue.record("an adopted refresh is an identity")
            return
        }
        #expect(identity.responseHeaders.map(\.name) == ["Set-Cookie"])
        let cookie = identity.responseHeaders[0].value
        #expect(cookie.hasPrefix("access_token=\(newToken);"))
        #expect(cookie.contains("HttpOnly") && cookie.hasSuffix("; Secure"))
    }

    @Test("a new token that does not verify signs out (never forwarded); an unknown kid asks for keys once")
    func unverifiableNewTokens() throws {
        let request = self.fixture.request([])
        let forged = RefreshOutcome.refreshed(accessToken: TestKeys.token(signer: TestKeys.otherRSA), refreshToken: nil)
        guard
            case .refused(let error, let headers) = self.refresh.adopt(
                forged, self.cookieTokens, keys: self.fixture.keys, refetched: false, request: request)
        else {
            Issue.record("an unverifiable new token is refused")
            return
        }
        #expect(error == .refreshRejected)
        #expect(headers.filter { $0.name == "Set-Cookie" && $0.value.contains("Max-Age=0") }.count == 2)

        let remote = try AuthStepFixture(
            extra: #""authService":{"url":"http://127.0.0.1:1","refresh":{"maxExpiredSeconds":3600}}"#,
            jwksURL: "http://127.0.0.1:1/jwks.json")
        let refresh = TokenRefresh(
            configuration: remote.configuration.authService!.refresh!, refresher: self.refresh.refresher,
            tokenSources: remote.configuration.tokens.sources, endpoint: { nil }, verification: remote.verification(),
            logger: .init(label: "test"))
        let rotated = RefreshOutcome.refreshed(
            accessToken: TestKeys.token(signer: try JWTSigner.generateRS256(kid: "new")), refreshToken: nil)
        guard
            case .unknownKey(let issuer) = refresh.adopt(
                rotated, self.headerTokens, keys: remote.keys, refetched: false, request: request)
        else {
            Issue.record("a new token with an unknown kid asks for the issuer's keys")
            return
        }
        #expect(issuer == 0)
        guard
            case .refused(let stillUnknown, _) = refresh.adopt(
                rotated, self.headerTokens, keys: remote.keys, refetched: true, request: request)
        else {
            Issue.record("after a refetch, a still unknown kid signs out")
            return
        }
        #expect(stillUnknown == .refreshRejected)
    }
}
