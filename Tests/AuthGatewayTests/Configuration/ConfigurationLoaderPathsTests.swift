import Foundation
import Testing

@testable import AuthGateway

/// `paths` (docs/forwarding.md, "Request targets"): defaults, every value checked with its JSON
/// path, route paths that no canonical path could match, and the warning for `keep`.
@Suite("ConfigurationLoader: paths")
struct ConfigurationLoaderPathsTests {
    func load(paths: String? = nil, routes: String? = nil) -> Result<GatewayConfiguration, ConfigurationError> {
        let text = """
            {
              "listener": { "port": 8080 },
              "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": \(routes ?? #"[ { "name": "all", "pathPrefix": "/", "backend": "api", "auth": "none" } ]"#)
              \(paths.map { #", "paths": \#($0)"# } ?? "")
            }
            """
        do throws(ConfigurationError) {
            return .success(try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/nonexistent"))
        } catch {
            return .failure(error)
        }
    }

    func issues(paths: String? = nil, routes: String? = nil) -> [String] {
        if case .failure(let error) = self.load(paths: paths, routes: routes) { return error.issues.map(\.description) }
        return []
    }

    @Test func defaultsRefuseEscapedSlashesAndMergeSlashes() throws {
        let configuration = try self.load().get()
        #expect(configuration.paths == PathSettings(escapedSlashes: .reject, mergeSlashes: true))
        #expect(configuration.warnings.isEmpty)
    }

    @Test func readsEverySetting() throws {
        for mode in PathSettings.EscapedSlashes.allCases {
            let configuration = try self.load(
                paths: #"{ "escapedSlashes": "\#(mode.rawValue)", "mergeSlashes": false }"#
            )
            .get()
            #expect(configuration.paths == PathSettings(escapedSlashes: mode, mergeSlashes: false))
        }
    }

    @Test func everyValueIsCheckedWithItsPath() {
        #expect(
            self.issues(paths: #"{ "escapedSlashes": "allow", "mergeSlashes": "yes", "normalize": true }"#) == [
                "paths.escapedSlashes: must be \"reject\", \"decode\" or \"keep\", not \"allow\"",
                "paths.mergeSlashes: expected true or false, found string",
                "paths.normalize: unknown key",
            ])
    }

    /// `keep` works but weakens the promise: `check` and every start say so.
    @Test func keepIsWarnedAbout() throws {
        let configuration = try self.load(paths: #"{ "escapedSlashes": "keep" }"#).get()
        #expect(configuration.warnings.count == 1)
        #expect(configuration.warnings.first?.hasPrefix("paths.escapedSlashes: \"keep\"") == true)
    }

    /// A route path that is not canonical could never match a request: an error with the
    /// spelling to write instead (or the refusal it would meet).
    @Test func nonCanonicalRoutePathsAreRefused() {
        let routes = #"""
            [ { "name": "a", "pathPrefix": "/api//v1/", "backend": "api", "auth": "none" },
              { "name": "b", "path": "/a/./b", "backend": "api", "auth": "none" },
              { "name": "c", "pathPrefix": "/%7Euser/", "backend": "api", "auth": "none" },
              { "name": "d", "pathPrefix": "/pkg/@scope%2Fname", "backend": "api", "auth": "none" },
              { "name": "e", "pathPrefix": "/public/", "backend": "api", "auth": "none" } ]
            """#
        #expect(
            self.issues(routes: routes) == [
                "routes[0].pathPrefix: \"/api//v1/\" is not canonical, so no request matches it: write \"/api/v1/\" (docs/forwarding.md)",
                "routes[1].path: \"/a/./b\" is not canonical, so no request matches it: write \"/a/b\" (docs/forwarding.md)",
                "routes[2].pathPrefix: \"/%7Euser/\" is not canonical, so no request matches it: write \"/~user/\" (docs/forwarding.md)",
                "routes[3].pathPrefix: \"/pkg/@scope%2Fname\" is refused as a request path: The path holds an escaped \"/\" or \"\\\" (%2F, %5C)",
            ])
        // Under `keep`, the escaped slash is an ordinary byte: the route is fine.
        #expect(
            self.issues(
                paths: #"{ "escapedSlashes": "keep" }"#,
                routes: #"[ { "name": "d", "pathPrefix": "/pkg/@scope%2Fname", "backend": "api", "auth": "none" } ]"#
            ).isEmpty)
    }
}
