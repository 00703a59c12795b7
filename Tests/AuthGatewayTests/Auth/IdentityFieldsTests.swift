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

    @Test("client.ip parses as a path; identity headers refuse it, require takes it only as an address")
    func parsing() throws {
        #expect(IdentityValuePath(parsing: "client.ip") == .clientIP)
        #expect(IdentityValuePath(parsing: "client.port") == nil)
        #expect(RateLimitConfiguration.Key(parsing: "client.ip") == .clientIP)
        #expect(throws: (any Error).self) { try AuthStepFixture(extra: #""identityHeaders":{"X-Ip":"client.ip"}"#) }
        #expect(throws: (any Error).self) {
            try AuthStepFixture(routes: #"[{"name":"d","pathPrefix":"/","backend":"api","require":{"client.ip":"x"}}]"#)
        }
        _ = try AuthStepFixture(
            routes: #"[{"name":"d","pathPrefix":"/","backend":"api","require":{"client.ip":"192.0.2.1"}}]"#)
    }

    @Test("request.method, .host, .path and .header.<name> parse as paths; nothing else under request")
    func requestPaths() {
        #expect(IdentityValuePath(parsing: "request.method") == .requestMethod)
        let header = IdentityValuePath(parsing: "request.header.X-Tenant")
        #expect(header?.requestHeaderName == "X-Tenant")
        #expect(header?.description == "request.header.X-Tenant")
        #expect(IdentityValuePath(parsing: "request.header.x.y")?.requestHeaderName == "x.y")
        #expect(IdentityValuePath(parsing: "request.host")?.name == "host")
        #expect(IdentityValuePath(parsing: "request.path")?.requestHeaderName == nil)
        for text in ["request.query", "request.header.", "request.header.a b", "request.method.x", "request.Method"] {
            #expect(IdentityValuePath(parsing: text) == nil, "\(text)")
        }
        #expect(IdentityValuePath.requestMethod.requestHeaderName == nil)
        #expect(IdentityValuePath(source: .claims, name: "x").requestHeaderName == nil)
    }

    @Test("request.method is the method as sent; a header is its first line, or every line for requirements")
    func requestValues() throws {
        var request = self.fixture.request([("X-Tenant", "acme"), ("Accept", "*/*"), ("x-tenant", "other")])
        request.method = .PATCH
        let fields = IdentityFields(identity: nil, request: request)
        #expect(fields.value(.requestMethod) == "PATCH")
        let tenant = try #require(IdentityValuePath(parsing: "request.header.X-TENANT"))
        #expect(fields.value(tenant) == "acme")
        guard case .headerLines(let lines) = fields.reading(tenant) else {
            Issue.record("a header reads as its lines")
            return
        }
        #expect(Array(lines) == ["acme", "other"])
        #expect(!lines.isEmpty)
        let missing = try #require(IdentityValuePath(parsing: "request.header.x-missing"))
        #expect(fields.value(missing) == nil)
        guard case .headerLines(let none) = fields.reading(missing) else {
            Issue.record("a missing header reads as no lines")
            return
        }
        #expect(none.isEmpty)
        guard case .absent = fields.reading(IdentityValuePath(source: .claims, name: "sub")) else {
            Issue.record("no identity: absent")
            return
        }
    }

    @Test("dotted names are cut once: the member with the whole name first, then the walk")
    func segments() throws {
        let path = IdentityValuePath(source: .claims, name: "realm_access.roles")
        #expect(path.segments == ["realm_access", "roles"])
        #expect(IdentityValuePath(source: .claims, name: "sub").segments.isEmpty)
        #expect(path.readsAsList == false)
        #expect(IdentityValuePath(source: .claims, name: "scp").readsAsList)
        #expect(IdentityValuePath(source: .profile, name: "scope").readsAsList)
        let identity = try self.fixture.identity(
            TestKeys.token(extra: ["realm_access.roles": "direct", "realm_access": ["roles": ["walked"]]]))
        let fields = IdentityFields(identity: identity, request: self.fixture.request([]))
        #expect(fields.value(path) == "direct")
    }
}
