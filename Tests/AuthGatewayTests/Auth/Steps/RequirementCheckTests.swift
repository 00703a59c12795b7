import NIOHTTP1
import Testing

import AuthGatewayTesting
@testable import AuthGateway

@Suite("RequirementCheck")
struct RequirementCheckTests {
    let fixture: AuthStepFixture

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    private func route(_ require: JSONValue) throws -> RouteConfiguration {
        self.fixture.route(require: try AuthStepFixture.requirement(require))
    }

    @Test("a claim that does not hold is forbidden, naming the requirement; one that holds passes")
    func claims() throws {
        let identity = try self.fixture.identity(TestKeys.token(extra: ["roles": ["reader"]]))
        guard
            case .rejected(let error, _) = RequirementCheck.check(
                identity, request: self.fixture.request([], route: try self.route(["claims.roles": "admin"])))
        else {
            Issue.record("a missing role is forbidden")
            return
        }
        #expect(error == .forbidden(#"routes[0].require["claims.roles"]"#))
        guard
            case .authenticated = RequirementCheck.check(
                identity, request: self.fixture.request([], route: try self.route(["claims.roles": "reader"])))
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
                identity, request: self.fixture.request([], route: try self.route(["claims.missing": true])))
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
        let both = try self.route(["profile.super_admin": true, "dpop.jkt": "jkt-1"])
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
        #expect(error == .forbidden(#"routes[0].require["dpop.jkt"]"#))
    }

    @Test("a route without require lets every identity through")
    func emptyRequirement() throws {
        let identity = try self.fixture.identity(TestKeys.token())
        guard case .authenticated = RequirementCheck.check(identity, request: self.fixture.request([])) else {
            Issue.record("no requirement: authenticated")
            return
        }
        #expect(RequirementCheck.evaluate(try AuthStepFixture.requirement([:]), self.fields()) == .holds)
    }

    // MARK: Matchers

    /// Fields for a synthetic identity: no token signing, so the cases stay fast.
    func fields(
        claims: JSONObject = [:], profile: JSONObject? = nil, headers: [(String, String)] = [],
        method: HTTPMethod = .GET, peer: String = "192.0.2.1"
    ) -> IdentityFields {
        let token = VerifiedToken(
            issuerIndex: 0, generation: 0, claims: claims, subject: claims["sub"]?.stringValue,
            expiresAt: 4_102_444_800, notBefore: nil, issuedAt: nil, leewaySeconds: 0)
        var identity = Identity(token: token, accessToken: self.fixture.bearer("t"), issuer: TestKeys.issuer)
        identity.profile = profile
        var request = self.fixture.request(headers, peer: peer)
        request.method = method
        return IdentityFields(identity: identity, request: request)
    }

    private func holds(_ require: JSONValue, _ fields: IdentityFields) throws -> Bool {
        RequirementCheck.evaluate(try AuthStepFixture.requirement(require), fields) == .holds
    }

    @Test("equality: equal values, an array containing the value, 64-bit ids exactly")
    func equality() throws {
        let fields = self.fields(claims: [
            "role": "admin", "groups": ["eng", "ops"], "n": 3, "flag": true,
            "id": try JSONValue(parsing: "1234567890123456789"),
            "nothing": .null, "obj": ["k": "v"],
        ])
        #expect(try self.holds(["claims.role": "admin"], fields))
        #expect(try !self.holds(["claims.role": "Admin"], fields))
        #expect(try self.holds(["claims.groups": "ops"], fields))
        #expect(try self.holds(["claims.groups": ["eng", "ops"]], fields))
        #expect(try !self.holds(["claims.groups": "dev"], fields))
        #expect(try self.holds(["claims.n": 3], fields))
        #expect(try !self.holds(["claims.n": "3"], fields))
        #expect(try self.holds(["claims.flag": true], fields))
        #expect(try self.holds(["claims.id": try JSONValue(parsing: "1234567890123456789")], fields))
        #expect(try !self.holds(["claims.id": try JSONValue(parsing: "1234567890123456788")], fields))
        #expect(try self.holds(["claims.nothing": nil], fields))
        #expect(try !self.holds(["claims.absent": nil], fields))
        #expect(try self.holds(["claims.obj": ["equals": ["k": "v"]]], fields))
        #expect(try self.holds(["claims.obj.k": "v"], fields))
    }

    @Test("in: one of the values, with the array and scope-list rules of equality")
    func inOperator() throws {
        let fields = self.fields(claims: ["role": "ops", "groups": ["eng"], "scope": "read write"])
        #expect(try self.holds(["claims.role": ["in": ["admin", "ops"]]], fields))
        #expect(try !self.holds(["claims.role": ["in": ["admin", "dev"]]], fields))
        #expect(try self.holds(["claims.groups": ["in": ["ops", "eng"]]], fields))
        #expect(try self.holds(["claims.scope": ["in": ["admin", "write"]]], fields))
        #expect(try !self.holds(["claims.missing": ["in": ["x"]]], fields))
    }

    @Test("prefix and suffix: the string, an element of an array, a word of a scope list")
    func prefixSuffix() throws {
        let fields = self.fields(claims: [
            "email": "ann@example.com", "groups": ["team-a", "org-b"], "scope": "orders:read profile", "n": 42,
        ])
        #expect(try self.holds(["claims.email": ["suffix": "@example.com"]], fields))
        #expect(try !self.holds(["claims.email": ["suffix": "@example.org"]], fields))
        #expect(try self.holds(["claims.email": ["prefix": "ann@"]], fields))
        #expect(try self.holds(["claims.groups": ["prefix": "org-"]], fields))
        #expect(try !self.holds(["claims.groups": ["prefix": "eng-"]], fields))
        #expect(try self.holds(["claims.scope": ["prefix": "profile"]], fields))
        #expect(try self.holds(["claims.scope": ["suffix": ":read"]], fields))
        #expect(try !self.holds(["claims.n": ["prefix": "4"]], fields), "a number is not a string")
        #expect(try !self.holds(["claims.missing": ["prefix": "a"]], fields))
    }

    @Test("exists: present and not null; exists false holds for a missing or null field")
    func exists() throws {
        let fields = self.fields(claims: ["email": "a@b", "nothing": .null, "empty": ""])
        #expect(try self.holds(["claims.email": ["exists": true]], fields))
        #expect(try self.holds(["claims.empty": ["exists": true]], fields))
        #expect(try !self.holds(["claims.email": ["exists": false]], fields))
        #expect(try self.holds(["claims.missing": ["exists": false]], fields))
        #expect(try self.holds(["claims.nothing": ["exists": false]], fields))
        #expect(try !self.holds(["claims.nothing": ["exists": true]], fields))
        #expect(try self.holds(["profile.tenant": ["exists": false]], fields), "no profile: nothing exists")
    }

    @Test("scope and scp strings read as space-separated lists, for every operator; other claims do not")
    func scopeLists() throws {
        let fields = self.fields(
            claims: ["scope": "read  write", "scp": "orders:read orders:write", "roles": "read write"],
            profile: ["scope": "a b"])
        #expect(try self.holds(["claims.scope": "write"], fields))
        #expect(try self.holds(["claims.scope": "read  write"], fields), "the whole string still equals")
        #expect(try self.holds(["claims.scp": "orders:write"], fields))
        #expect(try !self.holds(["claims.scp": "orders"], fields))
        #expect(try self.holds(["claims.scp": ["in": ["x", "orders:read"]]], fields))
        #expect(try self.holds(["claims.scp": ["suffix": ":write"]], fields))
        #expect(try !self.holds(["claims.roles": "write"], fields))
        #expect(try self.holds(["profile.scope": "b"], fields))
        // An array scp (some issuers send one) is an array: its elements.
        #expect(try self.holds(["claims.scp": "b"], self.fields(claims: ["scp": ["a", "b"]])))
    }

    @Test("dotted claim paths walk nested objects; a member whose name holds the dots wins")
    func dottedPaths() throws {
        let fields = self.fields(claims: [
            "realm_access": ["roles": ["orders-admin"]], "a.b": "direct", "a": ["b": "walked"],
        ])
        #expect(try self.holds(["claims.realm_access.roles": "orders-admin"], fields))
        #expect(try self.holds(["claims.a.b": "direct"], fields))
        #expect(try !self.holds(["claims.a.b": "walked"], fields))
        #expect(try !self.holds(["claims.realm_access.missing": ["exists": true]], fields))
    }

    @Test("request.method: the method as sent; the configuration's values are upper-cased")
    func requestMethod() throws {
        #expect(try self.holds(["request.method": "GET"], self.fields(method: .GET)))
        #expect(try self.holds(["request.method": "get"], self.fields(method: .GET)))
        #expect(try !self.holds(["request.method": "GET"], self.fields(method: .POST)))
        #expect(try self.holds(["request.method": ["in": ["PUT", "POST"]]], self.fields(method: .POST)))
        #expect(try self.holds(["request.method": ["in": ["PUT", "POST"]]], self.fields(method: .PUT)))
        #expect(try !self.holds(["request.method": ["in": ["PUT", "POST"]]], self.fields(method: .DELETE)))
    }

    @Test("request.header: case-insensitive name; several lines are a list, any line may match")
    func requestHeader() throws {
        let one = self.fields(headers: [("X-Tenant", "acme")])
        #expect(try self.holds(["request.header.x-tenant": "acme"], one))
        #expect(try self.holds(["request.header.X-TENANT": ["prefix": "ac"]], one))
        #expect(try !self.holds(["request.header.x-tenant": "ACME"], one), "values are compared exactly")
        #expect(try self.holds(["request.header.x-tenant": ["exists": true]], one))
        #expect(try self.holds(["request.header.x-other": ["exists": false]], one))
        #expect(try !self.holds(["request.header.x-other": "acme"], one))
        let two = self.fields(headers: [("X-Tenant", "acme"), ("Accept", "*/*"), ("x-tenant", "evil")])
        #expect(try self.holds(["request.header.x-tenant": "evil"], two))
        #expect(try self.holds(["request.header.x-tenant": ["in": ["evil", "other"]]], two))
        #expect(try self.holds(["request.header.x-tenant": ["suffix": "vil"]], two))
        #expect(try !self.holds(["not": ["request.header.x-tenant": "evil"]], two), "not: no line may match")
        #expect(try self.holds(["not": ["request.header.x-tenant": "evil"]], one))
    }

    @Test("client.ip: cidr, single addresses and in, IPv4-mapped IPv6 as IPv4")
    func clientIP() throws {
        let inside = self.fields(peer: "10.1.2.3")
        #expect(try self.holds(["client.ip": ["cidr": ["192.168.0.0/16", "10.0.0.0/8"]]], inside))
        #expect(try !self.holds(["client.ip": ["cidr": ["192.168.0.0/16"]]], inside))
        #expect(try self.holds(["client.ip": "10.1.2.3"], inside))
        #expect(try !self.holds(["client.ip": "10.1.2.4"], inside))
        #expect(try self.holds(["client.ip": ["in": ["10.1.2.4", "10.1.2.3"]]], inside))
        #expect(try self.holds(["client.ip": ["cidr": ["10.0.0.0/8"]]], self.fields(peer: "::ffff:10.9.9.9")))
        #expect(try self.holds(["client.ip": ["cidr": ["fd00::/8"]]], self.fields(peer: "fd12::1")))
        #expect(try !self.holds(["client.ip": ["cidr": ["fd00::/8"]]], self.fields(peer: "fe80::1")))
        #expect(try self.holds(["client.ip": "::1"], self.fields(peer: "0:0:0:0:0:0:0:1")))
        #expect(try self.holds(["client.ip": ["prefix": "10.1."]], inside))
    }

    @Test("client.ip behind a trusted proxy is the first untrusted X-Forwarded-For hop")
    func clientIPBehindProxy() throws {
        let trusted = [try #require(CIDR(parsing: "10.0.0.0/8"))]
        var request = self.fixture.request(
            [("X-Forwarded-For", "203.0.113.9, 10.0.0.7")], peer: "10.0.0.1", trustedProxies: trusted)
        request.method = .GET
        let fields = IdentityFields(identity: try self.fixture.identity(TestKeys.token()), request: request)
        #expect(try self.holds(["client.ip": ["cidr": ["203.0.113.0/24"]]], fields))
        #expect(try !self.holds(["client.ip": ["cidr": ["10.0.0.0/8"]]], fields))
    }

    // MARK: Combinators and the failing clause

    private func verdict(_ require: JSONValue, _ fields: IdentityFields) throws -> RequirementVerdict {
        RequirementCheck.evaluate(try AuthStepFixture.requirement(require), fields)
    }

    @Test("anyOf: one branch holding is enough; all failing names the anyOf")
    func anyOf() throws {
        let fields = self.fields(claims: ["groups": ["ops"], "email": "a@corp"])
        let require: JSONValue = ["anyOf": [["claims.groups": "admin"], ["claims.groups": "ops"]]]
        #expect(try self.verdict(require, fields) == .holds)
        #expect(
            try self.verdict(["anyOf": [["claims.groups": "admin"], ["claims.groups": "dev"]]], fields)
                == .fails(clause: "routes[0].require.anyOf"))
    }

    @Test("allOf and the flat object: the first failing clause, by its path")
    func allOf() throws {
        let fields = self.fields(claims: ["groups": ["ops"], "email": "a@corp"])
        #expect(
            try self.verdict(["allOf": [["claims.groups": "ops"], ["claims.email": ["suffix": "@corp"]]]], fields)
                == .holds)
        #expect(
            try self.verdict(["allOf": [["claims.groups": "ops"], ["claims.email": ["suffix": "@x"]]]], fields)
                == .fails(clause: #"routes[0].require.allOf[1]["claims.email"]"#))
        #expect(
            try self.verdict(["claims.groups": "ops", "claims.email": "b@corp", "claims.sub": "x"], fields)
                == .fails(clause: #"routes[0].require["claims.email"]"#))
    }

    @Test("not: holds when its requirement fails; a refusal names the not")
    func not() throws {
        let fields = self.fields(claims: ["groups": ["ops", "contractors"]])
        #expect(try self.verdict(["not": ["claims.groups": "banned"]], fields) == .holds)
        #expect(
            try self.verdict(["not": ["claims.groups": "contractors"]], fields)
                == .fails(clause: "routes[0].require.not"))
        // A not of several clauses: not (all of them).
        #expect(try self.verdict(["not": ["claims.groups": "ops", "claims.x": 1]], fields) == .holds)
    }

    @Test("nested: the path goes through every level down to the failing clause")
    func nested() throws {
        let fields = self.fields(claims: ["groups": ["ops"], "tier": "gold"], method: .POST)
        let require: JSONValue = [
            "claims.groups": "ops",
            "allOf": [
                ["anyOf": [["request.method": "GET"], ["claims.tier": "gold"]]],
                ["not": ["claims.groups": "banned"]],
                [
                    "allOf": [
                        ["claims.tier": ["in": ["gold", "silver"]]], ["request.method": ["in": ["GET", "HEAD"]]],
                    ]
                ],
            ],
        ]
        #expect(
            try self.verdict(require, fields)
                == .fails(clause: #"routes[0].require.allOf[2].allOf[1]["request.method"]"#))
        #expect(try self.verdict(require, self.fields(claims: ["groups": ["ops"], "tier": "gold"])) == .holds)
        #expect(
            try self.verdict(require, self.fields(claims: ["groups": ["ops"], "tier": "bronze"], method: .POST))
                == .fails(clause: "routes[0].require.allOf[0].anyOf"))
    }

    @Test("a refusal never carries a claim's value")
    func refusalCarriesNoValue() throws {
        let identity = try self.fixture.identity(TestKeys.token(extra: ["groups": ["secret-group-name"]]))
        let route = try self.route(["anyOf": [["claims.groups": "admin"], ["claims.groups": ["prefix": "ops-"]]]])
        guard
            case .rejected(let error, _) = RequirementCheck.check(
                identity, request: self.fixture.request([], route: route))
        else {
            Issue.record("refused")
            return
        }
        #expect(error.detail == "The request does not satisfy the route requirement routes[0].require.anyOf")
        #expect(!error.detail.contains("secret-group-name"))
        #expect(error.wwwAuthenticate?.contains("secret-group-name") == false)
    }

    // MARK: Explain

    @Test("explain: the same verdict, each clause with its path, depth and result, in tree order")
    func explain() throws {
        let fields = self.fields(claims: ["groups": ["ops"], "tier": "gold"], method: .POST)
        let requirement = try AuthStepFixture.requirement([
            "claims.groups": "ops",
            "anyOf": [["claims.tier": "silver"], ["claims.tier": "gold"], ["claims.x": 1]],
            "not": ["request.method": "DELETE"],
            "claims.sub": ["exists": true],
            "claims.y": 2,
        ])
        let explanation = RequirementCheck.explain(requirement, fields)
        #expect(explanation.verdict == RequirementCheck.evaluate(requirement, fields))
        #expect(explanation.verdict == .fails(clause: #"routes[0].require["claims.sub"]"#))
        let lines = explanation.entries.map { "\(String(repeating: "  ", count: $0.depth))\($0.path) \($0.result)" }
        #expect(
            lines == [
                "routes[0].require fails",
                #"  routes[0].require["claims.groups"] holds"#,
                "  routes[0].require.anyOf holds",
                "    routes[0].require.anyOf[0] fails",
                #"      routes[0].require.anyOf[0]["claims.tier"] fails"#,
                "    routes[0].require.anyOf[1] holds",
                #"      routes[0].require.anyOf[1]["claims.tier"] holds"#,
                "    routes[0].require.anyOf[2] notReached",
                #"      routes[0].require.anyOf[2]["claims.x"] notReached"#,
                "  routes[0].require.not holds",
                #"    routes[0].require.not["request.method"] fails"#,
                #"  routes[0].require["claims.sub"] fails"#,
                #"  routes[0].require["claims.y"] notReached"#,
            ])
        #expect(explanation.entries[1].summary == #"claims.groups: "ops""#)
        #expect(explanation.entries[2].summary == "anyOf (3 requirements)")
        #expect(explanation.entries[11].summary == #"claims.sub: {"exists":true}"#)
    }

    @Test("explain of an empty requirement: one line that holds")
    func explainEmpty() {
        let explanation = RequirementCheck.explain(.empty, self.fields())
        #expect(explanation.verdict == .holds)
        #expect(explanation.entries.map(\.result) == [.holds])
    }
}
