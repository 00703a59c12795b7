import Testing

@testable import AuthGateway

/// `tokens.dpop`, `routes[].dpop`, `.forwardDPoPProof` and `dpop.jkt` (docs/authentication.md).
@Suite("ConfigurationLoader: DPoP")
struct ConfigurationLoaderDPoPTests {
    func load(
        dpop: String = "{}", route: String = "", identity: String = "{}"
    ) -> Result<GatewayConfiguration, ConfigurationError> {
        let text = """
            {"listener": {}, "backends": {"api": {"urls": ["http://127.0.0.1:9100"]}},
             "routes": [{"name": "all", "pathPrefix": "/", "backend": "api", "auth": "optional"\(route)}],
             "identityHeaders": \(identity),
             "tokens": {"dpop": \(dpop), "introspection": {"url": "http://127.0.0.1:9000/introspect"}}}
            """
        do throws(ConfigurationError) {
            return .success(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/"))
        } catch {
            return .failure(error)
        }
    }

    func issues(dpop: String = "{}", route: String = "", identity: String = "{}") -> [String] {
        guard case .failure(let error) = self.load(dpop: dpop, route: route, identity: identity) else { return [] }
        return error.issues.map { "\($0.path): \($0.message)" }
    }

    @Test func defaults() throws {
        let configuration = try self.load().get()
        #expect(configuration.tokens.dpop.algorithms == [.ES256, .RS256, .PS256, .EdDSA])
        #expect(configuration.tokens.dpop.maxAgeSeconds == 60)
        #expect(configuration.tokens.dpop.leewaySeconds == 5)
        #expect(configuration.tokens.dpop.publicBaseURL == nil)
        #expect(configuration.tokens.dpop.nonce == false)
        #expect(configuration.routes[0].dpop == .allowed)
        #expect(configuration.routes[0].forwardDPoPProof == false)
    }

    @Test func everyFieldIsRead() throws {
        let configuration = try self.load(
            dpop:
                #"{"algorithms": ["ES256", "EdDSA"], "maxAgeSeconds": 30, "leewaySeconds": 0, "publicBaseURL": "https://API.example.com:443", "nonce": true}"#,
            route: #", "dpop": "required", "forwardDPoPProof": true"#,
            identity: #"{"X-Key": "dpop.jkt"}"#
        ).get()
        #expect(configuration.tokens.dpop.algorithms == [.ES256, .EdDSA])
        #expect(configuration.tokens.dpop.maxAgeSeconds == 30)
        #expect(configuration.tokens.dpop.leewaySeconds == 0)
        #expect(configuration.tokens.dpop.publicBaseURL == "https://api.example.com")
        #expect(configuration.tokens.dpop.nonce)
        #expect(configuration.routes[0].dpop == .required)
        #expect(configuration.routes[0].forwardDPoPProof)
        #expect(configuration.identityHeaders.first?.path == IdentityValuePath(source: .dpop, name: "jkt"))
    }

    @Test func errorsCarryTheirPaths() {
        #expect(self.issues(dpop: #"{"algorithms": ["HS256"]}"#).first?.hasPrefix("tokens.dpop.algorithms[0]:") == true)
        #expect(self.issues(dpop: #"{"algorithms": ["none"]}"#).first?.hasPrefix("tokens.dpop.algorithms[0]:") == true)
        #expect(
            self.issues(dpop: #"{"algorithms": []}"#) == ["tokens.dpop.algorithms: must list at least one algorithm"])
        #expect(self.issues(dpop: #"{"maxAgeSeconds": 0}"#).first?.hasPrefix("tokens.dpop.maxAgeSeconds:") == true)
        #expect(
            self.issues(dpop: #"{"publicBaseURL": "https://api.example.com/v1"}"#).first?.hasPrefix(
                "tokens.dpop.publicBaseURL:") == true)
        #expect(self.issues(dpop: #"{"nonce": "yes"}"#) == ["tokens.dpop.nonce: expected true or false, found string"])
        #expect(self.issues(dpop: #"{"maxAge": 10}"#).first?.hasPrefix("tokens.dpop.maxAge:") == true)
        #expect(
            self.issues(route: #", "dpop": "sometimes""#) == [
                "routes[0].dpop: must be \"off\", \"allowed\" or \"required\""
            ])
        #expect(
            self.issues(identity: #"{"X-Key": "dpop.thumbprint"}"#).first?.hasPrefix("identityHeaders.X-Key:") == true)
    }
}
