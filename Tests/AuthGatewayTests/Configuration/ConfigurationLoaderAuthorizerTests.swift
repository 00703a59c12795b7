import Foundation
import Testing

@testable import AuthGateway

/// `authorizer` (docs/authorizer.md): defaults, and every field checked with its JSON path.
@Suite("ConfigurationLoader: authorizer")
struct ConfigurationLoaderAuthorizerTests {
    func load(_ authorizer: String, extra: String = "") -> Result<GatewayConfiguration, ConfigurationError> {
        let text = """
            {
              "listener": { "port": 8080 },
              "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": [ { "name": "public", "pathPrefix": "/", "backend": "api", "auth": "none" } ],
              "authorizer": \(authorizer)\(extra)
            }
            """
        do throws(ConfigurationError) {
            return .success(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/nonexistent"))
        } catch {
            return .failure(error)
        }
    }

    func issues(_ authorizer: String, extra: String = "") -> [String] {
        if case .failure(let error) = self.load(authorizer, extra: extra) { return error.issues.map(\.description) }
        return []
    }

    @Test func defaultsToTheStandardPrefixAndLoopbackOnly() throws {
        let authorizer = try #require(try self.load("{}").get().authorizer)
        #expect(authorizer.pathPrefix == "/.gateway/authz/")
        #expect(authorizer.trustedPeers.map(\.description) == ["127.0.0.0/8", "::1/128"])
    }

    @Test func absentMeansNoAuthorizer() throws {
        let text = """
            { "listener": { "port": 8080 }, "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": [ { "name": "public", "pathPrefix": "/", "backend": "api", "auth": "none" } ] }
            """
        #expect(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/").authorizer == nil)
    }

    @Test func readsTheSpecExample() throws {
        let authorizer = try #require(
            try self.load(#"{ "pathPrefix": "/authz/", "trustedPeers": ["127.0.0.1/32", "10.0.0.0/8", "fd00::1"] }"#)
                .get().authorizer)
        #expect(authorizer.pathPrefix == "/authz/")
        #expect(authorizer.trustedPeers.map(\.description) == ["127.0.0.1/32", "10.0.0.0/8", "fd00::1/128"])
    }

    @Test func everyFieldIsCheckedWithItsPath() {
        #expect(
            self.issues(#"{ "pathPrefix": "authz", "trustedPeers": ["10.0.0.0/33", "nope"], "extra": 1 }"#) == [
                "authorizer.pathPrefix: must be a path other than \"/\" that starts and ends with \"/\"",
                "authorizer.trustedPeers[0]: \"10.0.0.0/33\" is not an IP address or CIDR block",
                "authorizer.trustedPeers[1]: \"nope\" is not an IP address or CIDR block",
                "authorizer.extra: unknown key",
            ])
        #expect(
            self.issues(#"{ "pathPrefix": "/", "trustedPeers": [] }"#) == [
                "authorizer.pathPrefix: must be a path other than \"/\" that starts and ends with \"/\"",
                "authorizer.trustedPeers: must name at least one address or CIDR block",
            ])
        #expect(self.issues(#"{ "pathPrefix": "/a" }"#).count == 1)
        #expect(self.issues(#""yes""#).count == 1)
    }

    @Test func mustNotHideTheHealthPaths() {
        #expect(
            self.issues(#"{ "pathPrefix": "/ops/" }"#, extra: #", "health": { "path": "/ops/healthz" }"#) == [
                "authorizer.pathPrefix: \"/ops/\" contains the health path \"/ops/healthz\""
            ])
    }
}
