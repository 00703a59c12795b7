import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `check --request` (docs/policies.md, "check --request"): one request decided offline by the
/// proxy's own route table, steps and requirement walk, with its explanation and exit status.
@Suite("check --request")
struct RequestCheckTests {
    static let key = "agk_check-0123456789abcdefghijklmnopqrstuvwxyz012"

    static func configuration() throws -> GatewayConfiguration {
        let digest = APIKeyAuthenticationTests.hex(Self.key)
        let text = """
            {"listener": {}, "backends": {"api": {"urls": ["http://127.0.0.1:9100"]}},
             "tokens": {
               "issuers": [{"issuer": "\(TestKeys.issuer)", "audiences": ["\(TestKeys.audience)"],
                 "keys": [{"kid": "test-rs", "algorithm": "RS256", "publicKeyPEM": \(JSONValue.string(TestKeys.rsa.publicKeyPEM).jsonText)}]}],
               "apiKeys": {"keys": [{"id": "ci-bot", "sha256": "\(digest)", "claims": {"sub": "ci-bot", "scope": "deploy"}}]}},
             "identityHeaders": {"X-User-Subject": "claims.sub", "X-Admin": "profile.admin"},
             "authService": {"url": "http://127.0.0.1:9000", "profile": {"path": "/v1/user"}},
             "rateLimits": [{"name": "per-user", "key": "claims.sub", "requestsPerSecond": 10, "burst": 20}],
             "routes": [
               {"name": "public", "pathPrefix": "/public/", "backend": "api", "auth": "none"},
               {"name": "admin", "host": "api.example.com", "pathPrefix": "/admin/", "backend": "api",
                "require": {"anyOf": [{"claims.groups": "admins"}, {"profile.admin": true}], "not": {"claims.sub": "mallory"}}},
               {"name": "deploy", "pathPrefix": "/deploy/", "backend": "api", "require": {"claims.scope": "deploy"}}]}
            """
        return try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
    }

    static func check(
        _ request: String, _ configure: (inout RequestCheck.Options) -> Void = { _ in }
    ) throws -> (
        text: String, status: RequestCheck.Status
    ) {
        var options = RequestCheck.Options(request: request)
        configure(&options)
        return RequestCheck(configuration: try Self.configuration(), options: options).run()
    }

