import Foundation
import Logging
import Testing

@testable import AuthGateway

/// A valid configuration that uses every section without needing files (keys come from a
/// `jwksURL`), used as the base that the validation tests break one value at a time.
private let fullConfiguration = #"""
    {
      "listener": { "host": "127.0.0.1", "port": 8080 },
      "admin": { "port": 9901 },
      "tokens": {
        "issuers": [
          { "issuer": "https://issuer.test", "audiences": ["api"], "jwksURL": "http://127.0.0.1:9000/jwks.json", "leewaySeconds": 30 }
        ]
      },
      "authService": { "url": "http://127.0.0.1:9000", "refresh": {}, "profile": {} },
      "backends": {
        "api": { "urls": ["http://127.0.0.1:9100"] },
        "other": { "urls": ["http://127.0.0.1:9200", "http://127.0.0.1:9201"] }
      },
      "routes": [
        { "name": "public", "pathPrefix": "/public/", "backend": "api", "auth": "none" },
        { "name": "admin", "pathPrefix": "/admin/", "backend": "other", "require": { "profile.admin": true } },
        { "name": "default", "pathPrefix": "/", "backend": "api" }
      ],
      "identityHeaders": { "X-User-Subject": "claims.sub" },
      "trustedProxies": ["10.0.0.0/8", "192.168.1.1"]
    }
    """#

/// The smallest valid configuration: only the required sections, no auth anywhere.
private let minimalConfiguration = #"""
    {
      "listener": { "port": 8080 },
      "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
      "routes": [ { "name": "all", "pathPrefix": "/", "backend": "api", "auth": "none" } ]
    }
    """#

/// One step of a JSON path: an object member or an array index.
private enum PathStep {
    case key(String)
    case index(Int)

    static func parse(_ path: String) -> [PathStep] {
        var steps: [PathStep] = []
        for part in path.split(separator: ".") {
            var rest = part[...]
            if let bracket = rest.firstIndex(of: "[") {
                steps.append(.key(String(rest[..<bracket])))
                rest = rest[bracket...]
                while rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                    steps.append(.index(Int(rest[rest.index(after: rest.startIndex)..<close])!))
                    rest = rest[rest.index(after: close)...]
                }
            } else {
                steps.append(.key(String(rest)))
            }
        }
        return steps
    }
}

/// `document` with the value at `path` (e.g. `routes[2].backend`) replaced, or removed when
/// `value` is nil. Intermediate objects are created as needed; an index one past the end appends.
private func setting(_ path: String, to value: JSONValue?, in document: JSONValue) -> JSONValue {
    func apply(_ steps: ArraySlice<PathStep>, _ node: JSONValue?) -> JSONValue? {
        guard let step = steps.first else { return value }
        switch step {
        case .key(let key):
            var object = node?.objectValue ?? JSONObject()
            object[key] = apply(steps.dropFirst(), object[key])
            return .object(object)
        case .index(let index):
            var array = node?.arrayValue ?? []
            let existing = index < array.count ? array[index] : nil
            if let element = apply(steps.dropFirst(), existing) {
                if index < array.count { array[index] = element } else { array.append(element) }
            } else {
                array.remove(at: index)
            }
            return .array(array)
        }
    }
    return apply(ArraySlice(PathStep.parse(path)), document)!
}

private func editing(_ base: String, _ edits: [(String, JSONValue?)]) -> String {
    var document = try! JSONValue(parsing: base)
    for (path, value) in edits { document = setting(path, to: value, in: document) }
    return document.jsonText
}

@Suite("ConfigurationLoader")
struct ConfigurationLoaderTests {
    private func load(
        _ text: String, environment: [String: String] = [:], baseDirectory: String = "/nonexistent-config-dir"
    ) -> Result<GatewayConfiguration, ConfigurationError> {
        do throws(ConfigurationError) {
            return .success(
                try ConfigurationLoader(environment: environment).load(text: text, baseDirectory: baseDirectory))
        } catch {
            return .failure(error)
        }
    }

    private func issues(
        _ text: String, environment: [String: String] = [:], baseDirectory: String = "/nonexistent-config-dir"
    ) -> [ConfigurationError.Issue] {
        switch self.load(text, environment: environment, baseDirectory: baseDirectory) {
        case .success: return []
        case .failure(let error): return error.issues
        }
    }

    private func valid(
        _ text: String, environment: [String: String] = [:], baseDirectory: String = "/nonexistent-config-dir",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> GatewayConfiguration {
        switch self.load(text, environment: environment, baseDirectory: baseDirectory) {
        case .success(let configuration): return configuration
        case .failure(let error):
            Issue.record("unexpected configuration errors:\n\(error)", sourceLocation: sourceLocation)
            throw error
        }
    }

    /// Expects exactly one issue, at `path`, whose message contains `message`.
    private func expectSingleIssue(
        _ text: String, path: String, contains message: String, environment: [String: String] = [:],
        baseDirectory: String = "/nonexistent-config-dir", sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let found = self.issues(text, environment: environment, baseDirectory: baseDirectory)
        #expect(found.count == 1, "issues: \(found)", sourceLocation: sourceLocation)
        #expect(found.first?.path == path, "issues: \(found)", sourceLocation: sourceLocation)
        #expect(found.first?.message.contains(message) == true, "issues: \(found)", sourceLocation: sourceLocation)
    }

    /// Expects an issue at `path` whose message contains `message` (other issues allowed).
    private func expectIssue(
        _ text: String, path: String, contains message: String, environment: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let found = self.issues(text, environment: environment)
        #expect(
            found.contains { $0.path == path && $0.message.contains(message) }, "issues: \(found)",
            sourceLocation: sourceLocation)
    }

    private func keyConfiguration(_ keyEntry: String) -> String {
        """
        {
          "listener": { "port": 8080 },
          "tokens": { "issuers": [ { "issuer": "https://issuer.test", "keys": [ \(keyEntry) ] } ] },
          "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
          "routes": [ { "name": "api", "pathPrefix": "/", "backend": "api" } ]
        }
        """
    }

    private func withTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "auth-gateway-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try body(directory)
    }

    // MARK: Defaults

    @Test("the base configurations of these tests are valid")
    func baseConfigurationsAreValid() throws {
        _ = try self.valid(minimalConfiguration)
        _ = try self.valid(fullConfiguration)
    }

    @Test("a minimal configuration gets the defaults of docs/configuration.md")
    func minimalDefaults() throws {
        let configuration = try self.valid(minimalConfiguration)
        #expect(configuration.listener == ListenerConfiguration(host: "0.0.0.0", port: 8080, tls: nil))
        #expect(configuration.admin == nil)
        #expect(configuration.eventLoopThreads == 0)
        #expect(configuration.limits.maxHeaderBytes == 32768)
        #expect(configuration.limits.maxRequestBodyBytes == 104_857_600)
        #expect(configuration.limits.maxConnections == 20000)
        #expect(configuration.timeouts.requestHeaderSeconds == 10)
        #expect(configuration.timeouts.idleSeconds == 60)
        #expect(configuration.timeouts.drainSeconds == 20)
        #expect(configuration.tokens.verifiedCacheEntries == 100_000)
        #expect(configuration.tokens.issuers.isEmpty)
        #expect(
            configuration.tokens.sources == [
                .header(name: "Authorization", bearer: true, raw: true), .cookie(name: "access_token"),
            ])
        #expect(configuration.authService == nil)
        #expect(configuration.identityHeaders.isEmpty)
        #expect(configuration.stripInboundHeaderPrefixes == ["X-User-", "X-Auth-"])
        #expect(configuration.trustedProxies.isEmpty)
        #expect(configuration.health.path == "/healthz")
        #expect(configuration.health.readyPath == "/readyz")
        #expect(configuration.health.livePath == "/livez")
        #expect(configuration.logging.level == .info)
        #expect(configuration.logging.accessLog == true)
        #expect(configuration.sourcePath == nil)

        let backend = try #require(configuration.backend(named: "api"))
        #expect(backend.urls.map(\.description) == ["http://127.0.0.1:9100"])
        #expect(backend.connectTimeoutMilliseconds == 1000)
        #expect(backend.responseTimeoutMilliseconds == 30000)
        #expect(backend.maxConnectionsPerThread == 128)
        #expect(configuration.backend(named: "missing") == nil)
        #expect(configuration.usesProfiles == false)
    }

    @Test("optional sections given empty get their defaults")
    func sectionDefaults() throws {
        let configuration = try self.valid(fullConfiguration)
        #expect(configuration.admin == ListenerConfiguration(host: "127.0.0.1", port: 9901, tls: nil, http2: false))

        let issuer = try #require(configuration.tokens.issuers.first)
        #expect(issuer.issuer == "https://issuer.test")
        #expect(issuer.audiences == ["api"])
        #expect(issuer.leewaySeconds == 30)
        #expect(issuer.requiredClaims == [])
        #expect(issuer.staticKeys.isEmpty)
        let jwks = try #require(issuer.jwks)
        #expect(jwks.url?.host == "127.0.0.1" && jwks.url?.port == 9000 && jwks.url?.pathAndQuery == "/jwks.json")
        #expect(jwks.refreshSeconds == 300)
        #expect(jwks.minRefetchSeconds == 10)

        let authService = try #require(configuration.authService)
        #expect(authService.url?.description == "http://127.0.0.1:9000")
        #expect(authService.timeoutMilliseconds == 3000)
        #expect(authService.caCertificatePEMFile == nil)

        let refresh = try #require(authService.refresh)
        guard case .json(let template) = refresh.protocol else {
            Issue.record("default refresh protocol should be json, got \(refresh.protocol)")
            return
        }
        #expect(template == ["user_name": "{claims.email}", "refreshtoken": "{refreshToken}"])
        #expect(refresh.path == "/v1/login")
        #expect(refresh.accessTokenField == "accesstoken")
        #expect(refresh.refreshTokenField == "refreshtoken")
        #expect(
            refresh.refreshTokenSources == [
                .header(name: "X-Refresh-Token", bearer: false, raw: true), .cookie(name: "refresh_token"),
            ])
        #expect(refresh.accessTokenResponseHeader == "X-Access-Token")
        #expect(refresh.refreshTokenResponseHeader == "X-Refresh-Token")
        #expect(refresh.maxExpiredSeconds == 604_800)
        #expect(refresh.graceSeconds == 30)

        let profile = try #require(authService.profile)
        #expect(
            profile
                == ProfileConfiguration(
                    path: "/v1/user", authorization: .raw, ttlSeconds: 300, staleSeconds: 3600, maxEntries: 100_000))

        #expect(configuration.routes.map(\.name) == ["public", "admin", "default"])
        let route = configuration.routes[2]
        #expect(route.auth == .required)
        #expect(route.stripPathPrefix == false)
        #expect(route.forwardAccessToken == true)
        #expect(route.methods == nil)
        #expect(route.host == nil)
        #expect(route.pathMatch == .prefix("/"))
        #expect(configuration.routes[0].auth == .none)
        #expect(
            configuration.routes[1].require
                == Requirement(
                    path: "routes[1].require",
                    clauses: [
                        RequirementClause(
                            path: #"routes[1].require["profile.admin"]"#,
                            kind: .field(IdentityValuePath(source: .profile, name: "admin"), .equals(.bool(true))))
                    ]))
        #expect(configuration.usesProfiles)
        #expect(configuration.trustedProxies.map(\.description) == ["10.0.0.0/8", "192.168.1.1/32"])
        #expect(configuration.backend(named: "other")?.urls.count == 2)
    }

    @Test("an oauth2 refresh section gets the oauth2 defaults")
    func oauth2Defaults() throws {
        let text = editing(fullConfiguration, [("authService.refresh", ["protocol": "oauth2", "clientId": "gw"])])
        let refresh = try #require(try self.valid(text).authService?.refresh)
        guard case .oauth2(let clientID, let clientSecret, let authentication) = refresh.protocol else {
            Issue.record("expected oauth2")
            return
        }
        #expect(clientID == "gw")
        #expect(clientSecret == nil)
        #expect(authentication == .basic)
        #expect(refresh.path == "/oauth2/token")
        #expect(refresh.accessTokenField == "access_token")
        #expect(refresh.refreshTokenField == "refresh_token")
    }

    @Test("route options are read")
    func routeOptions() throws {
        let text = editing(
            fullConfiguration,
            [
                (
                    "routes[0]",
                    [
                        "name": "exact", "host": "API.Example.com", "path": "/v1/ping", "methods": ["get", "POST"],
                        "backend": "api",
                        "auth": "optional", "forwardAccessToken": false,
                    ]
                ),
                ("routes[2].stripPathPrefix", true),
            ])
        let configuration = try self.valid(text)
        let route = configuration.routes[0]
        #expect(route.host == "api.example.com")
        #expect(route.pathMatch == .exact("/v1/ping"))
        #expect(route.methods == ["GET", "POST"])
        #expect(route.auth == .optional)
        #expect(route.forwardAccessToken == false)
        #expect(configuration.routes[2].stripPathPrefix)
    }

    @Test("token sources: schemes and refresh-source defaults")
    func tokenSources() throws {
        let text = editing(
            fullConfiguration,
            [
                (
                    "tokens.sources",
                    [
                        ["header": "Authorization", "schemes": ["Bearer"]], ["header": "X-Token", "schemes": ["raw"]],
                        ["cookie": "at"],
                    ]
                ),
                ("authService.refresh.refreshTokenSources", [["header": "X-Refresh"], ["cookie": "rt"]]),
            ])
        let configuration = try self.valid(text)
        #expect(
            configuration.tokens.sources == [
                .header(name: "Authorization", bearer: true, raw: false),
                .header(name: "X-Token", bearer: false, raw: true), .cookie(name: "at"),
            ])
        #expect(
            configuration.authService?.refresh?.refreshTokenSources == [
                .header(name: "X-Refresh", bearer: false, raw: true), .cookie(name: "rt"),
            ])
    }

    // MARK: Unknown keys

    @Test("an unknown key at the root is reported with its path")
    func unknownKeyAtRoot() {
        expectSingleIssue(
            editing(minimalConfiguration, [("listenr", ["port": 1])]), path: "listenr", contains: "unknown key")
    }

    @Test("an unknown nested key is reported with its path")
    func unknownKeyNested() {
        expectSingleIssue(
            editing(fullConfiguration, [("listener.hots", "x")]), path: "listener.hots", contains: "unknown key")
        expectSingleIssue(
            editing(fullConfiguration, [("authService.refresh.graceSecond", 3)]),
            path: "authService.refresh.graceSecond", contains: "unknown key")
        expectSingleIssue(
            editing(fullConfiguration, [("backends.other.url", "x")]), path: "backends.other.url",
            contains: "unknown key")
    }

    @Test("an unknown key in an array element is reported with its index")
    func unknownKeyInArrayElement() {
        expectSingleIssue(
            editing(fullConfiguration, [("routes[1].pathPrefx", "/x")]), path: "routes[1].pathPrefx",
            contains: "unknown key")
        expectSingleIssue(
            editing(fullConfiguration, [("tokens.issuers[0].audience", "x")]), path: "tokens.issuers[0].audience",
            contains: "unknown key")
    }

    @Test(
        "an unknown key is caught in every section",
        arguments: [
            "limits.x", "timeouts.x", "tokens.x", "tokens.issuers[0].x", "authService.x", "authService.refresh.x",
            "authService.refresh.responseHeaders.x", "authService.profile.x", "backends.api.x", "routes[2].x",
            "health.x", "logging.x", "admin.x",
        ]
    )
    func unknownKeyEverySection(path: String) {
        expectSingleIssue(editing(fullConfiguration, [(path, 1)]), path: path, contains: "unknown key")
    }

    @Test("an unknown key in a token source entry")
    func unknownKeyInTokenSource() {
        let text = editing(
            fullConfiguration, [("tokens.sources", [["header": "Authorization", "scheme": ["Bearer"]]])])
        expectSingleIssue(text, path: "tokens.sources[0].scheme", contains: "unknown key")
    }

    // MARK: Types

    @Test(
        "a value of the wrong type is reported with its path",
        arguments: [
            ("listener.port", JSONValue.string("8080"), "expected a whole number, found string"),
            (
                "limits.maxHeaderBytes", JSONValue.number(JSONNumber(text: "40000.5", double: 40000.5)),
                "expected a whole number, found 40000.5"
            ),
            ("logging.accessLog", JSONValue.string("yes"), "expected true or false, found string"),
            ("routes", JSONValue.object(JSONObject()), "expected an array, found object"),
            ("routes[1]", JSONValue.string("admin"), "expected an object, found string"),
            (
                "backends.api.urls", JSONValue.string("http://127.0.0.1:9100"),
                "expected an array of strings, found string"
            ),
            ("backends.api.urls[0]", JSONValue.number(JSONNumber(9100)), "expected a string, found number"),
            ("routes[2].backend", JSONValue.bool(true), "expected a string, found boolean"),
            ("tokens", JSONValue.array([]), "expected an object, found array"),
            ("routes[0].stripPathPrefix", JSONValue.string("true"), "expected true or false, found string"),
            ("tokens.issuers[0].audiences", JSONValue.string("api"), "expected an array of strings, found string"),
            ("identityHeaders", JSONValue.array([]), "expected an object, found array"),
        ] as [(String, JSONValue, String)]
    )
    func wrongType(path: String, value: JSONValue, message: String) {
        expectIssue(editing(fullConfiguration, [(path, value)]), path: path, contains: message)
    }

    @Test("each refresh response header defaults on its own")
    func responseHeadersDefaultIndependently() throws {
        let text = editing(
            fullConfiguration, [("authService.refresh.responseHeaders", ["accessToken": "X-New-Access"])])
        let refresh = try #require(try load(text).get().authService?.refresh)
        #expect(refresh.accessTokenResponseHeader == "X-New-Access")
        #expect(refresh.refreshTokenResponseHeader == "X-Refresh-Token")
        let off = editing(fullConfiguration, [("authService.refresh.responseHeaders", ["refreshToken": .null])])
        let withoutRefreshHeader = try #require(try load(off).get().authService?.refresh)
        #expect(withoutRefreshHeader.accessTokenResponseHeader == "X-Access-Token")
        #expect(withoutRefreshHeader.refreshTokenResponseHeader == nil)
    }

    @Test("TLS on the admin listener is refused, not ignored")
    func adminTLSIsRefused() {
        let text = editing(
            fullConfiguration,
            [("admin.tls", ["certificatePEMFile": "/nonexistent.pem", "privateKeyPEMFile": "/nonexistent.key"])])
        expectSingleIssue(text, path: "admin.tls", contains: "not supported on the admin listener")
    }

    @Test("a scalar where the backends object belongs")
    func backendNotObject() {
        expectIssue(
            editing(fullConfiguration, [("backends.api", "http://127.0.0.1:9100")]), path: "backends.api",
            contains: "expected an object, found string")
    }

    // MARK: Required sections

    @Test("listener, backends and routes are required", arguments: ["listener", "backends", "routes"])
    func requiredSection(_ key: String) {
        expectIssue(editing(minimalConfiguration, [(key, nil)]), path: key, contains: "is required")
    }

    @Test("a route that needs auth needs an issuer")
    func issuersRequiredForAuth() {
        let text = editing(
            fullConfiguration,
            [("tokens", nil), ("routes[1].require", nil), ("identityHeaders", nil), ("authService", nil)])
        let found = self.issues(text)
        // Route 0 has auth "none"; routes 1 and 2 default to "required".
        #expect(found.map(\.path) == ["routes[1].auth", "routes[2].auth"], "issues: \(found)")
        #expect(found.allSatisfy { $0.message.contains("tokens.issuers") }, "issues: \(found)")
    }

    @Test("routes with auth none need no issuer")
    func noIssuersWithoutAuth() throws {
        _ = try self.valid(minimalConfiguration)
    }

    @Test("an empty routes list and an empty backends object are errors")
    func emptyLists() {
        expectIssue(editing(minimalConfiguration, [("routes", [])]), path: "routes", contains: "at least one route")
        expectIssue(
            editing(minimalConfiguration, [("backends", JSONValue.object(JSONObject()))]), path: "backends",
            contains: "at least one backend")
        expectSingleIssue(
            editing(minimalConfiguration, [("backends.api.urls", [])]), path: "backends.api.urls",
            contains: "at least one URL")
    }

    @Test("an issuer needs a key source")
    func issuerWithoutKeys() {
        expectSingleIssue(
            editing(fullConfiguration, [("tokens.issuers[0].jwksURL", nil)]), path: "tokens.issuers[0]",
            contains: "keys, jwksFile, jwksURL or \"discovery\": true")
    }

    @Test("a route needs path or pathPrefix, not both")
    func routePathChoice() {
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].pathPrefix", nil)]), path: "routes[2]",
            contains: "needs \"path\" or \"pathPrefix\"")
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].path", "/x")]), path: "routes[2]", contains: "not both")
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].pathPrefix", "x/")]), path: "routes[2].pathPrefix",
            contains: "must start with \"/\"")
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].name", nil)]), path: "routes[2].name", contains: "is required")
    }

    // MARK: Cross references

    @Test("duplicate route names")
    func duplicateRouteNames() {
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].name", "admin")]), path: "routes[2].name",
            contains: "duplicate route name \"admin\"")
    }

    @Test("an unknown backend")
    func unknownBackend() {
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].backend", "billing")]), path: "routes[2].backend",
            contains: "unknown backend \"billing\"")
    }

    @Test("duplicate issuers")
    func duplicateIssuers() {
        let issuer: JSONValue = ["issuer": "https://issuer.test", "jwksURL": "http://127.0.0.1:9000/other.json"]
        expectSingleIssue(
            editing(fullConfiguration, [("tokens.issuers[1]", issuer)]), path: "tokens.issuers[1].issuer",
            contains: "duplicate issuer \"https://issuer.test\"")
    }

    @Test("require with auth none, and a bad require key")
    func requireRules() {
        expectSingleIssue(
            editing(fullConfiguration, [("routes[0].require", ["claims.sub": "x"])]), path: "routes[0].require",
            contains: "auth \"none\"")
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].require", ["sub": "x"])]), path: "routes[2].require.sub",
            contains: "claims.<name>")
    }

    @Test("stripPathPrefix applies only to prefix routes")
    func stripPathPrefixOnExact() {
        expectSingleIssue(
            editing(
                fullConfiguration,
                [("routes[2].pathPrefix", nil), ("routes[2].path", "/x"), ("routes[2].stripPathPrefix", true)]),
            path: "routes[2].stripPathPrefix", contains: "pathPrefix")
    }

    @Test("identity headers must name claims or profile values")
    func identityHeaderValues() {
        expectSingleIssue(
            editing(fullConfiguration, [("identityHeaders.X-User-Subject", "sub")]),
            path: "identityHeaders.X-User-Subject", contains: "claims.<name>")
        expectSingleIssue(
            editing(fullConfiguration, [("identityHeaders.Bad Header", "claims.sub")]),
            path: "identityHeaders.Bad Header", contains: "not a valid header name")
        expectSingleIssue(
            editing(fullConfiguration, [("identityHeaders.x-user-subject", "claims.email")]),
            path: "identityHeaders.x-user-subject", contains: "duplicate header")
    }

    @Test("profile.* needs authService.profile")
    func profileWithoutProfileSection() {
        expectSingleIssue(
            editing(fullConfiguration, [("authService.profile", nil)]), path: "authService.profile",
            contains: "profile.*")
        // Through an identity header as well as through a requirement.
        expectSingleIssue(
            editing(
                fullConfiguration,
                [
                    ("authService.profile", nil), ("routes[1].require", nil),
                    ("identityHeaders.X-User-Name", "profile.name"),
                ]),
            path: "authService.profile", contains: "profile.*")
        // Without any profile.* use, the section is optional.
        #expect(
            self.issues(
                editing(
                    fullConfiguration, [("authService.profile", nil), ("routes[1].require", ["claims.admin": true])])
            ).isEmpty)
    }

    @Test("an unknown placeholder in jsonBody")
    func unknownPlaceholder() {
        expectSingleIssue(
            editing(
                fullConfiguration,
                [
                    (
                        "authService.refresh.jsonBody",
                        ["user": "{username}", "token": "{refreshToken}", "email": "{claims.email}"]
                    )
                ]),
            path: "authService.refresh.jsonBody.user", contains: "unknown placeholder {username}")
        expectSingleIssue(
            editing(
                fullConfiguration,
                [("authService.refresh.jsonBody", ["nested": ["list": ["ok", "prefix-{profile.x}"]]])]),
            path: "authService.refresh.jsonBody.nested.list[1]", contains: "unknown placeholder {profile.x}")
    }

    @Test("protocol-specific refresh keys are refused under the other protocol")
    func refreshProtocolKeys() {
        expectSingleIssue(
            editing(fullConfiguration, [("authService.refresh.clientId", "gw")]), path: "authService.refresh.clientId",
            contains: "oauth2")
        expectSingleIssue(
            editing(fullConfiguration, [("authService.refresh", ["protocol": "oauth2", "jsonBody": ["a": "b"]])]),
            path: "authService.refresh.jsonBody", contains: "json")
        expectSingleIssue(
            editing(fullConfiguration, [("authService.refresh", ["protocol": "oauth2", "clientSecret": "s"])]),
            path: "authService.refresh.clientSecret", contains: "needs clientId")
        expectSingleIssue(
            editing(fullConfiguration, [("authService.refresh.protocol", "saml")]),
            path: "authService.refresh.protocol", contains: "\"json\" or \"oauth2\"")
        expectSingleIssue(
            editing(
                fullConfiguration,
                [("authService.refresh", ["protocol": "oauth2", "clientId": "gw", "clientAuthentication": "digest"])]),
            path: "authService.refresh.clientAuthentication", contains: "\"basic\" or \"form\"")
    }

    // MARK: Keys

    @Test("an unreadable key file")
    func unreadableKeyFile() {
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "RS256", "publicKeyPEMFile": "/nonexistent/key.pem" }"#),
            path: "tokens.issuers[0].keys[0].publicKeyPEMFile", contains: "cannot read /nonexistent/key.pem")
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "RS256", "publicKeyPEMFile": "/tmp" }"#),
            path: "tokens.issuers[0].keys[0].publicKeyPEMFile", contains: "directory")
    }

    @Test("an unparsable key file")
    func unparsableKeyFile() throws {
        try withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("garbage.pem")
            try "this is not a key\n".write(to: file, atomically: true, encoding: .utf8)
            expectSingleIssue(
                keyConfiguration(#"{ "algorithm": "RS256", "publicKeyPEMFile": "\#(file.path)" }"#),
                path: "tokens.issuers[0].keys[0].publicKeyPEMFile", contains: "not a PEM document")
        }
    }

    @Test("a private key file is refused with a clear message")
    func privateKeyFile() {
        let path = Fixtures.url("jwt/keys/private/ec256.key.pem").path
        expectSingleIssue(
            keyConfiguration(#"{ "publicKeyPEMFile": "\#(path)" }"#),
            path: "tokens.issuers[0].keys[0].publicKeyPEMFile", contains: "private key")
    }

    @Test("an unsupported algorithm")
    func unsupportedAlgorithm() {
        let path = Fixtures.url("jwt/keys/rsa.pub.pem").path
        for algorithm in ["HS256", "none", "rs256", "ES256K"] {
            expectSingleIssue(
                keyConfiguration(#"{ "algorithm": "\#(algorithm)", "publicKeyPEMFile": "\#(path)" }"#),
                path: "tokens.issuers[0].keys[0].algorithm", contains: "unsupported algorithm \"\(algorithm)\"")
        }
    }

    @Test("a key type that does not fit its algorithm")
    func keyTypeMismatch() {
        let ec = Fixtures.url("jwt/keys/ec256.pub.pem").path
        let rsa = Fixtures.url("jwt/keys/rsa.pub.pem").path
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "RS256", "publicKeyPEMFile": "\#(ec)" }"#),
            path: "tokens.issuers[0].keys[0].algorithm", contains: "cannot verify RS256")
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "ES384", "publicKeyPEMFile": "\#(ec)" }"#),
            path: "tokens.issuers[0].keys[0].algorithm", contains: "cannot verify ES384")
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "ES256", "publicKeyPEMFile": "\#(rsa)" }"#),
            path: "tokens.issuers[0].keys[0].algorithm", contains: "cannot verify ES256")
    }

    @Test("an RSA key needs an algorithm; EC and Ed25519 keys imply theirs")
    func rsaKeyWithoutAlgorithm() throws {
        let rsa = Fixtures.url("jwt/keys/rsa.pub.pem").path
        expectSingleIssue(
            keyConfiguration(#"{ "publicKeyPEMFile": "\#(rsa)" }"#),
            path: "tokens.issuers[0].keys[0].algorithm", contains: "is required for an RSA key")
        let entries = [("ec256", JWSAlgorithm.ES256), ("ec384", .ES384), ("ec521", .ES512), ("ed25519", .EdDSA)]
        let keys = entries.map {
            #"{ "kid": "\#($0.0)", "publicKeyPEMFile": "\#(Fixtures.url("jwt/keys/\($0.0).pub.pem").path)" }"#
        }
        let configuration = try self.valid(keyConfiguration(keys.joined(separator: ",")))
        let loaded = try #require(configuration.tokens.issuers.first?.staticKeys)
        #expect(loaded.map(\.kid) == entries.map(\.0))
        #expect(loaded.map(\.algorithm) == entries.map(\.1))
    }

    @Test("a 1024-bit RSA key is refused")
    func weakRSAKey() {
        let path = Fixtures.url("jwt/keys/rsa-1024.pub.pem").path
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "RS256", "publicKeyPEMFile": "\#(path)" }"#),
            path: "tokens.issuers[0].keys[0].publicKeyPEMFile", contains: "1024 bits is too short")
    }

    @Test("every key source loads: PEM file, inline PEM, base64 DER, certificate, JWKS file")
    func keySources() throws {
        let pem = Fixtures.text("jwt/keys/ec256.pub.pem")
        let inline = JSONValue.string(pem).jsonText
        let base64 = Fixtures.text("jwt/keys/rsa.pub.b64")
        let text = """
            {
              "listener": { "port": 8080 },
              "tokens": { "issuers": [ {
                "issuer": "https://issuer.test",
                "keys": [
                  { "kid": "file", "algorithm": "PS256", "publicKeyPEMFile": "\(Fixtures.url("jwt/keys/rsa-pss.pub.pem").path)" },
                  { "kid": "inline", "publicKeyPEM": \(inline) },
                  { "kid": "b64", "algorithm": "RS384", "publicKeyBase64": "\(base64)" },
                  { "kid": "cert", "algorithm": "RS512", "certificatePEMFile": "\(Fixtures.url("jwt/keys/rsa.cert.pem").path)" },
                  { "algorithm": "RS256", "publicKeyPEMFile": "\(Fixtures.url("jwt/keys/other-rsa.pub.pem").path)" }
                ],
                "jwksFile": "\(Fixtures.url("jwt/keys/jwks.json").path)"
              } ] },
              "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": [ { "name": "api", "pathPrefix": "/", "backend": "api" } ]
            }
            """
        let issuer = try #require(try self.valid(text).tokens.issuers.first)
        let byKid = Dictionary(
            issuer.staticKeys.compactMap { key in key.kid.map { ($0, key) } }, uniquingKeysWith: { first, _ in first })
        #expect(byKid["file"]?.algorithm == .PS256)
        #expect(byKid["inline"]?.algorithm == .ES256)
        #expect(byKid["b64"]?.algorithm == .RS384)
        #expect(byKid["cert"]?.algorithm == .RS512)
        #expect(issuer.staticKeys.filter { $0.kid == nil }.map(\.algorithm) == [.RS256])
        // The JWKS file's six signature keys; oct and enc keys are skipped.
        for kid in ["rsa-1", "pss-1", "ec256-1", "ec384-1", "ec521-1", "ed-1"] { #expect(byKid[kid] != nil, "\(kid)") }
        #expect(byKid["hmac-1"] == nil)
        #expect(byKid["enc-1"] == nil)
        #expect(issuer.staticKeys.count == 11)
    }

    @Test("a key entry takes exactly one source")
    func keySourceCount() {
        let rsa = Fixtures.url("jwt/keys/rsa.pub.pem").path
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "RS256" }"#), path: "tokens.issuers[0].keys[0]",
            contains: "a key needs one of")
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "RS256", "publicKeyPEMFile": "\#(rsa)", "publicKeyBase64": "AAAA" }"#),
            path: "tokens.issuers[0].keys[0]", contains: "only one of")
    }

    @Test("a certificate file that is not a certificate")
    func certificateFileHoldsPublicKey() {
        let rsa = Fixtures.url("jwt/keys/rsa.pub.pem").path
        expectSingleIssue(
            keyConfiguration(#"{ "algorithm": "RS256", "certificatePEMFile": "\#(rsa)" }"#),
            path: "tokens.issuers[0].keys[0].certificatePEMFile", contains: "not a PEM certificate")
    }

    @Test("two keys with one kid")
    func duplicateKid() {
        let ec = Fixtures.url("jwt/keys/ec256.pub.pem").path
        let ed = Fixtures.url("jwt/keys/ed25519.pub.pem").path
        expectSingleIssue(
            keyConfiguration(
                #"{ "kid": "k", "publicKeyPEMFile": "\#(ec)" }, { "kid": "k", "publicKeyPEMFile": "\#(ed)" }"#),
            path: "tokens.issuers[0].keys", contains: "kid \"k\"")
    }

    // MARK: URLs and ports

    @Test(
        "invalid backend URLs",
        arguments: [
            ("127.0.0.1:9100", "must start with http:// or https://"),
            ("ftp://127.0.0.1", "must start with http:// or https://"),
            ("http://127.0.0.1:99999", "port must be between 1 and 65535"),
            ("http://127.0.0.1:0", "port must be between 1 and 65535"),
            ("http://127.0.0.1:abc", "port must be between 1 and 65535"),
            ("http://127.0.0.1:", "port must be between 1 and 65535"),
            ("http://127.0.0.1:9100/api", "must not have a path"),
            ("http://127.0.0.1:9100?x=1", "must not have a path"),
            ("http://", "has no host"),
            ("http://:9100", "has no host"),
            ("http://user:pw@127.0.0.1", "credentials"),
            ("http://bad host", "invalid host"),
            ("http://127.0.0.1#frag", "fragment"),
        ]
    )
    func invalidBackendURL(url: String, message: String) {
        expectSingleIssue(
            editing(fullConfiguration, [("backends.other.urls[1]", .string(url))]), path: "backends.other.urls[1]",
            contains: message)
    }

    @Test("invalid auth service and JWKS URLs")
    func invalidServiceURLs() {
        expectIssue(
            editing(fullConfiguration, [("authService.url", "http://127.0.0.1:9000/v1")]), path: "authService.url",
            contains: "base URL only")
        expectIssue(
            editing(fullConfiguration, [("authService.url", "127.0.0.1:9000")]), path: "authService.url",
            contains: "http://")
        expectSingleIssue(
            editing(fullConfiguration, [("tokens.issuers[0].jwksURL", "//127.0.0.1/jwks")]),
            path: "tokens.issuers[0].jwksURL", contains: "http://")
    }

    @Test("a bad authService.url is reported once, not also as a missing authService.profile")
    func badAuthServiceURLDoesNotCascade() {
        // The profile section is present; only the URL is wrong. Reporting
        // "authService.profile: is required" as well sends the operator after a non-problem.
        expectSingleIssue(
            editing(fullConfiguration, [("authService.url", "127.0.0.1:9000")]), path: "authService.url",
            contains: "must start with http://")
    }

    @Test("listener ports out of range", arguments: [-1, 65536, 100_000])
    func portOutOfRange(port: Int) {
        expectSingleIssue(
            editing(fullConfiguration, [("listener.port", .number(JSONNumber(port)))]), path: "listener.port",
            contains: "between 0 and 65535, found \(port)")
        expectSingleIssue(
            editing(fullConfiguration, [("admin.port", .number(JSONNumber(port)))]), path: "admin.port",
            contains: "found \(port)")
    }

    @Test("listener port 0 (any free port) and 65535 are accepted")
    func portEdges() throws {
        #expect(try self.valid(editing(fullConfiguration, [("listener.port", 0)])).listener.port == 0)
        #expect(try self.valid(editing(fullConfiguration, [("listener.port", 65535)])).listener.port == 65535)
    }

    // MARK: Durations

    @Test(
        "durations of 0 are refused",
        arguments: [
            "timeouts.requestHeaderSeconds", "timeouts.idleSeconds", "timeouts.drainSeconds",
            "tokens.issuers[0].jwksRefreshSeconds", "tokens.issuers[0].jwksMinRefetchSeconds",
            "authService.timeoutMilliseconds", "authService.refresh.maxExpiredSeconds",
            "authService.refresh.graceSeconds",
            "authService.profile.ttlSeconds", "authService.profile.staleSeconds",
            "backends.api.connectTimeoutMilliseconds", "backends.api.responseTimeoutMilliseconds",
        ]
    )
    func zeroDurationRefused(path: String) throws {
        expectSingleIssue(editing(fullConfiguration, [(path, 0)]), path: path, contains: "found 0")
        // 1 is the smallest accepted value.
        _ = try self.valid(editing(fullConfiguration, [(path, 1)]))
    }

    @Test("leewaySeconds 0 is allowed, negative is not")
    func leeway() throws {
        let configuration = try self.valid(editing(fullConfiguration, [("tokens.issuers[0].leewaySeconds", 0)]))
        #expect(configuration.tokens.issuers[0].leewaySeconds == 0)
        expectSingleIssue(
            editing(fullConfiguration, [("tokens.issuers[0].leewaySeconds", -1)]),
            path: "tokens.issuers[0].leewaySeconds", contains: "found -1")
    }

    @Test("a fractional duration is refused")
    func fractionalDuration() {
        expectSingleIssue(
            editing(fullConfiguration, [("timeouts.idleSeconds", .number(JSONNumber(text: "1.5", double: 1.5)))]),
            path: "timeouts.idleSeconds", contains: "whole number")
    }

    @Test("configured durations are kept")
    func durationsKept() throws {
        let configuration = try self.valid(
            editing(
                fullConfiguration,
                [
                    ("timeouts.idleSeconds", 7), ("authService.refresh.graceSeconds", 1),
                    ("authService.profile.staleSeconds", 2), ("tokens.issuers[0].jwksMinRefetchSeconds", 3),
                ]))
        #expect(configuration.timeouts.idleSeconds == 7)
        #expect(configuration.authService?.refresh?.graceSeconds == 1)
        #expect(configuration.authService?.profile?.staleSeconds == 2)
        #expect(configuration.tokens.issuers[0].jwks?.minRefetchSeconds == 3)
    }

    // MARK: Trusted proxies

    @Test(
        "an invalid CIDR in trustedProxies",
        arguments: ["10.0.0.0/33", "not-an-ip", "10.0.0/8", "fd00::/129", "10.0.0.0/8/1", "10.0.0.0/-1", ""])
    func invalidCIDR(_ text: String) {
        expectSingleIssue(
            editing(fullConfiguration, [("trustedProxies[1]", .string(text))]), path: "trustedProxies[1]",
            contains: "is not an IP address or CIDR block")
    }

    // MARK: Other sections

    @Test("logging level and health paths are validated")
    func loggingAndHealth() throws {
        expectSingleIssue(
            editing(fullConfiguration, [("logging.level", "loud")]), path: "logging.level", contains: "must be one of")
        expectSingleIssue(
            editing(fullConfiguration, [("health.readyPath", "ready")]), path: "health.readyPath",
            contains: "starting with \"/\"")
        let configuration = try self.valid(
            editing(fullConfiguration, [("logging.level", "WARNING"), ("health.path", "/status")]))
        #expect(configuration.logging.level == .warning)
        #expect(configuration.health.path == "/status")
        #expect(configuration.health.readyPath == "/readyz")
    }

    @Test("a document that is not a JSON object")
    func notAnObject() {
        expectSingleIssue("[]", path: "", contains: "must be a JSON object")
        expectSingleIssue("{", path: "", contains: "invalid JSON")
        expectSingleIssue(#"{"listener":{"port":1},"listener":{"port":2}}"#, path: "", contains: "duplicate key")
    }

    // MARK: Environment

    @Test("${NAME} is replaced from the injected environment")
    func environmentSubstitution() throws {
        let text = editing(
            fullConfiguration,
            [
                ("backends.api.urls[0]", "http://${BACKEND_HOST}:${BACKEND_PORT}"),
                (
                    "authService.refresh.jsonBody",
                    ["user_name": "{claims.email}", "refreshtoken": "{refreshToken}", "client": "${CLIENT}"]
                ),
            ])
        let configuration = try self.valid(
            text, environment: ["BACKEND_HOST": "backend.internal", "BACKEND_PORT": "9443", "CLIENT": "mobile"])
        let url = try #require(configuration.backend(named: "api")?.urls.first)
        #expect(url.host == "backend.internal")
        #expect(url.port == 9443)
        guard case .json(let template)? = configuration.authService?.refresh?.protocol else {
            Issue.record("expected a json refresh")
            return
        }
        #expect(template["client"] == "mobile")
    }

    @Test("a missing environment variable is an error at the string's path")
    func environmentMissing() {
        let text = editing(fullConfiguration, [("backends.api.urls[0]", "http://${BACKEND_HOST}:9100")])
        expectSingleIssue(
            text, path: "backends.api.urls[0]", contains: "environment variable BACKEND_HOST is not set",
            environment: ["OTHER": "x"])
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].backend", "${BACKEND}")]), path: "routes[2].backend",
            contains: "BACKEND is not set")
    }

    @Test("the real process environment is not consulted when one is injected")
    func environmentInjectedOnly() {
        // PATH is set in every test process; an injected empty environment must not see it.
        expectSingleIssue(
            editing(fullConfiguration, [("routes[2].backend", "${PATH}")]), path: "routes[2].backend",
            contains: "PATH is not set", environment: [:])
    }

    // MARK: Files

    @Test("relative key paths are resolved against the configuration file's folder")
    func relativeKeyPaths() throws {
        try withTemporaryDirectory { directory in
            let keys = directory.appendingPathComponent("keys")
            try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
            try Fixtures.text("jwt/keys/ec256.pub.pem").write(
                to: keys.appendingPathComponent("signing.pem"), atomically: true, encoding: .utf8)
            let configFile = directory.appendingPathComponent("gateway.json")
            try keyConfiguration(#"{ "kid": "rel", "publicKeyPEMFile": "keys/signing.pem" }"#).write(
                to: configFile, atomically: true, encoding: .utf8)

            let configuration = try ConfigurationLoader(environment: [:]).load(path: configFile.path)
            #expect(configuration.sourcePath == configFile.path)
            let key = try #require(configuration.tokens.issuers.first?.staticKeys.first)
            #expect(key.kid == "rel")
            #expect(key.algorithm == .ES256)

            // The same text read relative to another folder does not find the key, and the
            // error names the path it tried.
            let elsewhere = directory.appendingPathComponent("elsewhere").path
            let found = self.issues(try String(contentsOf: configFile, encoding: .utf8), baseDirectory: elsewhere)
            #expect(found.count == 1)
            #expect(found.first?.message.contains("\(elsewhere)/keys/signing.pem") == true, "issues: \(found)")
        }
    }

    @Test("a configuration file that does not exist")
    func missingFile() {
        do throws(ConfigurationError) {
            _ = try ConfigurationLoader(environment: [:]).load(path: "/nonexistent/gateway.json")
            Issue.record("expected an error")
        } catch {
            #expect(error.issues.count == 1)
            #expect(error.issues.first?.message.contains("/nonexistent/gateway.json") == true)
        }
    }

    // MARK: All at once

    @Test("every error of a file is reported at once")
    func allErrorsAtOnce() {
        let text = editing(
            fullConfiguration,
            [
                ("listener.port", 70000),
                ("routes[2].backend", "billing"),
                ("trustedProxies[0]", "10.0.0.0/99"),
            ])
        let found = self.issues(text)
        #expect(found.count == 3, "issues: \(found)")
        #expect(Set(found.map(\.path)) == ["listener.port", "routes[2].backend", "trustedProxies[0]"])
        let description = ConfigurationError(issues: found).description
        #expect(description.contains("routes[2].backend: unknown backend \"billing\""))
        #expect(description.split(separator: "\n").count == 3)
    }

    @Test("errors of many kinds at once, each with its own path")
    func manyErrorsAtOnce() {
        let text = editing(
            fullConfiguration,
            [
                ("typo", 1),
                ("listener.port", "80"),
                ("routes[0].name", "default"),
                ("routes[1].backend", "nope"),
                ("timeouts.idleSeconds", 0),
                ("authService.profile", nil),
            ])
        let found = self.issues(text)
        #expect(
            Set(found.map(\.path)) == [
                "typo", "listener.port", "routes[2].name", "routes[1].backend", "timeouts.idleSeconds",
                "authService.profile",
            ], "issues: \(found)")
        #expect(found.count == 6)
    }

    // MARK: The repository's own files

    @Test("config/gateway.json loads")
    func repositoryGatewayConfig() throws {
        let configuration = try ConfigurationLoader(environment: [:]).load(
            path: Fixtures.repositoryURL("config/gateway.json").path)
        #expect(configuration.routes.map(\.name) == ["public", "admin", "default"])
        #expect(configuration.routes.map(\.auth) == [.none, .required, .required])
        #expect(configuration.routes[1].methods == ["GET", "POST"])
        #expect(configuration.tokens.issuers.map(\.issuer) == ["http://127.0.0.1:9000"])
        #expect(configuration.tokens.issuers[0].jwks?.url?.description == "http://127.0.0.1:9000/.well-known/jwks.json")
        #expect(configuration.tokens.issuers[0].audiences == ["demo-api"])
        #expect(
            configuration.identityHeaders.map(\.name) == [
                "X-User-Id", "X-User-Name", "X-User-Subject", "X-User-Super-Admin",
            ])
        #expect(
            configuration.identityHeaders.map(\.path.description) == [
                "profile.user_id", "profile.user_name", "claims.sub", "profile.super_admin",
            ])
        #expect(configuration.authService?.profile?.authorization == .raw)
        guard case .json(let template)? = configuration.authService?.refresh?.protocol else {
            Issue.record("expected a json refresh")
            return
        }
        #expect(template == ["user_name": "{claims.email}", "refreshtoken": "{refreshToken}"])
    }

    @Test("config/examples/rainmaker.json loads")
    func repositoryRainMakerConfig() throws {
        let configuration = try ConfigurationLoader(environment: [:]).load(
            path: Fixtures.repositoryURL("config/examples/rainmaker.json").path)
        #expect(configuration.routes.map(\.name) == ["health-passthrough", "admin", "api"])
        #expect(configuration.routes[0].pathMatch == .exact("/v1/ping"))
        #expect(configuration.tokens.sources == [.header(name: "Authorization", bearer: true, raw: true)])
        let issuer = try #require(configuration.tokens.issuers.first)
        #expect(issuer.issuer == "https://auth.rainmaker.example.com")
        #expect(issuer.requiredClaims == ["sub", "email"])
        #expect(issuer.staticKeys.map(\.kid) == ["2026-1"])
        #expect(issuer.staticKeys.map(\.algorithm) == [.RS256])
        let refresh = try #require(configuration.authService?.refresh)
        #expect(refresh.accessTokenResponseHeader == "X-Access-Token")
        // Not named in the example: its default (sent only when the service rotates the token).
        #expect(refresh.refreshTokenResponseHeader == "X-Refresh-Token")
        #expect(refresh.refreshTokenSources == [.header(name: "X-Refresh-Token", bearer: false, raw: true)])
        #expect(configuration.authService?.url?.isTLS == true)
        #expect(configuration.backend(named: "devices")?.maxConnectionsPerThread == 256)
        #expect(configuration.backend(named: "devices")?.urls.map(\.port) == [8000, 8000])
    }

    @Test("config/examples/oidc.json loads with AUTH_CLIENT_SECRET from the environment")
    func repositoryOIDCConfig() throws {
        let path = Fixtures.repositoryURL("config/examples/oidc.json").path
        let configuration = try ConfigurationLoader(environment: ["AUTH_CLIENT_SECRET": "s3cr:t"]).load(path: path)
        #expect(configuration.routes.map(\.name) == ["orders-admin", "orders"])
        #expect(configuration.routes[1].forwardAccessToken == false)
        #expect(configuration.routes[0].require.fields.map(\.description) == ["claims.realm_access.roles"])
        #expect(configuration.tokens.issuers.map(\.issuer) == ["https://idp.example.com/realms/main"])
        let refresh = try #require(configuration.authService?.refresh)
        guard case .oauth2(let clientID, let clientSecret, let authentication) = refresh.protocol else {
            Issue.record("expected an oauth2 refresh, got \(refresh.protocol)")
            return
        }
        #expect(clientID == "gateway")
        #expect(clientSecret == "s3cr:t")
        #expect(authentication == .basic)
        // Discovery supplies the rest: the JWKS, the token endpoint, the userinfo endpoint.
        #expect(configuration.authService?.url == nil)
        #expect(configuration.authService?.discoveryIssuer == "https://idp.example.com/realms/main")
        let discovery = try #require(configuration.tokens.issuers[0].jwks?.discovery)
        #expect(
            discovery.documentURL.description == "https://idp.example.com/realms/main/.well-known/openid-configuration")
        #expect(discovery.needsTokenEndpoint && discovery.needsUserinfoEndpoint)
        #expect(refresh.path == nil)
        #expect(
            refresh.refreshTokenSources == [
                .header(name: "X-Refresh-Token", bearer: false, raw: true), .cookie(name: "refresh_token"),
            ])
        #expect(configuration.authService?.profile?.authorization == .bearer)
        #expect(configuration.authService?.profile?.path == nil)
        let tls = try #require(configuration.listener.tls)
        #expect(tls.certificatePEMFile.hasSuffix("config/examples/tls/example-cert.pem"))
        #expect(tls.certificatePEMFile.hasPrefix("/"))
        #expect(configuration.trustedProxies.map(\.description) == ["10.0.0.0/8"])
    }

    @Test("config/examples/oidc.json without AUTH_CLIENT_SECRET names the variable")
    func repositoryOIDCConfigWithoutSecret() {
        do throws(ConfigurationError) {
            _ = try ConfigurationLoader(environment: [:]).load(
                path: Fixtures.repositoryURL("config/examples/oidc.json").path)
            Issue.record("expected an error")
        } catch {
            #expect(error.issues.map(\.path) == ["authService.refresh.clientSecret"])
            #expect(error.issues.first?.message.contains("AUTH_CLIENT_SECRET") == true)
        }
    }
}
