import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `tokens.issuers[].discovery` and `authService.discoveryIssuer` (docs/authentication.md): what
/// they load to, and every `check` error they can cause.
@Suite("ConfigurationLoader: OpenID Connect discovery")
struct ConfigurationLoaderDiscoveryTests {
    static let issuer = "https://idp.test/realms/main"

    /// The minimal OIDC configuration: the issuer, `discovery: true`, the client id and secret.
    static let minimal: JSONObject = [
        "listener": ["port": 8080],
        "tokens": ["issuers": [["issuer": .string(Self.issuer), "discovery": true]]],
        "authService": [
            "discoveryIssuer": .string(Self.issuer),
            "refresh": ["clientId": "gateway", "clientSecret": "s3cret"],
            "profile": [:],
        ],
        "backends": ["api": ["urls": ["http://127.0.0.1:9100"]]],
        "routes": [["name": "all", "pathPrefix": "/", "backend": "api"]],
        "identityHeaders": ["X-User-Email": "profile.email"],
    ]

    private func load(_ document: JSONObject) -> Result<GatewayConfiguration, ConfigurationError> {
        do throws(ConfigurationError) {
            return .success(
                try ConfigurationLoader(environment: [:]).load(
                    text: JSONValue.object(document).jsonText, baseDirectory: "/nonexistent"))
        } catch {
            return .failure(error)
        }
    }

    private func editing(_ edit: (inout JSONObject) -> Void) -> JSONObject {
        var document = Self.minimal
        edit(&document)
        return document
    }

    /// Expects exactly the issues given (path and a part of the message), in any order.
    private func expectIssues(
        _ document: JSONObject, _ expected: [(path: String, message: String)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard case .failure(let error) = self.load(document) else {
            Issue.record("expected errors, the configuration loaded", sourceLocation: sourceLocation)
            return
        }
        #expect(error.issues.count == expected.count, "issues: \(error.issues)", sourceLocation: sourceLocation)
        for (path, message) in expected {
            #expect(
                error.issues.contains { $0.path == path && $0.message.contains(message) },
                "no \(path): …\(message)… in \(error.issues)", sourceLocation: sourceLocation)
        }
    }

    @Test func theMinimalConfigurationLeavesEverythingToDiscovery() throws {
        let configuration = try self.load(Self.minimal).get()
        let jwks = try #require(configuration.tokens.issuers[0].jwks)
        #expect(jwks.url == nil)
        #expect(jwks.refreshSeconds == 300 && jwks.minRefetchSeconds == 10)
        let discovery = try #require(jwks.discovery)
        #expect(discovery.documentURL.description == "https://idp.test/realms/main/.well-known/openid-configuration")
        #expect(discovery.needsTokenEndpoint)
        #expect(discovery.needsUserinfoEndpoint)
        let authService = try #require(configuration.authService)
        #expect(authService.url == nil)
        #expect(authService.discoveryIssuer == Self.issuer)
        let refresh = try #require(authService.refresh)
        // With discovery the refresh defaults to oauth2, posting to the token_endpoint.
        guard case .oauth2(let clientID, let secret, let authentication) = refresh.protocol else {
            Issue.record("expected oauth2, got \(refresh.protocol)")
            return
        }
        #expect(clientID == "gateway" && secret == "s3cret" && authentication == .basic)
        #expect(refresh.path == nil)
        #expect(refresh.accessTokenField == "access_token")
        // And the profile is the userinfo endpoint, with a Bearer token.
        #expect(authService.profile?.path == nil)
        #expect(authService.profile?.authorization == .bearer)
    }

    @Test func configuredPathsWinOverDiscoveredEndpoints() throws {
        let configuration = try self.load(
            self.editing { document in
                document.set("authService.url", "https://idp.test")
                document.set("authService.refresh", ["clientId": "gateway", "path": "/custom/token"])
                document.set("authService.profile", ["path": "/v1/user", "authorization": "raw"])
            }
        ).get()
        #expect(configuration.authService?.refresh?.path == "/custom/token")
        #expect(configuration.authService?.profile?.path == "/v1/user")
        #expect(configuration.authService?.profile?.authorization == .raw)
        let discovery = try #require(configuration.tokens.issuers[0].jwks?.discovery)
        // Nothing is left to the document but the keys.
        #expect(!discovery.needsTokenEndpoint && !discovery.needsUserinfoEndpoint)
    }

