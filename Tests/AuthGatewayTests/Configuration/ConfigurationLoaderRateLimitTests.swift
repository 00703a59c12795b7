import Foundation
import Testing

@testable import AuthGateway

/// `rateLimits` and `sharedState.rateLimitSyncMilliseconds` (docs/rate-limits.md): every field
/// checked with its JSON path.
@Suite("ConfigurationLoader: rateLimits")
struct ConfigurationLoaderRateLimitTests {
    func document(_ rateLimits: String, extra: String = "") -> String {
        """
        {
          "listener": { "port": 8080 },
          "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
          "routes": [
            { "name": "default", "pathPrefix": "/api", "backend": "api", "auth": "none" },
            { "name": "public", "pathPrefix": "/", "backend": "api", "auth": "none" }
          ],
          "rateLimits": \(rateLimits)\(extra)
        }
        """
    }

    func load(_ rateLimits: String, extra: String = "") -> Result<GatewayConfiguration, ConfigurationError> {
        do throws(ConfigurationError) {
            return .success(
                try ConfigurationLoader(environment: [:]).load(
                    text: self.document(rateLimits, extra: extra), baseDirectory: "/nonexistent"))
        } catch {
            return .failure(error)
        }
    }

    func issues(_ rateLimits: String, extra: String = "") -> [String] {
        if case .failure(let error) = self.load(rateLimits, extra: extra) { return error.issues.map(\.description) }
        return []
    }

