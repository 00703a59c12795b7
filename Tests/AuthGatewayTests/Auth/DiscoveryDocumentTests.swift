import Testing

@testable import AuthGateway

/// Validation of OpenID Connect discovery documents (docs/authentication.md), without I/O.
@Suite("DiscoveryDocument")
struct DiscoveryDocumentTests {
    static let issuer = "https://idp.test/realms/main"

    static func requirements(
        token: Bool = false, userinfo: Bool = false, issuer: String = Self.issuer
    ) -> DiscoveryConfiguration {
        DiscoveryConfiguration(
            documentURL: DiscoveryConfiguration.documentURL(forIssuer: issuer)!, needsTokenEndpoint: token,
            needsUserinfoEndpoint: userinfo)
    }

    static func document(_ fields: JSONObject) -> String { JSONValue.object(fields).jsonText }

    static let complete: JSONObject = [
        "issuer": .string(Self.issuer),
        "jwks_uri": "https://idp.test/realms/main/protocol/openid-connect/certs",
        "token_endpoint": "https://login.idp.test:8443/realms/main/token?x=1",
        "userinfo_endpoint": "https://idp.test/realms/main/userinfo",
        "authorization_endpoint": "https://idp.test/realms/main/auth",
        "response_types_supported": ["code"],
    ]

    private func parse(
        _ fields: JSONObject, token: Bool = false, userinfo: Bool = false
    ) -> Result<DiscoveryDocument, DiscoveryError> {
        do throws(DiscoveryError) {
            return .success(
                try DiscoveryDocument.parse(
                    Self.document(fields), expectedIssuer: Self.issuer,
                    requirements: Self.requirements(token: token, userinfo: userinfo)))
        } catch {
            return .failure(error)
        }
    }

    private func failure(_ fields: JSONObject, token: Bool = false, userinfo: Bool = false) -> DiscoveryError? {
        if case .failure(let error) = self.parse(fields, token: token, userinfo: userinfo) { return error }
        return nil
    }

    private func editing(_ edits: [String: JSONValue?]) -> JSONObject {
        var fields = Self.complete
        for (key, value) in edits { fields[key] = value }
        return fields
    }

    @Test func aCompleteDocumentGivesEveryEndpoint() throws {
        let document = try self.parse(Self.complete, token: true, userinfo: true).get()
        #expect(document.issuer == Self.issuer)
        #expect(document.jwksURI.description == "https://idp.test/realms/main/protocol/openid-connect/certs")
        #expect(document.tokenEndpoint?.host == "login.idp.test")
        #expect(document.tokenEndpoint?.port == 8443)
        #expect(document.tokenEndpoint?.pathAndQuery == "/realms/main/token?x=1")
        #expect(document.userinfoEndpoint?.pathAndQuery == "/realms/main/userinfo")
    }

