import Foundation
import Testing

@testable import AuthGateway

/// `config/examples/web-app.json`: browser sign-in, API keys, CORS, a policy and authorizer mode
/// in one file, as docs/configuration.md shows it. It must keep loading as the keys evolve.
@Suite("config/examples/web-app.json")
struct WebAppExampleTests {
    private static let path = Fixtures.repositoryURL("config/examples/web-app.json").path

    @Test("loads with OIDC_CLIENT_SECRET from the environment")
    func loads() throws {
        let configuration = try ConfigurationLoader(environment: ["OIDC_CLIENT_SECRET": "s3cr:t"]).load(path: Self.path)
        #expect(configuration.routes.map(\.name) == ["deploy", "api", "app"])
        #expect(configuration.routes.map(\.signIn) == [false, false, true])
        #expect(configuration.routes[0].require.fields.map(\.description) == ["claims.scope", "claims.sub"])
        let signIn = try #require(configuration.browserSignIn)
        #expect(signIn.clientID == "gateway")
        #expect(signIn.clientSecret == "s3cr:t")
        #expect(signIn.redirectURI == "https://app.example.com/.gateway/callback")
        #expect(signIn.sessionCookieName == "__Host-gateway-session")
        let keys = try #require(configuration.tokens.apiKeys)
        #expect(keys.keys.map(\.id) == ["ci-bot"])
        #expect(keys.keys[0].sha256.count == 32)
        #expect(keys.keys[0].expiresAt != nil)
        let cors = try #require(configuration.routes[1].cors)
        #expect(cors.allowOrigins == ["https://admin.example.com"])
        #expect(cors.allowCredentials)
        #expect(configuration.authorizer?.trustedPeers.map(\.description) == ["127.0.0.1/32", "10.0.0.0/8"])
    }

    @Test("without the client secret it names the variable")
    func withoutSecret() {
        do throws(ConfigurationError) {
            _ = try ConfigurationLoader(environment: [:]).load(path: Self.path)
            Issue.record("expected an error")
        } catch {
            #expect(error.issues.map(\.path) == ["browserSignIn.clientSecret"])
            #expect(error.issues.first?.message.contains("OIDC_CLIENT_SECRET") == true)
        }
    }
}
