import Foundation
import Testing

@testable import AuthGateway

/// `routes[].cors` (docs/policies.md, "CORS"): the defaults, and every field checked with its
/// JSON path.
@Suite("ConfigurationLoader: routes[].cors")
struct ConfigurationLoaderCORSTests {
    func load(_ cors: String) -> Result<GatewayConfiguration, ConfigurationError> {
        let text = """
            {
              "listener": { "port": 8080 },
              "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": [ { "name": "default", "pathPrefix": "/", "backend": "api", "auth": "none", "cors": \(cors) } ]
            }
            """
        do throws(ConfigurationError) {
            return .success(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/nonexistent"))
        } catch {
            return .failure(error)
        }
    }

    func issues(_ cors: String) -> [String] {
        if case .failure(let error) = self.load(cors) { return error.issues.map(\.description) }
        return []
    }

    @Test func readsTheDocumentedExample() throws {
        let configuration = try self.load(
            """
            {"allowOrigins": ["https://app.example.com"], "allowMethods": ["GET", "post"],
             "allowHeaders": ["Authorization", "Content-Type"], "exposeHeaders": ["X-Request-Id"],
             "allowCredentials": true, "maxAgeSeconds": 600}
            """
        ).get()
        let cors = try #require(configuration.routes[0].cors)
        #expect(cors.allowOrigins == ["https://app.example.com"])
        #expect(cors.allowMethods == ["GET", "POST"])
        #expect(cors.allowHeaders == ["authorization", "content-type"])
        #expect(cors.exposeHeaders == ["X-Request-Id"])
        #expect(cors.allowCredentials)
        #expect(cors.maxAgeSeconds == 600)
    }

    @Test func defaults() throws {
        let cors = try #require(try self.load(#"{"allowOrigins": ["*"]}"#).get().routes[0].cors)
        #expect(cors.allowMethods == ["GET", "HEAD", "POST"])
        #expect(cors.allowHeaders.isEmpty && cors.exposeHeaders.isEmpty)
        #expect(!cors.allowCredentials)
        #expect(cors.maxAgeSeconds == nil)
        #expect(cors.allows(origin: "https://anything.example"))
    }

    @Test func everyFieldIsCheckedWithItsPath() {
        let cases: [(cors: String, issue: String)] = [
            (#"{}"#, "routes[0].cors.allowOrigins: is required"),
            (#"{"allowOrigins": ["https://a.example/path"]}"#, "routes[0].cors.allowOrigins[0]:"),
            (#"{"allowOrigins": ["a.example"]}"#, "routes[0].cors.allowOrigins[0]:"),
            (#"{"allowOrigins": ["*"], "allowCredentials": true}"#, "routes[0].cors.allowOrigins: \"*\" cannot"),
            (
                #"{"allowOrigins": ["https://a.example", "*"], "allowCredentials": true}"#,
                "routes[0].cors.allowOrigins: \"*\" cannot"
            ),
            // The opaque origin names no one (docs/policies.md, "CORS").
            (#"{"allowOrigins": ["null"]}"#, "routes[0].cors.allowOrigins[0]: \"null\" is not an origin"),
            (#"{"allowOrigins": ["*"], "allowMethods": ["G T"]}"#, "routes[0].cors.allowMethods[0]:"),
            (#"{"allowOrigins": ["*"], "allowHeaders": ["a b"]}"#, "routes[0].cors.allowHeaders[0]:"),
            (#"{"allowOrigins": ["*"], "exposeHeaders": ["x y"]}"#, "routes[0].cors.exposeHeaders[0]:"),
            (#"{"allowOrigins": ["*"], "maxAgeSeconds": 100000}"#, "routes[0].cors.maxAgeSeconds:"),
            (#"{"allowOrigins": ["*"], "allowOrigin": ["*"]}"#, "routes[0].cors.allowOrigin:"),
        ]
        for (cors, issue) in cases {
            let found = self.issues(cors)
            #expect(found.contains { $0.hasPrefix(issue) }, "missing: \(issue)\nfound: \(found)")
        }
    }
}