    @Test func theDocumentURLIsTheIssuerWithoutATrailingSlashPlusTheWellKnownPath() {
        #expect(
            DiscoveryConfiguration.documentURL(forIssuer: "https://idp.test/realms/main")?.description
                == "https://idp.test/realms/main/.well-known/openid-configuration")
        #expect(
            DiscoveryConfiguration.documentURL(forIssuer: "https://idp.test/realms/main/")?.description
                == "https://idp.test/realms/main/.well-known/openid-configuration")
        #expect(
            DiscoveryConfiguration.documentURL(forIssuer: "https://idp.test")?.description
                == "https://idp.test/.well-known/openid-configuration")
        #expect(
            DiscoveryConfiguration.documentURL(forIssuer: "http://127.0.0.1:9000")?.description
                == "http://127.0.0.1:9000/.well-known/openid-configuration")
        // Not a URL an OpenID Provider can have as its issuer.
        #expect(DiscoveryConfiguration.documentURL(forIssuer: "idp-main") == nil)
        #expect(DiscoveryConfiguration.documentURL(forIssuer: "https://idp.test?realm=main") == nil)
        #expect(DiscoveryConfiguration.documentURL(forIssuer: "https://idp.test#main") == nil)
    }

    /// Discovery §4.3: the issuer must be identical — no case folding, no trailing-slash
    /// leniency, no scheme change.
    @Test(arguments: [
        "https://idp.test/realms/main/", "https://IDP.test/realms/main", "http://idp.test/realms/main",
        "https://idp.test/realms/other", "",
    ])
    func anIssuerThatIsNotExactlyTheConfiguredOneIsRefused(_ issuer: String) {
        let error = self.failure(self.editing(["issuer": .string(issuer)]))
        #expect(error?.errorType == "discovery.issuer_mismatch")
        #expect(
            error?.description
                == "the discovery document's issuer \"\(issuer)\" is not the configured issuer \"\(Self.issuer)\"")
    }

    @Test func anIssuerThatIsMissingOrNotAStringIsRefused() {
        #expect(self.failure(self.editing(["issuer": nil]))?.description == "the discovery document has no issuer")
        #expect(
            self.failure(self.editing(["issuer": .array([.string(Self.issuer)])]))?.errorType
                == "discovery.missing_field")
    }

    @Test func jwksURIMustBePresentAndAbsolute() {
        #expect(self.failure(self.editing(["jwks_uri": nil]))?.description == "the discovery document has no jwks_uri")
        let relative = self.failure(self.editing(["jwks_uri": "/protocol/openid-connect/certs"]))
        #expect(relative?.errorType == "discovery.invalid_url")
        #expect(
            relative?.description.hasPrefix(
                "the discovery document's jwks_uri \"/protocol/openid-connect/certs\" must start with") == true)
        #expect(
            self.failure(self.editing(["jwks_uri": 42]))?.description
                == "the discovery document's jwks_uri is not a string")
        #expect(self.failure(self.editing(["jwks_uri": "ftp://idp.test/certs"]))?.errorType == "discovery.invalid_url")
        #expect(
            self.failure(self.editing(["jwks_uri": "https://idp.test/certs#keys"]))?.errorType
                == "discovery.invalid_url")
    }

    /// A cleartext endpoint in an https issuer's document would let anyone on the path swap
    /// the signing keys or read refresh tokens.
    @Test func anHTTPSIssuersEndpointsMustBeHTTPS() throws {
        let error = self.failure(self.editing(["jwks_uri": "http://idp.test/certs"]))
        #expect(
            error?.description
                == "the discovery document's jwks_uri \"http://idp.test/certs\" is not https, but the issuer is")
        #expect(
            self.failure(self.editing(["token_endpoint": "http://idp.test/token"]), token: true)?.errorType
                == "discovery.invalid_url")
        // Not needed: dropped, not fatal.
        #expect(try self.parse(self.editing(["token_endpoint": "http://idp.test/token"])).get().tokenEndpoint == nil)
    }

    @Test func anHTTPIssuerMayUseHTTPEndpoints() throws {
        let issuer = "http://127.0.0.1:9000"
        let text = Self.document([
            "issuer": .string(issuer), "jwks_uri": "http://127.0.0.1:9000/jwks",
            "userinfo_endpoint": "https://127.0.0.1:9443/userinfo",
        ])
        let document = try DiscoveryDocument.parse(
            text, expectedIssuer: issuer, requirements: Self.requirements(userinfo: true, issuer: issuer))
        #expect(document.jwksURI.description == "http://127.0.0.1:9000/jwks")
        #expect(document.userinfoEndpoint?.isTLS == true)
    }

    @Test func theTokenAndUserinfoEndpointsAreRequiredOnlyWhenTheConfigurationUsesThem() throws {
        let bare = self.editing(["token_endpoint": nil, "userinfo_endpoint": nil])
        let document = try self.parse(bare).get()
        #expect(document.tokenEndpoint == nil && document.userinfoEndpoint == nil)
        #expect(self.failure(bare, token: true)?.description == "the discovery document has no token_endpoint")
        #expect(self.failure(bare, userinfo: true)?.description == "the discovery document has no userinfo_endpoint")
        #expect(
            self.failure(self.editing(["userinfo_endpoint": "userinfo"]), userinfo: true)?.errorType
                == "discovery.invalid_url")
        // Present but unusable and not needed: ignored.
        #expect(try self.parse(self.editing(["userinfo_endpoint": "userinfo"])).get().userinfoEndpoint == nil)
    }

    @Test func aDocumentThatIsNotAJSONObjectIsRefused() {
        for text in ["", "not json", "[]", "\"https://idp.test\"", "{\"issuer\": "] {
            do throws(DiscoveryError) {
                _ = try DiscoveryDocument.parse(text, expectedIssuer: Self.issuer, requirements: Self.requirements())
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.errorType == "discovery.not_json")
            }
        }
    }

    /// A reload may start relying on an endpoint the kept document lacks.
    @Test func aKeptDocumentIsCheckedAgainstNewRequirements() throws {
        let document = try self.parse(self.editing(["userinfo_endpoint": nil])).get()
        #expect(document.unmet(Self.requirements(token: true)) == nil)
        #expect(
            document.unmet(Self.requirements(userinfo: true))?.description
                == "the discovery document has no userinfo_endpoint")
    }

    /// `introspection_endpoint` (RFC 8414 §2): read when present and usable; required (and
    /// then checked like the others) when `tokens.introspection` has no `url`.
    @Test func theIntrospectionEndpointIsReadAndRequiredOnlyWhenUsed() throws {
        var requirements = Self.requirements()
        func parse(_ fields: JSONObject) -> Result<DiscoveryDocument, DiscoveryError> {
            do throws(DiscoveryError) {
                return .success(
                    try DiscoveryDocument.parse(
                        Self.document(fields), expectedIssuer: Self.issuer, requirements: requirements))
            } catch {
                return .failure(error)
            }
        }
        #expect(try parse(Self.complete).get().introspectionEndpoint == nil)
        let with = self.editing(["introspection_endpoint": "https://idp.test/realms/main/introspect"])
        #expect(try parse(with).get().introspectionEndpoint?.description == "https://idp.test/realms/main/introspect")
        // Cleartext beside an https issuer: ignored when optional, refused when required.
        let cleartext = self.editing(["introspection_endpoint": "http://idp.test/introspect"])
        #expect(try parse(cleartext).get().introspectionEndpoint == nil)
        requirements.needsIntrospectionEndpoint = true
        #expect(try parse(with).get().introspectionEndpoint != nil)
        guard case .failure(let missing) = parse(Self.complete), case .failure(let insecure) = parse(cleartext) else {
            Issue.record("a document without a usable introspection_endpoint was accepted")
            return
        }
        #expect(missing.description == "the discovery document has no introspection_endpoint")
        #expect(insecure.errorType == "discovery.invalid_url")
        #expect(try parse(with).get().unmet(requirements) == nil)
        let kept = try DiscoveryDocument.parse(
            Self.document(Self.complete), expectedIssuer: Self.issuer, requirements: Self.requirements())
        #expect(kept.unmet(requirements)?.description == "the discovery document has no introspection_endpoint")
    }
}
