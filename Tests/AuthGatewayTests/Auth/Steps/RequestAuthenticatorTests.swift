import Foundation
import NIOCore
import NIOEmbedded
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The pipeline as a worker builds it (each step on its own: the other suites in this folder):
/// the registered order, synchronous runs without a future, a wait resumed after the step
/// that waited, and refusals ending the run where they happen.
@Suite("RequestAuthenticator")
struct RequestAuthenticatorTests {
    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture(
            extra: #""authService":{"url":"http://127.0.0.1:1","refresh":{"maxExpiredSeconds":3600}}"#)
    }

    @Test("a valid token is decided synchronously, through every step")
    func synchronousRun() throws {
        let pipeline = try self.fixture.pipeline()
        let request = self.fixture.request([("Authorization", "Bearer \(TestKeys.token(subject: "ivy"))")])
        guard case .done(.authenticated(let identity)) = pipeline.authenticate(request) else {
            Issue.record("the whole run is synchronous")
            return
        }
        #expect(identity.token.subject == "ivy")
        #expect(identity.issuer == TestKeys.issuer)
        #expect(identity.kind == .jwt)
    }

    @Test("an expired token with a refresh token goes to refresh; without an endpoint that is 503, nothing forwarded")
    func expiredGoesToRefresh() throws {
        let pipeline = try self.fixture.pipeline()
        let expired = TestKeys.token(now: self.fixture.now, expiresIn: -60)
        let request = self.fixture.request([("Authorization", "Bearer \(expired)"), ("X-Refresh-Token", "rt-1")])
        // Verification leaves an expired token to the refresh step.
        let verified = JWTVerification(try self.fixture.context()).run(
            self.fixture.state(.token(self.fixture.bearer(expired)), for: request), request)
        #expect(verified.next?.expired != nil)
        #expect(verified.next?.identity == nil)
        guard case .done(.rejected(let error, _)) = pipeline.authenticate(request) else {
            Issue.record("no endpoint: refused at once")
            return
        }
        #expect(error == .authServiceUnavailable)
        // Without a refresh section an expired token is simply expired.
        guard case .done(.rejected(let expiredError, _)) = try AuthStepFixture().pipeline().authenticate(request) else {
            Issue.record("an expired token without refresh is refused")
            return
        }
        #expect(expiredError == .tokenRejected(.expired))
    }

    @Test("opaque tokens go to introspection; with forJWTs a verified JWT goes there too, carrying its identity")
    func introspectionOrder() throws {
        let fixture = try AuthStepFixture(
            tokens: #""introspection":{"url":"http://127.0.0.1:1/introspect","forJWTs":true}"#)
        let context = try fixture.context()
        let request = fixture.request([])
        // An opaque token goes past verification to introspection, which (offline) cannot ask.
        let opaque = fixture.state(.token(fixture.bearer("opaque-token")), for: request)
        let passed = JWTVerification(context).run(opaque, request)
        #expect(passed.next?.identity == nil && passed.next?.expired == nil)
        let pipeline = RequestAuthenticator(context)
        let unavailable = Self.outcome(
            pipeline.authenticate(fixture.request([("Authorization", "Bearer opaque-token")])), fixture.eventLoop)
        #expect(unavailable?.refusal == .introspectionUnavailable)
        // With forJWTs a verified JWT is asked about too.
        let asked = Self.outcome(
            pipeline.authenticate(fixture.request([("Authorization", "Bearer \(TestKeys.token(subject: "alice"))")])),
            fixture.eventLoop)
        #expect(asked?.refusal == .introspectionUnavailable)
        // Without introspection an opaque token is just a bad token.
        guard
            case .done(.rejected(let error, _)) = try self.fixture.pipeline().authenticate(
                self.fixture.request([("Authorization", "Bearer opaque-token")]))
        else {
            Issue.record("an opaque token without introspection is refused")
            return
        }
        #expect(error.errorType.hasPrefix("token."))
    }

    @Test("refusals end the run where they happen: no token, a forged token, a requirement")
    func refusals() throws {
        let pipeline = try self.fixture.pipeline()
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

    /// The outcome of `decision`, once the embedded loop ran what it waits on.
    static func outcome(_ decision: AuthDecision, _ loop: EmbeddedEventLoop) -> AuthOutcome? {
        var outcome: AuthOutcome?
        decision.future(on: loop).assumeIsolated().whenSuccess { outcome = $0 }
        loop.run()
        return outcome
    }

    /// A step that waits: the run resumes after it, on the request's loop, with the state the
    /// wait delivered — the steps before it do not run again, the steps after it do.
    @Test("a waiting step resumes the run after itself")
    func waitResumesAfterTheStep() throws {
        let calls = Calls()
        let loop = self.fixture.eventLoop
        let answer = loop.makePromise(of: Void.self)
        let steps = NoSteps()
            .then(Recording(name: "first", calls: calls))
            .then(Waiting(loop: loop, answer: answer.futureResult, calls: calls))
            .then(Recording(name: "last", calls: calls))
        let pipeline = RequestAuthenticator(steps: steps, signInRedirect: nil, eventLoop: loop)
        guard case .pending(let future) = pipeline.authenticate(self.fixture.request([])) else {
            Issue.record("the run waits")
            return
        }
        #expect(calls.names == ["first", "waiting"])
        var outcome: AuthOutcome?
        future.assumeIsolated().whenSuccess { outcome = $0 }
        loop.run()
        #expect(calls.names == ["first", "waiting"])
        answer.succeed()
        loop.run()
        #expect(calls.names == ["first", "waiting", "last"])
        guard case .authenticated(let identity)? = outcome else {
            Issue.record("the state the wait delivered goes on")
            return
        }
        #expect(identity.token.subject == "waited")
    }
}

/// The names of the test steps that ran, in order.
private final class Calls {
    var names: [String] = []
}

private struct Recording: AuthenticationStep {
    let name: String
    let calls: Calls

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        self.calls.names.append(self.name)
        return .next
    }
}

private struct Waiting: AuthenticationStep {
    let loop: EventLoop
    let answer: EventLoopFuture<Void>
    let calls: Calls

    func run(_ state: inout AuthState, _ request: AuthRequest) -> StepResult {
        self.calls.names.append("waiting")
        let token = VerifiedToken(
            issuerIndex: 0, generation: 0, claims: ["sub": "waited"], subject: "waited", expiresAt: .infinity,
            notBefore: nil, issuedAt: nil, leewaySeconds: 0)
        return .after(self.answer, on: self.loop, resuming: state) { _, state in
            state.identity = Identity(
                token: token, accessToken: ExtractedToken(value: "t", location: .cookie(name: "c")), issuer: "i")
            return .next
        }
    }
}
