import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The introspection step (the endpoint's answers themselves: `IntrospectionAnswerTests`, over
/// the wire: `IntrospectionTests`); `forJWTs` on.
@Suite("TokenIntrospection")
struct TokenIntrospectionTests {
    let fixture: AuthStepFixture
    let introspector: TokenIntrospector

    init() throws {
        self.fixture = try AuthStepFixture(
            tokens: #""introspection":{"url":"http://127.0.0.1:1/introspect","forJWTs":true}"#)
        self.introspector = TokenIntrospector(
            configuration: self.fixture.configuration.tokens.introspection!, capacity: 16, metrics: ProcessMetrics(),
            clock: { 0 })
    }

    func step(memo: RecentIntrospections = RecentIntrospections()) -> TokenIntrospection {
        TokenIntrospection(
            introspector: self.introspector, memo: memo, endpoint: { nil }, eventLoop: self.fixture.eventLoop,
            metrics: WorkerMetrics())
    }

    @Test("inactive is 401 token.inactive, unavailable 503; an active answer keeps the JWT's claims and is remembered")
    func adoptKeepsTheJWTsClaims() throws {
        let identity = try self.fixture.identity(TestKeys.token(subject: "alice"))
        let token = identity.accessToken
        guard
            case .refused(let inactive) = self.step().adopt(
                .inactive(validUntil: self.fixture.now + 5), token, verified: identity, changes: 0)
        else {
            Issue.record("inactive must be refused")
            return
        }
        #expect(inactive == .tokenInactive)
        guard case .refused(let unavailable) = self.step().adopt(.unavailable, token, verified: identity, changes: 0)
        else {
            Issue.record("unavailable must be refused")
            return
        }
        #expect(unavailable == .introspectionUnavailable)

        let memo = RecentIntrospections()
        let answer: JSONObject = ["active": true, "sub": "someone-else", "scope": "admin"]
        guard
            case .identity(let adopted) = self.step(memo: memo).adopt(
                .active(claims: answer, validUntil: self.fixture.now + 30), token, verified: identity,
                changes: memo.changes)
        else {
            Issue.record("active must be an identity")
            return
        }
        #expect(adopted.token.claims["sub"] == "alice")
        #expect(adopted.token.claims["scope"] == identity.token.claims["scope"])
        #expect(adopted.issuer == TestKeys.issuer)
        #expect(
            memo.lookup(token.value, introspector: self.introspector, now: self.fixture.now)?.claims["sub"] == "alice")
        #expect(memo.lookup(token.value, introspector: self.introspector, now: self.fixture.now + 31) == nil)
        // The next request with that token is answered by the loop's memo, without a call.
        guard
            case .identity(let remembered) = self.step(memo: memo).introspect(
                token, verified: identity, now: self.fixture.now, trace: nil, changes: memo.changes)
        else {
            Issue.record("a remembered answer is an identity at once")
            return
        }
        #expect(remembered.token.claims["sub"] == "alice")
    }

    @Test("an answer binding the JWT to another key than its own is refused; a new binding is added")
    func bindings() throws {
        let bound = try self.fixture.identity(TestKeys.token(subject: "alice", extra: ["cnf": ["jkt": "key-1"]]))
        guard
            case .refused(let error) = self.step().adopt(
                .active(claims: ["active": true, "cnf": ["jkt": "key-2"]], validUntil: self.fixture.now + 30),
                bound.accessToken, verified: bound, changes: 0)
        else {
            Issue.record("a contradicting binding must be refused")
            return
        }
        #expect(error == .tokenRejected(.invalidClaim))
        let unbound = try self.fixture.identity(TestKeys.token(subject: "bob"))
        guard
            case .identity(let nowBound) = self.step().adopt(
                .active(claims: ["active": true, "cnf": ["jkt": "key-3"]], validUntil: self.fixture.now + 30),
                unbound.accessToken, verified: unbound, changes: 0)
        else {
            Issue.record("an added binding is adopted")
            return
        }
        #expect(nowBound.token.claims["cnf"]?["jkt"] == "key-3")
    }

    @Test("an opaque token's active answer becomes its claims, under the introspection issuer")
    func opaqueTokens() {
        let opaque = ExtractedToken(value: "opaque-1", location: .header(name: "Authorization", bearer: true))
        guard
            case .identity(let identity) = self.step().adopt(
                .active(claims: ["active": true, "sub": "svc", "scope": "read"], validUntil: self.fixture.now + 30),
                opaque, verified: nil, changes: 0)
        else {
            Issue.record("an active opaque token is an identity")
            return
        }
        #expect(identity.token.subject == "svc")
        #expect(identity.token.claims["scope"] == "read")
        #expect(identity.issuer == "http://127.0.0.1:1/introspect")
    }

    @Test("without an endpoint a lookup fails closed: unavailable, never an identity")
    func noEndpoint() {
        let opaque = ExtractedToken(value: "opaque-2", location: .header(name: "Authorization", bearer: true))
        guard
            case .pending(let answer) = self.step().introspect(
                opaque, verified: nil, now: self.fixture.now, trace: nil, changes: 0)
        else {
            Issue.record("an unknown token needs the endpoint")
            return
        }
        var outcome: IntrospectionOutcome?
        answer.assumeIsolated().whenSuccess { outcome = $0 }
        self.fixture.eventLoop.run()
        #expect(outcome == .unavailable)
    }
}
