import Testing

import AuthGatewayTesting
@testable import AuthGateway

@Suite("RequirementCheck")
struct RequirementCheckTests {
    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    private func require(
        _ name: String, _ expected: JSONValue, source: IdentityValuePath.Source = .claims
    )
        -> RouteConfiguration
    {
        self.fixture.route(require: [
            Requirement(path: IdentityValuePath(source: source, name: name), expected: expected)
        ])
    }

    @Test("a claim that does not hold is forbidden, naming the requirement; one that holds passes")
    func claims() throws {
        let identity = try self.fixture.identity(TestKeys.token(extra: ["roles": ["reader"]]))
        guard
            case .rejected(let error, _) = RequirementCheck.check(
                identity, request: self.fixture.request([], route: self.require("roles", "admin")))
        else {
            Issue.record("a missing role is forbidden")
            return
        }
        #expect(error == .forbidden("claims.roles"))
        guard
            case .authenticated = RequirementCheck.check(
                identity, request: self.fixture.request([], route: self.require("roles", "reader")))
        else {
            Issue.record("a present role passes")
            return
        }
    }

    @Test("a refusal keeps the identity's response headers (tokens a refresh already rotated)")
    func refusalKeepsResponseHeaders() throws {
        var identity = try self.fixture.identity(TestKeys.token())
        identity.responseHeaders = [("X-Access-Token", "new")]
        guard
            case .rejected(_, let headers) = RequirementCheck.check(
                identity, request: self.fixture.request([], route: self.require("missing", true)))
        else {
            Issue.record("a missing claim is forbidden")
            return
        }
        #expect(headers.map(\.value) == ["new"])
    }

    @Test("profile values and the DPoP thumbprint are requirements too")
    func profileAndDPoP() throws {
        var identity = try self.fixture.identity(TestKeys.token())
        identity.profile = ["super_admin": true]
        identity.dpopThumbprint = "jkt-1"
        let both = self.fixture.route(require: [
            Requirement(path: IdentityValuePath(source: .profile, name: "super_admin"), expected: true),
            Requirement(path: IdentityValuePath(source: .dpop, name: "jkt"), expected: "jkt-1"),
        ])
        guard case .authenticated = RequirementCheck.check(identity, request: self.fixture.request([], route: both))
        else {
            Issue.record("both hold")
            return
        }
        identity.dpopThumbprint = nil
        guard
            case .rejected(let error, _) = RequirementCheck.check(
                identity, request: self.fixture.request([], route: both))
        else {
            Issue.record("no proof: dpop.jkt does not hold")
            return
        }
        #expect(error == .forbidden("dpop.jkt"))
    }
}
