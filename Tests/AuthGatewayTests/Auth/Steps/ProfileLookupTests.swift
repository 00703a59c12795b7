import NIOCore
import Testing

import AuthGatewayTesting
@testable import AuthGateway

@Suite("ProfileLookup")
struct ProfileLookupTests {
    static let profileSection = #""authService":{"url":"http://127.0.0.1:1","profile":{"path":"/v1/user"}}"#

    func step(_ fixture: AuthStepFixture, profiles: ProfileCache?) -> ProfileLookup {
        ProfileLookup(
            profiles: profiles, configuration: fixture.configuration, endpoint: { nil }, eventLoop: fixture.eventLoop,
            metrics: WorkerMetrics())
    }

    @Test("the profile is looked up only when require, identity headers or a profile rate limit read it")
    func needsProfile() throws {
        let plain = try AuthStepFixture(extra: Self.profileSection)
        let step = self.step(plain, profiles: nil)
        #expect(!step.needsProfile(on: plain.route()))
        let requires = plain.route(require: try AuthStepFixture.requirement(["profile.super_admin": true]))
        #expect(step.needsProfile(on: requires))
        // Anywhere in the tree: under not, inside an anyOf branch.
        let nested = plain.route(
            require: try AuthStepFixture.requirement([
                "claims.sub": "x", "anyOf": [["claims.a": 1], ["not": ["profile.banned": true]]],
            ]))
        #expect(step.needsProfile(on: nested))
        #expect(
            !step.needsProfile(on: plain.route(require: try AuthStepFixture.requirement(["anyOf": [["claims.a": 1]]]))))
        #expect(step.needsProfile(on: requires))
        let withHeaders = try AuthStepFixture(
            extra: Self.profileSection + #", "identityHeaders":{"X-User-Name":"profile.user_name"}"#)
        #expect(self.step(withHeaders, profiles: nil).needsProfile(on: withHeaders.route()))
        let withLimit = try AuthStepFixture(
            extra: Self.profileSection
                + #", "rateLimits":[{"name":"t","key":"profile.tenant","requestsPerSecond":1,"burst":1,"routes":["default"]}]"#
        )
        var limited = withLimit.route()
        limited.name = "default"
        #expect(self.step(withLimit, profiles: nil).needsProfile(on: limited))
        // A route the limit does not name still needs nothing.
        var other = withLimit.route()
        other.name = "other"
        #expect(!self.step(withLimit, profiles: nil).needsProfile(on: other))
    }

    @Test("without a subject there is no profile to look up: refused, not guessed")
    func noSubject() throws {
        let fixture = try AuthStepFixture(extra: Self.profileSection)
        let profiles = ProfileCache(
            configuration: fixture.configuration.authService!.profile!, metrics: ProcessMetrics(), clock: { 0 })
        let token = VerifiedToken(
            issuerIndex: 0, generation: 0, claims: [:], subject: nil, expiresAt: 2_000_000_000, notBefore: nil,
            issuedAt: nil,
            leewaySeconds: 0)
        let identity = Identity(token: token, accessToken: fixture.bearer("t"), issuer: TestKeys.issuer)
        let route = fixture.route(require: try AuthStepFixture.requirement(["profile.x": true]))
        guard
            case .refused(let error) = self.step(fixture, profiles: profiles).lookup(identity, route: route, trace: nil)
        else {
            Issue.record("no subject: refused")
            return
        }
        #expect(error == GatewayError.tokenRejected(.missingClaim))
    }

    @Test("a miss with nowhere to fetch from is the auth service being unavailable (503)")
    func missWithoutEndpoint() throws {
        let fixture = try AuthStepFixture(extra: Self.profileSection)
        let profiles = ProfileCache(
            configuration: fixture.configuration.authService!.profile!, metrics: ProcessMetrics(), clock: { 0 })
        let identity = try fixture.identity(TestKeys.token(subject: "ann"))
        let route = fixture.route(require: try AuthStepFixture.requirement(["profile.x": true]))
        guard
            case .pending(let fetched) = self.step(fixture, profiles: profiles).lookup(
                identity, route: route, trace: nil)
        else {
            Issue.record("a miss waits for a fetch")
            return
        }
        var result: Result<Identity, GatewayError>?
        fetched.assumeIsolated().whenSuccess { result = $0 }
        fixture.eventLoop.run()
        guard case .failure(let error) = result else {
            Issue.record("no endpoint: no profile")
            return
        }
        #expect(error == .authServiceUnavailable)
    }

    @Test("a fetch's result: the profile joins the identity; 401 refuses; unavailable is 503")
    func adopt() throws {
        let fixture = try AuthStepFixture()
        let identity = try fixture.identity(TestKeys.token())
        guard case .success(let adopted) = ProfileLookup.adopt(.profile(["user_name": "ann"]), into: identity) else {
            Issue.record("a profile is adopted")
            return
        }
        #expect(adopted.profile?["user_name"] == "ann")
        guard case .failure(let unauthorized) = ProfileLookup.adopt(.unauthorized, into: identity),
            case .failure(let unavailable) = ProfileLookup.adopt(.unavailable, into: identity)
        else {
            Issue.record("no profile: refused")
            return
        }
        #expect(unauthorized == .profileRejected)
        #expect(unavailable == .authServiceUnavailable)
    }
}