    @Test func readsTheSpecExampleWithDefaults() throws {
        let configuration = try self.load(
            """
            [
              { "name": "per-user", "key": "claims.sub", "requestsPerSecond": 20, "burst": 40, "routes": ["default"] },
              { "name": "per-ip-anonymous", "key": "client.ip", "requestsPerSecond": 0.5, "burst": 10, "routes": ["public"], "maxKeys": 5000 },
              { "name": "tenant", "key": "claims.org.id", "requestsPerSecond": 100, "burst": 1 },
              { "name": "whole-route", "key": "route", "requestsPerSecond": 1000, "burst": 2000 }
            ]
            """
        ).get()
        let limits = configuration.rateLimits
        #expect(limits.count == 4)
        #expect(
            limits[0]
                == RateLimitConfiguration(
                    name: "per-user", key: .claim("sub"), requestsPerSecond: 20, burst: 40, routes: ["default"],
                    maxKeys: 100_000))
        #expect(limits[1].key == .clientIP)
        #expect(limits[1].requestsPerSecond == 0.5)
        #expect(limits[1].maxKeys == 5000)
        #expect(limits[2].key == .claim("org.id"))
        #expect(limits[2].routes == nil)
        #expect(limits[2].applies(to: "public") && limits[2].applies(to: "default"))
        #expect(!limits[0].applies(to: "public"))
        #expect(limits[3].key == .route)
    }

    @Test func absentMeansNoLimits() throws {
        let configuration = try self.load("[]").get()
        #expect(configuration.rateLimits.isEmpty)
    }

    @Test func everyFieldIsCheckedWithItsPath() {
        let found = self.issues(
            """
            [
              { "name": "a", "key": "claims.", "requestsPerSecond": 0, "burst": 0, "maxKeys": 0, "routes": ["nope"], "window": 2 },
              { "name": "a", "key": "header.x-user", "requestsPerSecond": -1, "burst": 1.5 },
              { "key": "client.ip", "requestsPerSecond": "10", "burst": "2", "routes": [] },
              { "name": "b\\"c", "key": "route" },
              { "name": "d", "key": "profile.tenant", "requestsPerSecond": 1e12, "burst": 1, "routes": "default" },
              7
            ]
            """
        )
        for expected in [
            "rateLimits[0].key: expected \"claims.<name>\", \"profile.<name>\", \"client.ip\" or \"route\", found \"claims.\"",
            "rateLimits[0].requestsPerSecond: must be greater than 0 (at least 0.000001, at most 1000000000), found 0",
            "rateLimits[0].burst: must be between 1 and 1000000000, found 0",
            "rateLimits[0].maxKeys: must be between 1 and 100000000, found 0",
            "rateLimits[0].routes[0]: \"nope\" is not the name of a route",
            "rateLimits[0].window: unknown key",
            "rateLimits[1].name: duplicate rate limit name \"a\"",
            "rateLimits[1].key: expected \"claims.<name>\", \"profile.<name>\", \"client.ip\" or \"route\", found \"header.x-user\"",
            "rateLimits[1].requestsPerSecond: must be greater than 0 (at least 0.000001, at most 1000000000), found -1",
            "rateLimits[1].burst: expected a whole number, found 1.5",
            "rateLimits[2].name: is required",
            "rateLimits[2].requestsPerSecond: expected a number, found string",
            "rateLimits[2].burst: expected a whole number, found string",
            "rateLimits[2].routes: must name at least one route (leave it out to apply to every route)",
            "rateLimits[3].name: \"b\"c\" must be printable ASCII without \" or \\",
            "rateLimits[3].requestsPerSecond: is required",
            "rateLimits[3].burst: is required",
            "rateLimits[4].requestsPerSecond: must be greater than 0 (at least 0.000001, at most 1000000000), found 1e12",
            "rateLimits[4].routes: expected an array of strings, found string",
            "rateLimits[5]: expected an object, found number",
            // profile.* needs the profile section.
            "authService.profile: is required because identityHeaders, a route's require or a rate limit's key uses profile.*",
        ] {
            #expect(found.contains(expected), "missing: \(expected)\nfound: \(found)")
        }
    }

    @Test func rateLimitsMustBeAnArray() {
        #expect(self.issues(#"{ "name": "a" }"#).contains("rateLimits: expected an array, found object"))
    }

    @Test func fractionalRatesAreAccepted() throws {
        let configuration = try self.load(
            #"[ { "name": "slow", "key": "client.ip", "requestsPerSecond": 0.001, "burst": 1 } ]"#
        ).get()
        #expect(configuration.rateLimits[0].requestsPerSecond == 0.001)
    }

    @Test func syncIntervalDefaultsTo200AndIsChecked() throws {
        let key = Data(repeating: 0xA5, count: 32).base64EncodedString()
        let sharedState =
            #", "sharedState": { "postgres": { "url": "postgres://gateway@db/auth" }, "encryptionKeyBase64": "\#(key)" }"#
        let configuration = try self.load("[]", extra: sharedState).get()
        #expect(configuration.sharedState?.rateLimitSyncMilliseconds == 200)
        let custom = try self.load(
            "[]",
            extra: sharedState.replacingOccurrences(
                of: #""encryptionKeyBase64""#, with: #""rateLimitSyncMilliseconds": 50, "encryptionKeyBase64""#)
        ).get()
        #expect(custom.sharedState?.rateLimitSyncMilliseconds == 50)
        let bad = self.issues(
            "[]",
            extra: sharedState.replacingOccurrences(
                of: #""encryptionKeyBase64""#, with: #""rateLimitSyncMilliseconds": 0, "encryptionKeyBase64""#))
        #expect(bad.contains("sharedState.rateLimitSyncMilliseconds: must be between 10 and 60000, found 0"), "\(bad)")
    }

    @Test func profileKeysMarkTheirRoutesAsNeedingTheProfile() throws {
        var configuration = try self.load(
            #"[ { "name": "per-ip", "key": "client.ip", "requestsPerSecond": 1, "burst": 1 } ]"#
        ).get()
        #expect(configuration.routesWithProfileRateLimits.isEmpty)
        configuration.rateLimits.append(
            RateLimitConfiguration(
                name: "tenant", key: .profile("tenant"), requestsPerSecond: 1, burst: 1, routes: ["public"]))
        #expect(configuration.routesWithProfileRateLimits == ["public"])
    }
}
