import Testing

@testable import AuthGateway

/// Reading `require` (docs/policies.md): the tree with its JSON paths, and every malformed
/// requirement as a configuration error at its path.
@Suite("Requirement parsing")
struct RequirementParsingTests {
    /// A configuration whose second route has `require` (`routes[1].require`).
    private func document(_ require: JSONValue, auth: String = "required") -> String {
        let route: JSONValue = [
            "name": "guarded", "pathPrefix": "/admin/", "backend": "api", "auth": .string(auth), "require": require,
        ]
        return """
            {
              "listener": { "port": 8080 },
              "tokens": { "issuers": [ { "issuer": "https://issuer.test", "jwksURL": "http://127.0.0.1:9000/jwks" } ] },
              "authService": { "url": "http://127.0.0.1:9000", "profile": {} },
              "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": [ { "name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "none" }, \(route.jsonText) ]
            }
            """
    }

    private func load(_ require: JSONValue) -> Result<GatewayConfiguration, ConfigurationError> {
        do throws(ConfigurationError) {
            return .success(
                try ConfigurationLoader(environment: [:]).load(text: self.document(require), baseDirectory: "/"))
        } catch {
            return .failure(error)
        }
    }

    private func issues(_ require: JSONValue) -> [ConfigurationError.Issue] {
        if case .failure(let error) = self.load(require) { return error.issues }
        return []
    }

    /// Exactly one issue, at `path`, whose message contains `message`.
    private func expectIssue(
        _ require: JSONValue, at path: String, contains message: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let found = self.issues(require)
        #expect(found.count == 1, "issues: \(found)", sourceLocation: sourceLocation)
        #expect(found.first?.path == path, "issues: \(found)", sourceLocation: sourceLocation)
        #expect(found.first?.message.contains(message) == true, "issues: \(found)", sourceLocation: sourceLocation)
    }

    // MARK: The tree