    @Test("claims that satisfy an anyOf branch: allowed, every clause explained, limits and headers listed")
    func allowedWithClaims() throws {
        let result = try Self.check("GET https://api.example.com/admin/x") {
            $0.claims = #"{"sub": "ada", "groups": ["admins"]}"#
        }
        #expect(result.status == .allowed, "\(result.text)")
        #expect(result.text.contains(#"routes[1] "admin" → backend "api" (auth required)"#))
        #expect(result.text.contains("holds    routes[1].require.anyOf: anyOf (2 requirements)"))
        #expect(
            result.text.contains(#"holds        routes[1].require.anyOf[0]["claims.groups"]: claims.groups: "admins""#))
        #expect(result.text.contains(#"  -          routes[1].require.anyOf[1]["profile.admin"]"#), "not reached")
        #expect(result.text.contains("routes[1].require.not"))
        #expect(result.text.contains("per-user: 10/s, burst 20, counted per claims.sub = ada"))
        #expect(result.text.contains("X-User-Subject: ada"))
        #expect(result.text.contains("identity headers: 1\n"))
        #expect(result.text.hasSuffix("decision:         allowed\n"))
    }

    @Test("a refusal names the failing clause and exits 3; the profile comes from --profile")
    func refused() throws {
        let refused = try Self.check("GET https://api.example.com/admin/x") { $0.claims = #"{"sub": "bob"}"# }
        #expect(refused.status == .refused)
        #expect(refused.text.contains("refused: 403 access.forbidden"), "\(refused.text)")
        #expect(refused.text.contains("FAILS    routes[1].require.anyOf: anyOf"), "\(refused.text)")
        let viaProfile = try Self.check("GET https://api.example.com/admin/x") {
            $0.claims = #"{"sub": "bob"}"#
            $0.profile = #"{"admin": true}"#
        }
        #expect(viaProfile.status == .allowed, "\(viaProfile.text)")
        #expect(viaProfile.text.contains("X-Admin: true"))
        let mallory = try Self.check("GET https://api.example.com/admin/x") {
            $0.claims = #"{"sub": "mallory", "groups": ["admins"]}"#
        }
        #expect(mallory.status == .refused)
        #expect(mallory.text.contains("routes[1].require.not"))
    }

    @Test("no route is refused (404); no credential is 401; auth none is anonymous and allowed")
    func routesAndCredentials() throws {
        let none = try Self.check("GET https://other.example.com/admin/x") { $0.claims = #"{"sub": "a"}"# }
        #expect(none.status == .refused)
        #expect(none.text.contains("route.not_found"))
        let missing = try Self.check("GET /deploy/x")
        #expect(missing.status == .refused)
        #expect(missing.text.contains("401 token.missing"))
        let open = try Self.check("GET /public/x")
        #expect(open.status == .allowed, "\(open.text)")
    }

    /// `check --request` prints the target the live gateway decides on and forwards: escapes of
    /// unreserved characters decoded, slashes merged, dot segments resolved, the query as sent,
    /// the host lower-cased without its trailing dot or port.
    @Test("the canonical target is printed, not the spelling given")
    func canonicalTarget() throws {
        let result = try Self.check("GET https://API.Example.com.:443/public/a//b/./c/../%7Ed%2d?q=%2F&r=/../")
        #expect(result.status == .allowed, "\(result.text)")
        let target = result.text.split(separator: "\n").first { $0.hasPrefix("target:") }
        #expect(
            target.map { String($0.dropFirst("target:".count)).trimmingCharacters(in: .whitespaces) }
                == "/public/a/b/~d-?q=%2F&r=/../ (host api.example.com)", "\(result.text)")
    }

    /// What the live gateway refuses, `check` refuses (docs/forwarding.md, "Spellings that are
    /// refused"): a path that names another route without case, one that ends in `..`.
    @Test("a path read differently by lenient servers is refused as the gateway refuses it")
    func lenientVariants() throws {
        for request in ["GET https://api.example.com/ADMIN/x", "GET /Public/x", "GET /public/x/.."] {
            let result = try Self.check(request) { $0.claims = #"{"sub": "ada", "groups": ["admins"]}"# }
            #expect(result.status == .refused, "\(request): \(result.text)")
            #expect(result.text.contains("400 request.ambiguous_path"), "\(request): \(result.text)")
        }
        let sameRoute = try Self.check("GET https://api.example.com/admin/Reports/Q3") {
            $0.claims = #"{"sub": "ada", "groups": ["admins"]}"#
        }
        #expect(sameRoute.status == .allowed, "\(sameRoute.text)")
    }

    @Test("a token is verified with the configured keys (or only read with --no-verify)")
    func tokens() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = folder.appendingPathComponent("good.jwt").path
        try (TestKeys.token(subject: "ada", extra: ["scope": "deploy"]) + "\n").write(
            toFile: good, atomically: true, encoding: .utf8)
        let forged = folder.appendingPathComponent("forged.jwt").path
        try TestKeys.token(signer: TestKeys.otherRSA, subject: "ada", extra: ["scope": "deploy"]).write(
            toFile: forged, atomically: true, encoding: .utf8)
        let verified = try Self.check("POST /deploy/run") { $0.token = good }
        #expect(verified.status == .allowed, "\(verified.text)")
        #expect(verified.text.contains("token verified (issuer \(TestKeys.issuer))"))
        let refused = try Self.check("POST /deploy/run") { $0.token = forged }
        #expect(refused.status == .refused)
        #expect(refused.text.contains("401 token.bad_signature"), "\(refused.text)")
        let unverified = try Self.check("POST /deploy/run") {
            $0.token = forged
            $0.verify = false
        }
        #expect(unverified.status == .allowed, "\(unverified.text)")
    }

    @Test("an API key in --header goes through the proxy's API-key step")
    func apiKey() throws {
        let allowed = try Self.check("POST /deploy/run") { $0.headers = ["X-API-Key: \(Self.key)"] }
        #expect(allowed.status == .allowed, "\(allowed.text)")
        #expect(allowed.text.contains(#"API key "ci-bot""#))
        #expect(allowed.text.contains("X-User-Subject: ci-bot"))
        #expect(!allowed.text.contains(Self.key))
        let wrong = try Self.check("POST /deploy/run") { $0.headers = ["X-API-Key: agk_nope"] }
        #expect(wrong.status == .refused)
        #expect(wrong.text.contains("401 apikey.invalid"))
    }

    @Test("usage mistakes exit 1")
    func usage() throws {
        #expect(try Self.check("GET").status == .invalid)
        #expect(try Self.check("GET /deploy/x") { $0.claims = "[1]" }.status == .invalid)
        #expect(try Self.check("GET /x") { $0.headers = ["no colon"] }.status == .invalid)
        #expect(try Self.check("GET /deploy/x") { $0.clientIP = "not-an-ip" }.status == .invalid)
    }

    @Test("apikey new: a fresh prefixed key whose entry's digest is the key's SHA-256")
    func apiKeyNew() throws {
        let (key, entry) = APIKeyEntry.new(id: "ci-bot")
        #expect(key.hasPrefix("agk_"))
        #expect(key.utf8.count == 47)
        #expect(entry.sha256.map { String(format: "%02x", $0) }.joined() == APIKeyAuthenticationTests.hex(key))
        #expect(APIKeyEntry.new(id: "ci-bot").key != key)
        let text = APIKeyEntry.newKeyText(key: key, entry: entry)
        #expect(text.contains(key))
        // The printed entry loads as a key of the configuration, and the key is accepted.
        let json = entry.json.jsonText
        #expect(text.contains(json))
        let configuration = try ConfigurationLoader(environment: [:]).load(
            text: """
                {"listener": {}, "backends": {"api": {"urls": ["http://127.0.0.1:9100"]}},
                 "tokens": {"apiKeys": {"keys": [\(json)]}},
                 "routes": [{"name": "all", "pathPrefix": "/", "backend": "api"}]}
                """, baseDirectory: "/")
        let table = APIKeyTable(try #require(configuration.tokens.apiKeys))
        #expect(table.key(key)?.id == "ci-bot")
    }
}
