import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The one lookup requirements, identity headers and rate limits share.
@Suite("IdentityFields")
struct IdentityFieldsTests {
    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    @Test("claims (dotted paths too), profile and dpop.jkt come from the identity")
    func identityValues() throws {
        var identity = try self.fixture.identity(TestKeys.token(extra: ["realm_access": ["roles": ["admin"]]]))
        identity.profile = ["tenant": "acme"]
        identity.dpopThumbprint = "jkt-9"
        let fields = IdentityFields(identity: identity, request: self.fixture.request([]))
        #expect(fields.value(IdentityValuePath(source: .claims, name: "sub")) == "user-42")
        #expect(fields.value(IdentityValuePath(source: .claims, name: "realm_access.roles")) == ["admin"])
        #expect(fields.value(IdentityValuePath(source: .profile, name: "tenant")) == "acme")
        #expect(fields.value(IdentityValuePath(source: .dpop, name: "jkt")) == "jkt-9")
        #expect(fields.claim("sub") == "user-42")
        #expect(fields.profileValue("tenant") == "acme")
        #expect(fields.value(IdentityValuePath(source: .claims, name: "missing")) == nil)
    }

    @Test("an anonymous request has no identity values but has a client address")
    func anonymous() {
        let fields = IdentityFields(identity: nil, request: self.fixture.request([], peer: "198.51.100.7"))
        #expect(fields.value(IdentityValuePath(source: .claims, name: "sub")) == nil)
        #expect(fields.value(IdentityValuePath(source: .profile, name: "tenant")) == nil)
        #expect(fields.value(.clientIP) == "198.51.100.7")
    }

    @Test("client.ip believes X-Forwarded-For only from a trusted proxy")
    func clientAddress() throws {
        let trusted = [try #require(CIDR(parsing: "10.0.0.0/8"))]
        let forwarded = [("X-Forwarded-For", "203.0.113.5")]
        let viaProxy = IdentityFields(
            identity: nil, request: self.fixture.request(forwarded, peer: "10.1.2.3", trustedProxies: trusted))
        #expect(viaProxy.value(.clientIP) == "203.0.113.5")
        let direct = IdentityFields(
            identity: nil, request: self.fixture.request(forwarded, peer: "192.0.2.8", trustedProxies: trusted))
        #expect(direct.value(.clientIP) == "192.0.2.8")
    }

    @Test("client.ip parses as a path; identity headers and require do not accept it (yet)")
    func parsing() throws {
        #expect(IdentityValuePath(parsing: "client.ip") == .clientIP)
        #expect(IdentityValuePath(parsing: "client.port") == nil)
        #expect(RateLimitConfiguration.Key(parsing: "client.ip") == .clientIP)
        #expect(throws: (any Error).self) { try AuthStepFixture(extra: #""identityHeaders":{"X-Ip":"client.ip"}"#) }
        #expect(throws: (any Error).self) {
            try AuthStepFixture(routes: #"[{"name":"d","pathPrefix":"/","backend":"api","require":{"client.ip":"x"}}]"#)
        }
    }
}
