import NIOCore
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The pipeline's order (each step on its own: the other suites in this folder): which phase
/// follows which, and that synchronous steps run to the end without a future.
@Suite("RequestAuthenticator")
struct RequestAuthenticatorTests {
    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture(
            extra: #""authService":{"url":"http://127.0.0.1:1","refresh":{"maxExpiredSeconds":3600}}"#)
    }

    /// The pipeline as a `Worker` builds it, without endpoints (nothing can call out).
    static func pipeline(_ fixture: AuthStepFixture, introspector: TokenIntrospector? = nil) -> RequestAuthenticator {
        let configuration = fixture.configuration
        let verification = fixture.verification()
        let refresh = configuration.authService?.refresh.map {
            TokenRefresh(
                configuration: $0,
                refresher: SessionRefresher(
                    configuration: $0, callTimeoutMilliseconds: 1000, store: LocalRefreshStore(clock: { 0 }),
                    metrics: ProcessMetrics(), clock: { 0 }),
                tokenSources: configuration.tokens.sources, endpoint: { nil }, verification: verification,
                logger: .init(label: "test"))
        }
        return RequestAuthenticator(
            extraction: CredentialExtraction(sources: configuration.tokens.sources),
            verification: verification,
            refresh: refresh,
            introspection: introspector.map {
                TokenIntrospection(
                    introspector: $0, memo: RecentIntrospections(), endpoint: { nil }, eventLoop: fixture.eventLoop,
                    metrics: WorkerMetrics())
            },
            proofOfPossession: ProofOfPossession(
                configuration: configuration.tokens.dpop, replay: ReplayCache(), sharedReplay: nil,
                nonceKey: DPoPNonce.key(sharedSecret: nil), eventLoop: fixture.eventLoop),
            profile: ProfileLookup(
                profiles: nil, configuration: configuration, endpoint: { nil }, eventLoop: fixture.eventLoop,
                metrics: WorkerMetrics())
        )
    }

    @Test("a valid token runs every phase synchronously: extract → verify → DPoP → profile → requirements")
    func synchronousRun() throws {
        let pipeline = Self.pipeline(self.fixture)
        let request = self.fixture.request([("Authorization", "Bearer \(TestKeys.token(subject: "ivy"))")])
        guard case .next(.verify(let token, _, false)) = pipeline.step(.extract, request) else {
            Issue.record("extract goes on to verify")
            return
        }
        guard
            case .next(.proofOfPossession(let identity)) = pipeline.step(
                .verify(token, keys: request.keys, refetched: false), request)
        else {
            Issue.record("a current token goes on to proof of possession")
            return
        }
        #expect(identity.issuer == TestKeys.issuer)
        guard case .next(.profile) = pipeline.step(.proofOfPossession(identity), request),
            case .next(.requirements) = pipeline.step(.profile(identity), request),
            case .next(.done(.authenticated)) = pipeline.step(.requirements(identity), request)
        else {
            Issue.record("then profile, requirements, authenticated")
            return
        }
        guard case .done(.authenticated(let authenticated)) = pipeline.authenticate(request) else {
            Issue.record("the whole run is synchronous")
            return
        }
        #expect(authenticated.token.subject == "ivy")
    }

    @Test("an expired token with a refresh token goes to refresh; without an endpoint that is 503, nothing forwarded")
    func expiredGoesToRefresh() throws {
        let pipeline = Self.pipeline(self.fixture)
        let expired = TestKeys.token(now: self.fixture.now, expiresIn: -60)
        let request = self.fixture.request([("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", "rt-1")])
        guard
            case .next(.refresh(_, _, let refresh, _)) = pipeline.step(
                .verify(self.fixture.bearer(expired), keys: request.keys, refetched: false), request)
        else {
            Issue.record("an expired token with a refresh token goes to refresh")
            return
        }
        #expect(refresh.value == "rt-1")
        guard case .done(.rejected(let error, _)) = pipeline.authenticate(request) else {
            Issue.record("no endpoint: refused at once")
            return
        }
        #expect(error == .authServiceUnavailable)
        // Without a refresh section an expired token is simply expired.
        let bare = Self.pipeline(try AuthStepFixture())
        guard case .done(.rejected(let expiredError, _)) = bare.authenticate(request) else {
            Issue.record("an expired token without refresh is refused")
            return
        }
        #expect(expiredError == .tokenRejected(.expired))
    }

    @Test("opaque tokens go to introspection; with forJWTs a verified JWT goes there too, carrying its identity")
    func introspectionOrder() throws {
        let fixture = try AuthStepFixture(
            tokens: #""introspection":{"url":"http://127.0.0.1:1/introspect","forJWTs":true}"#)
        let introspector = TokenIntrospector(
            configuration: fixture.configuration.tokens.introspection!, capacity: 16, metrics: ProcessMetrics(),
            clock: { 0 })
        let pipeline = Self.pipeline(fixture, introspector: introspector)
        let request = fixture.request([])
        guard
            case .next(.introspect(_, nil)) = pipeline.step(
                .verify(fixture.bearer("opaque-token"), keys: request.keys, refetched: false), request)
        else {
            Issue.record("an opaque token goes to introspection unverified")
            return
        }
        let jwt = TestKeys.token(subject: "alice")
        guard
            case .next(.introspect(let token, let verified?)) = pipeline.step(
                .verify(fixture.bearer(jwt), keys: request.keys, refetched: false), request)
        else {
            Issue.record("with forJWTs a verified JWT goes to introspection")
            return
        }
        #expect(token.value == jwt[...])
        #expect(verified.token.subject == "alice")
        // Without introspection an opaque token is just a bad token.
        guard
            case .next(.done(.rejected(let error, _))) = Self.pipeline(self.fixture).step(
                .verify(fixture.bearer("opaque-token"), keys: request.keys, refetched: false), request)
        else {
            Issue.record("an opaque token without introspection is refused")
            return
        }
        #expect(error.errorType.hasPrefix("token."))
    }

    @Test("refusals end the run where they happen: no token, a forged token, a requirement")
    func refusals() throws {
        let pipeline = Self.pipeline(self.fixture)
        guard case .done(.rejected(let missing, _)) = pipeline.authenticate(self.fixture.request([])) else {
            Issue.record("no token is refused")
            return
        }
        #expect(missing == .tokenMissing)
        let forged = self.fixture.request([("Authorization", "Bearer \(TestKeys.token(signer: TestKeys.otherRSA))")])
        guard case .done(.rejected(let bad, _)) = pipeline.authenticate(forged) else {
            Issue.record("a forged token is refused")
            return
        }
        #expect(bad == .tokenRejected(.badSignature))
        let admin = self.fixture.route(require: try AuthStepFixture.requirement(["claims.roles": "admin"]))
        let request = self.fixture.request([("Authorization", "Bearer \(TestKeys.token())")], route: admin)
        guard case .done(.rejected(let forbidden, _)) = pipeline.authenticate(request) else {
            Issue.record("an unmet requirement is refused")
            return
        }
        #expect(forbidden == .forbidden(#"routes[0].require["claims.roles"]"#))
        guard
            case .done(.anonymous) = pipeline.authenticate(
                self.fixture.request([], route: self.fixture.route(auth: .optional)))
        else {
            Issue.record("no token on an optional route is anonymous")
            return
        }
    }
}