    @Test("the flat form: one field clause per member, paths by member name")
    func flatForm() throws {
        let requirement = try self.load(["claims.groups": "admin", "profile.tier": ["in": ["gold"]]]).get().routes[1]
            .require
        #expect(requirement.path == "routes[1].require")
        #expect(
            requirement.clauses.map(\.path) == [
                #"routes[1].require["claims.groups"]"#, #"routes[1].require["profile.tier"]"#,
            ])
        #expect(
            requirement.clauses.map(\.kind) == [
                .field(IdentityValuePath(source: .claims, name: "groups"), .equals("admin")),
                .field(IdentityValuePath(source: .profile, name: "tier"), .oneOf(["gold"])),
            ])
        #expect(requirement.readsProfile)
    }

    @Test("combinators hold requirements; their paths go through the tree")
    func combinators() throws {
        let requirement = try Requirement(
            parsing: [
                "anyOf": [
                    ["claims.groups": "admin"], ["not": ["claims.groups": "contractors"], "request.method": "get"],
                ],
                "allOf": [["client.ip": ["cidr": ["10.0.0.0/8"]]]],
            ],
            path: "routes[2].require")
        guard case .anyOf(let branches) = requirement.clauses[0].kind,
            case .allOf(let parts) = requirement.clauses[1].kind
        else {
            Issue.record("anyOf, then allOf: \(requirement)")
            return
        }
        #expect(requirement.clauses.map(\.path) == ["routes[2].require.anyOf", "routes[2].require.allOf"])
        #expect(branches.map(\.path) == ["routes[2].require.anyOf[0]", "routes[2].require.anyOf[1]"])
        #expect(
            branches[1].clauses.map(\.path) == [
                "routes[2].require.anyOf[1].not", #"routes[2].require.anyOf[1]["request.method"]"#,
            ])
        guard case .not(let negated) = branches[1].clauses[0].kind else {
            Issue.record("not")
            return
        }
        #expect(negated.path == "routes[2].require.anyOf[1].not")
        #expect(negated.clauses.map(\.path) == [#"routes[2].require.anyOf[1].not["claims.groups"]"#])
        // request.method values are upper-cased; client.ip networks are parsed.
        #expect(branches[1].clauses[1].kind == .field(.requestMethod, .equals("GET")))
        #expect(parts[0].clauses[0].kind == .field(.clientIP, .cidr([CIDR(parsing: "10.0.0.0/8")!])))
        #expect(!requirement.readsProfile)
        #expect(
            requirement.fields.map(\.description) == ["claims.groups", "claims.groups", "request.method", "client.ip"])
    }

    @Test("client.ip equality and in are single-address networks")
    func clientAddresses() throws {
        let requirement = try Requirement(parsing: [
            "client.ip": ["in": ["10.0.0.1", "::1"]], "allOf": [["client.ip": "192.0.2.7"]],
        ])
        #expect(
            requirement.clauses[0].kind
                == .field(.clientIP, .cidr([CIDR(parsing: "10.0.0.1")!, CIDR(parsing: "::1")!])))
    }

    @Test("request.header names are HTTP tokens; the source keeps the name as written")
    func headerField() throws {
        let requirement = try Requirement(parsing: ["request.header.X-Tenant": "acme"])
        guard case .field(let field, _) = requirement.clauses[0].kind else {
            Issue.record("a field")
            return
        }
        #expect(field.source == .request)
        #expect(field.requestHeaderName == "X-Tenant")
        #expect(field.description == "request.header.X-Tenant")
    }

    @Test("an empty require is no requirement, as it always was")
    func emptyTopLevel() throws {
        let requirement = try self.load([:]).get().routes[1].require
        #expect(requirement.isEmpty)
    }

    @Test("an object as the expected value needs equals; without it the keys are operators")
    func objectValues() throws {
        let requirement = try Requirement(parsing: ["claims.address": ["equals": ["country": "DE"]]])
        #expect(
            requirement.clauses[0].kind
                == .field(IdentityValuePath(source: .claims, name: "address"), .equals(["country": "DE"])))
        self.expectIssue(
            ["claims.address": ["country": "DE"]], at: #"routes[1].require["claims.address"].country"#,
            contains: "unknown operator \"country\"")
    }

    // MARK: Errors, each at its path

    @Test("unknown fields and sources")
    func unknownFields() {
        for key in [
            "sub", "token.sub", "request.body", "request.header.", "request.header.bad name", "client.port", "dpop.x",
            "claims.",
        ] {
            let path = key == "sub" ? "routes[1].require.sub" : "routes[1].require[\(JSONValue.string(key).jsonText)]"
            self.expectIssue([key: "x"], at: path, contains: "claims.<name>")
        }
        self.expectIssue(
            ["oneOf": [["claims.a": 1]]], at: "routes[1].require.oneOf", contains: "\"anyOf\", \"allOf\", \"not\"")
    }

    @Test("unknown operators, and matcher objects with other than one operator")
    func operators() {
        self.expectIssue(
            ["claims.x": ["prefx": "a"]], at: #"routes[1].require["claims.x"].prefx"#,
            contains: "unknown operator \"prefx\"")
        self.expectIssue(
            ["claims.x": ["prefix": "a", "suffix": "b"]], at: #"routes[1].require["claims.x"]"#,
            contains: "exactly one operator")
        self.expectIssue(["claims.x": [:]], at: #"routes[1].require["claims.x"]"#, contains: "exactly one operator")
    }

    @Test("empty or malformed anyOf and allOf")
    func combinatorShapes() {
        self.expectIssue(["anyOf": []], at: "routes[1].require.anyOf", contains: "at least one requirement")
        self.expectIssue(["allOf": []], at: "routes[1].require.allOf", contains: "at least one requirement")
        self.expectIssue(
            ["anyOf": ["claims.x": 1]], at: "routes[1].require.anyOf", contains: "expected an array of requirements")
        self.expectIssue(
            ["anyOf": [["claims.x": 1], "claims.y"]], at: "routes[1].require.anyOf[1]", contains: "found string")
        self.expectIssue(["allOf": [[:]]], at: "routes[1].require.allOf[0]", contains: "empty requirement")
    }

    @Test("not takes one requirement object")
    func notShapes() {
        self.expectIssue(
            ["not": [["claims.x": 1]]], at: "routes[1].require.not",
            contains: "expected a requirement (an object), found array")
        self.expectIssue(["not": "claims.x"], at: "routes[1].require.not", contains: "found string")
        self.expectIssue(["not": [:]], at: "routes[1].require.not", contains: "empty requirement")
        self.expectIssue(
            ["not": ["claims.x": ["in": 1]]], at: #"routes[1].require.not["claims.x"].in"#,
            contains: "expected an array")
    }

    @Test("a require that is not an object")
    func notAnObject() {
        self.expectIssue(["claims.x"], at: "routes[1].require", contains: "found array")
    }

    @Test("matchers on the wrong kind of field or with the wrong argument")
    func wrongKinds() {
        self.expectIssue(
            ["claims.ip": ["cidr": ["10.0.0.0/8"]]], at: #"routes[1].require["claims.ip"].cidr"#,
            contains: "only to client.ip")
        self.expectIssue(
            ["request.method": ["cidr": ["10.0.0.0/8"]]], at: #"routes[1].require["request.method"].cidr"#,
            contains: "only to client.ip")
        self.expectIssue(
            ["client.ip": ["cidr": ["10.0.0.0/8", "10.0.0.0/33"]]], at: #"routes[1].require["client.ip"].cidr[1]"#,
            contains: "not an IP address or network")
        self.expectIssue(
            ["client.ip": ["cidr": []]], at: #"routes[1].require["client.ip"].cidr"#, contains: "non-empty array")
        self.expectIssue(["client.ip": "x"], at: #"routes[1].require["client.ip"]"#, contains: "not an IP address")
        self.expectIssue(["client.ip": "10.0.0.0/8"], at: #"routes[1].require["client.ip"]"#, contains: "cidr")
        self.expectIssue(
            ["client.ip": ["in": ["10.0.0.1", 7]]], at: #"routes[1].require["client.ip"].in[1]"#,
            contains: "expected a string")
        self.expectIssue(
            ["claims.x": ["prefix": 1]], at: #"routes[1].require["claims.x"].prefix"#,
            contains: "expected a string, found number")
        self.expectIssue(
            ["claims.x": ["suffix": ["a"]]], at: #"routes[1].require["claims.x"].suffix"#,
            contains: "expected a string, found array")
        self.expectIssue(
            ["claims.x": ["prefix": ""]], at: #"routes[1].require["claims.x"].prefix"#, contains: "must not be empty")
        self.expectIssue(
            ["claims.x": ["exists": "yes"]], at: #"routes[1].require["claims.x"].exists"#, contains: "true or false")
        self.expectIssue(
            ["claims.x": ["in": []]], at: #"routes[1].require["claims.x"].in"#, contains: "at least one value")
        self.expectIssue(
            ["request.method": 1], at: #"routes[1].require["request.method"]"#, contains: "request.method is a string")
        self.expectIssue(
            ["request.method": "G ET"], at: #"routes[1].require["request.method"]"#, contains: "not a valid method")
        self.expectIssue(
            ["request.header.x-a": true], at: #"routes[1].require["request.header.x-a"]"#, contains: "is a string")
        self.expectIssue(
            ["request.header.x-a": ["in": ["a", nil]]], at: #"routes[1].require["request.header.x-a"].in[1]"#,
            contains: "found null")
    }

    @Test("every problem of a tree is reported at once")
    func allProblemsAtOnce() {
        let found = self.issues([
            "claims.x": ["prefx": "a"], "anyOf": [], "not": ["claims.y": ["cidr": ["10.0.0.0/8"]]], "bad": 1,
        ])
        #expect(
            found.map(\.path) == [
                #"routes[1].require["claims.x"].prefx"#, "routes[1].require.anyOf",
                #"routes[1].require.not["claims.y"].cidr"#,
                "routes[1].require.bad",
            ], "issues: \(found)")
    }

    @Test("identity headers and rate-limit keys refuse request fields")
    func requestFieldsElsewhere() throws {
        for field in ["request.method", "request.header.x-tenant"] {
            let text = self.document([:]).replacingOccurrences(
                of: #""listener""#, with: #""identityHeaders": {"X-A": "\#(field)"}, "listener""#)
            #expect(throws: ConfigurationError.self) {
                try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
            }
            #expect(RateLimitConfiguration.Key(parsing: field) == nil)
        }
    }

    // MARK: Paths

    @Test("member paths: identifiers after a dot, anything else quoted in brackets")
    func memberPaths() {
        #expect(RequirementPath.member("r", "anyOf") == "r.anyOf")
        #expect(RequirementPath.member("r", "sub_2") == "r.sub_2")
        #expect(RequirementPath.member("r", "claims.groups") == #"r["claims.groups"]"#)
        #expect(RequirementPath.member("r", "2x") == #"r["2x"]"#)
        #expect(RequirementPath.member("r", "") == #"r[""]"#)
        #expect(RequirementPath.member("r", #"a"b"#) == #"r["a\"b"]"#)
        #expect(RequirementPath.element("r.anyOf", 3) == "r.anyOf[3]")
    }
}