    @Test func discoveryWithoutDiscoveryIssuerOnlySuppliesKeys() throws {
        let configuration = try self.load(
            self.editing { document in
                document["authService"] = nil
                document["identityHeaders"] = nil
            }
        ).get()
        #expect(configuration.tokens.issuers[0].jwks?.discovery?.needsTokenEndpoint == false)
        #expect(configuration.authService == nil)
    }

    @Test func discoveryTogetherWithJWKSURLIsAnError() {
        self.expectIssues(
            self.editing {
                $0.set(
                    "tokens.issuers",
                    [["issuer": .string(Self.issuer), "discovery": true, "jwksURL": "https://idp.test/certs"]])
            },
            [("tokens.issuers[0].jwksURL", "cannot be set together with \"discovery\": true")]
        )
    }

    @Test func discoveryIssuerNamingAnIssuerWithoutDiscoveryIsAnError() {
        self.expectIssues(
            self.editing {
                $0.set("tokens.issuers", [["issuer": .string(Self.issuer), "jwksURL": "https://idp.test/certs"]])
            },
            [("authService.discoveryIssuer", "issuer \"\(Self.issuer)\" does not have \"discovery\": true")]
        )
        self.expectIssues(
            self.editing { $0.set("authService.discoveryIssuer", "https://other.test") },
            [
                (
                    "authService.discoveryIssuer",
                    "\"https://other.test\" is not an issuer of tokens.issuers (\"\(Self.issuer)\")"
                )
            ]
        )
    }

    @Test func anAuthServiceWithNeitherURLNorDiscoveryIssuerIsAnError() {
        self.expectIssues(
            self.editing { document in
                var authService = document["authService"]?.objectValue ?? JSONObject()
                authService["discoveryIssuer"] = nil
                authService["refresh"] = ["protocol": "oauth2", "clientId": "gateway"]
                document["authService"] = .object(authService)
            },
            [("authService.url", "is required (unless discoveryIssuer names an issuer")]
        )
    }

    /// Paths are on `authService.url`: without it, only discovered endpoints can be used.
    @Test func aPathWithoutAuthServiceURLIsAnError() {
        self.expectIssues(
            self.editing { $0.set("authService.refresh", ["clientId": "gateway", "path": "/token"]) },
            [
                (
                    "authService.refresh.path",
                    "needs authService.url (leave the path out to use the discovered token_endpoint)"
                )
            ]
        )
        self.expectIssues(
            self.editing { $0.set("authService.profile", ["path": "/userinfo"]) },
            [
                (
                    "authService.profile.path",
                    "needs authService.url (leave the path out to use the discovered userinfo_endpoint)"
                )
            ]
        )
        self.expectIssues(
            self.editing { $0.set("authService.refresh", ["protocol": "json"]) },
            [("authService.refresh", "protocol \"json\" posts to authService.url + path: set authService.url")]
        )
    }

    @Test func discoveryNeedsAnIssuerThatIsAURL() {
        self.expectIssues(
            self.editing { document in
                document.set("tokens.issuers", [["issuer": "idp-main", "discovery": true]])
                document["authService"] = nil
                document["identityHeaders"] = nil
            },
            [("tokens.issuers[0].issuer", "discovery needs the issuer to be an http:// or https:// URL")]
        )
    }

    @Test func discoveryMustBeABoolean() {
        self.expectIssues(
            self.editing { $0.set("tokens.issuers", [["issuer": .string(Self.issuer), "discovery": "yes"]]) },
            [
                ("tokens.issuers[0].discovery", "expected true or false"),
                ("tokens.issuers[0]", "an issuer needs keys, jwksFile, jwksURL or \"discovery\": true"),
                ("authService.discoveryIssuer", "does not have \"discovery\": true"),
            ]
        )
    }

    @Test func discoveryMayBeCombinedWithStaticKeys() throws {
        let configuration = try self.load(
            self.editing { document in
                document.set(
                    "tokens.issuers",
                    [
                        [
                            "issuer": .string(Self.issuer), "discovery": true, "jwksRefreshSeconds": 60,
                            "jwksMinRefetchSeconds": 5,
                            "keys": [
                                [
                                    "kid": "pinned", "publicKeyPEM": .string(TestKeys.rsa.publicKeyPEM),
                                    "algorithm": "RS256",
                                ]
                            ],
                        ]
                    ])
            }
        ).get()
        let issuer = configuration.tokens.issuers[0]
        #expect(issuer.staticKeys.map(\.kid) == ["pinned"])
        #expect(issuer.jwks?.refreshSeconds == 60 && issuer.jwks?.minRefetchSeconds == 5)
        #expect(issuer.jwks?.discovery != nil)
    }
}
