import Testing

@testable import AuthGateway

/// `tokens.introspection` (docs/authentication.md): defaults, and every error with its JSON path.
@Suite("ConfigurationLoader: tokens.introspection")
struct ConfigurationLoaderIntrospectionTests {
    func load(_ introspection: String, auth: String = "required") -> Result<GatewayConfiguration, ConfigurationError> {
        let text = """
            {"listener": {}, "backends": {"api": {"urls": ["http://127.0.0.1:9100"]}},
             "routes": [{"name": "all", "pathPrefix": "/", "backend": "api", "auth": "\(auth)"}],
             "tokens": {"introspection": \(introspection)}}
            """
        do throws(ConfigurationError) {
            return .success(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/"))
        } catch {
            return .failure(error)
        }
    }

    func issues(_ introspection: String) -> [String] {
        guard case .failure(let error) = self.load(introspection) else { return [] }
        return error.issues.map { "\($0.path): \($0.message)" }
    }

    @Test func defaultsAndAnIntrospectionEndpointStandsInForIssuers() throws {
        let configuration = try self.load(#"{"url": "https://idp.example.com/oauth2/introspect"}"#).get()
        let introspection = try #require(configuration.tokens.introspection)
        #expect(introspection.url?.description == "https://idp.example.com/oauth2/introspect")
        #expect(introspection.discoveryIssuer == nil)
        #expect(introspection.clientAuthentication == .basic)
        #expect(introspection.cacheSeconds == 60)
        #expect(introspection.negativeCacheSeconds == 5)
        #expect(introspection.timeoutMilliseconds == 1000)
        #expect(introspection.forJWTs == false)
        #expect(introspection.identityIssuer == "https://idp.example.com/oauth2/introspect")
        #expect(configuration.tokens.issuers.isEmpty)
    }

    @Test func everyFieldIsRead() throws {
        let configuration = try self.load(
            tokens: #"""
                {"issuers": [\#(Self.jwksIssuer)],
                 "introspection": {"url": "http://127.0.0.1:9000/introspect", "clientId": "gw", "clientSecret": "s", "clientAuthentication": "form",
                 "cacheSeconds": 30, "negativeCacheSeconds": 2, "timeoutMilliseconds": 250, "issuer": "https://idp",
                 "audiences": ["api"], "forJWTs": true}}
                """#
        ).get()
        let introspection = try #require(configuration.tokens.introspection)
        #expect(introspection.clientID == "gw")
        #expect(introspection.clientSecret == "s")
        #expect(introspection.clientAuthentication == .form)
        #expect(introspection.cacheSeconds == 30)
        #expect(introspection.negativeCacheSeconds == 2)
        #expect(introspection.timeoutMilliseconds == 250)
        #expect(introspection.identityIssuer == "https://idp")
        #expect(introspection.audiences == ["api"])
        #expect(introspection.forJWTs)
    }

    @Test func errorsCarryTheirPaths() {
        #expect(
            self.issues("{}") == [
                "tokens.introspection.url: is required (unless tokens.introspection.discoveryIssuer or authService.discoveryIssuer names an issuer with \"discovery\": true)"
            ])
        #expect(self.issues(#"{"url": "ftp://x"}"#).first?.hasPrefix("tokens.introspection.url: \"ftp://x\"") == true)
        #expect(
            self.issues(#"{"url": "http://x", "clientSecret": "s"}"#) == [
                "tokens.introspection.clientSecret: needs clientId"
            ])
        #expect(
            self.issues(#"{"url": "http://x", "clientId": "a", "clientAuthentication": "digest"}"#) == [
                "tokens.introspection.clientAuthentication: must be \"basic\" or \"form\""
            ])
        #expect(
            self.issues(#"{"url": "http://x", "cacheSeconds": 0}"#).first?.hasPrefix(
                "tokens.introspection.cacheSeconds:") == true)
        #expect(
            self.issues(#"{"url": "http://x", "timeoutMilliseconds": 1.5}"#).first?.hasPrefix(
                "tokens.introspection.timeoutMilliseconds:") == true)
        #expect(
            self.issues(#"{"url": "http://x", "audiences": []}"#).first?.hasPrefix("tokens.introspection.audiences:")
                == true)
        #expect(
            self.issues(#"{"url": "http://x", "forJWT": true}"#).first?.hasPrefix("tokens.introspection.forJWT:")
                == true)
    }

    static let jwksIssuer = #"{"issuer": "https://idp", "jwksURL": "https://idp/jwks"}"#

    /// `forJWTs` needs somewhere to introspect (url or a discovered endpoint) and JWTs to
    /// introspect (an issuer); it must be a boolean.
    @Test func forJWTsErrorsCarryTheirPaths() {
        #expect(
            self.issues(tokens: #"{"issuers": [\#(Self.jwksIssuer)], "introspection": {"forJWTs": true}}"#) == [
                "tokens.introspection.url: is required (unless tokens.introspection.discoveryIssuer or authService.discoveryIssuer names an issuer with \"discovery\": true)"
            ])
        #expect(
            self.issues(tokens: #"{"introspection": {"url": "http://x", "forJWTs": true}}"#) == [
                "tokens.introspection.forJWTs: needs an issuer in tokens.issuers (it introspects JWTs that verified against one)"
            ])
        #expect(
            self.issues(
                tokens: #"{"issuers": [\#(Self.jwksIssuer)], "introspection": {"url": "http://x", "forJWTs": "yes"}}"#
            ).first?.hasPrefix("tokens.introspection.forJWTs:") == true)
        // Off (the default) without issuers: an opaque-tokens-only gateway.
        #expect(self.issues(tokens: #"{"introspection": {"url": "http://x", "forJWTs": false}}"#) == [])
        // With a discovered endpoint.
        #expect(
            self.issues(
                tokens:
                    #"{"issuers": [\#(Self.discoveredIssuer)], "introspection": {"discoveryIssuer": "https://idp.example.com", "forJWTs": true}}"#
            ) == [])
    }

    // MARK: The discovered introspection_endpoint (docs/authentication.md)

    func load(tokens: String, authService: String? = nil) -> Result<GatewayConfiguration, ConfigurationError> {
        let text = """
            {"listener": {}, "backends": {"api": {"urls": ["http://127.0.0.1:9100"]}},
             "routes": [{"name": "all", "pathPrefix": "/", "backend": "api"}],
             \(authService.map { #""authService": \#($0),"# } ?? "")
             "tokens": \(tokens)}
            """
        do throws(ConfigurationError) {
            return .success(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/"))
        } catch {
            return .failure(error)
        }
    }

    func issues(tokens: String, authService: String? = nil) -> [String] {
        guard case .failure(let error) = self.load(tokens: tokens, authService: authService) else { return [] }
        return error.issues.map { "\($0.path): \($0.message)" }
    }

    static let discoveredIssuer = #"{"issuer": "https://idp.example.com", "discovery": true}"#

    @Test func withoutURLTheDiscoveryDocumentOfTheNamedIssuerSuppliesTheEndpoint() throws {
        let configuration = try self.load(
            tokens:
                #"{"issuers": [\#(Self.discoveredIssuer)], "introspection": {"discoveryIssuer": "https://idp.example.com"}}"#
        ).get()
        let introspection = try #require(configuration.tokens.introspection)
        #expect(introspection.url == nil)
        #expect(introspection.discoveryIssuer == "https://idp.example.com")
        #expect(introspection.identityIssuer == "https://idp.example.com")
        // The document must then carry introspection_endpoint (else it is refused).
        #expect(configuration.tokens.issuers[0].jwks?.discovery?.needsIntrospectionEndpoint == true)
    }

    @Test func withoutURLAuthServiceDiscoveryIssuerIsTheDefault() throws {
        let configuration = try self.load(
            tokens:
                #"{"issuers": [\#(Self.discoveredIssuer)], "introspection": {"clientId": "gw", "clientSecret": "s"}}"#,
            authService: #"{"discoveryIssuer": "https://idp.example.com"}"#
        ).get()
        #expect(configuration.tokens.introspection?.discoveryIssuer == "https://idp.example.com")
        #expect(configuration.tokens.issuers[0].jwks?.discovery?.needsIntrospectionEndpoint == true)
        // With a url, discovery is not asked for the endpoint.
        let fixed = try self.load(
            tokens:
                #"{"issuers": [\#(Self.discoveredIssuer)], "introspection": {"url": "https://idp.example.com/introspect"}}"#,
            authService: #"{"discoveryIssuer": "https://idp.example.com"}"#
        ).get()
        #expect(fixed.tokens.introspection?.discoveryIssuer == nil)
        #expect(fixed.tokens.issuers[0].jwks?.discovery?.needsIntrospectionEndpoint == false)
    }

    @Test func discoveryErrorsCarryTheirPaths() {
        #expect(
            self.issues(
                tokens:
                    #"{"issuers": [\#(Self.discoveredIssuer)], "introspection": {"discoveryIssuer": "https://other"}}"#)
                == [
                    "tokens.introspection.discoveryIssuer: \"https://other\" is not an issuer of tokens.issuers"
                ])
        let withKeys = #"{"issuer": "https://idp.example.com", "jwksURL": "https://idp.example.com/jwks"}"#
        #expect(
            self.issues(
                tokens: #"{"issuers": [\#(withKeys)], "introspection": {"discoveryIssuer": "https://idp.example.com"}}"#
            ) == [
                "tokens.introspection.discoveryIssuer: issuer \"https://idp.example.com\" does not have \"discovery\": true (tokens.issuers[0])"
            ])
        #expect(
            self.issues(
                tokens:
                    #"{"issuers": [\#(Self.discoveredIssuer)], "introspection": {"url": "http://x", "discoveryIssuer": "https://idp.example.com"}}"#
            ) == [
                "tokens.introspection.discoveryIssuer: set url or discoveryIssuer, not both"
            ])
    }
}
