import AuthGatewayTesting
import Foundation
import NIOHTTP1
import Testing

@testable import AuthGateway

/// Assertions as a backend checks them, with an independent implementation (Python joserfc,
/// `Fixtures/assertions/verify_assertions.py`): signature against the published JWKS, `typ`,
/// `iss`, `aud` and `exp` (docs/assertions.md). Keys come through the configuration loader, as
/// `serve` reads them.
@Suite("Assertions verified by joserfc", .serialized, .timeLimit(.minutes(2)))
struct AssertionVerificationTests {
    static let script = Fixtures.url("assertions/verify_assertions.py").path
    typealias Folder = ConfigurationLoaderAssertionTests.Folder

    /// The configuration `serve` would load with `keys` as the keys file.
    static func load(
        _ folder: Folder, keys: [JSONValue], format: String = "jwt"
    ) throws -> IdentityAssertionConfiguration {
        try folder.writeKeys(keys)
        let text = """
            {"listener": {}, "backends": {"orders": {"urls": ["http://127.0.0.1:9100"]}},
             "identityAssertion": {"issuer": "https://gw.example", "keysFile": "keys.json", "format": "\(format)"},
             "tokens": {"apiKeys": {"keys": [{"id": "k", "sha256": "\(String(repeating: "ab", count: 32))", "claims": {"sub": "k"}}]}},
             "routes": [{"name": "orders", "pathPrefix": "/", "backend": "orders", "assertion": true}]}
            """
        let configuration = try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: folder.url.path)
        return try #require(configuration.identityAssertion)
    }

    /// joserfc's verdict on each check.
    static func verify(
        jwks: String, now: Double, _ checks: [(String, String, String)]
    ) async throws -> [JSONValue] {
        let python = try ExternalTool.require("python3", package: "python3")
        let document: JSONValue = [
            "jwks": try JSONValue(parsing: jwks), "issuer": "https://gw.example", "now": .number(JSONNumber(Int(now))),
            "checks": .array(checks.map { ["token": .string($0.0), "audience": .string($0.1), "typ": .string($0.2)] }),
        ]
        let result = try await ExternalTool.run(python, [Self.script], input: Data(document.jsonText.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let verdicts = try #require(try JSONValue(parsing: result.stdout).arrayValue, "\(result.stderr)")
        try #require(verdicts.count == checks.count)
        return verdicts
    }

    @Test("four kinds of caller, one DPoP-bound: each assertion verifies; a wrong audience or a past exp does not")
    func fourInputs() async throws {
        let folder = try Folder()
        let configuration = try Self.load(
            folder, keys: [ConfigurationLoaderAssertionTests.entry("k1", "current")])
        let signer = AssertionSigner(configuration: configuration)
        let now = Date().timeIntervalSince1970
        let inputs = [
            AssertionInput(
                subject: "alice", audience: "orders", authKind: .jwt,
                thumbprint: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I", claims: ["email": "alice@example.com"]),
            AssertionInput(subject: "svc-7", audience: "orders", authKind: .introspection, claims: ["scope": "read"]),
            AssertionInput(subject: "ci", audience: "billing", authKind: .apikey),
            AssertionInput(subject: "bob", audience: "orders", authKind: .session, credentialExpiresAt: now + 30),
        ]
        let tokens = inputs.map { signer.assertion(for: $0, now: now) }
        let verdicts = try await Self.verify(
            jwks: configuration.keys.jwks, now: now,
            zip(tokens, inputs).map { ($0, $1.audience, "JWT") } + [
                (tokens[2], "orders", "JWT"), (tokens[3], "orders", "JWT"),
            ]
        )
        for (index, input) in inputs.enumerated() {
            let verdict = verdicts[index]
            #expect(verdict["ok"] == true, "\(input.authKind): \(verdict)")
            #expect(verdict["claims"]?["sub"] == .string(input.subject))
            #expect(verdict["claims"]?["auth"] == .string(input.authKind.rawValue))
            #expect(verdict["header"]?["kid"] == "k1")
        }
        #expect(verdicts[0]["claims"]?["cnf"] == ["jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"])
        #expect(verdicts[0]["claims"]?["email"] == "alice@example.com")
        // An assertion for billing is refused by orders.
        #expect(verdicts[4]["ok"] == false)
        // The session's assertion ends with the session: 60 s later it is refused.
        let later = try await Self.verify(jwks: configuration.keys.jwks, now: now + 60, [(tokens[3], "orders", "JWT")])
        #expect(later[0]["ok"] == false)
        #expect(later[0]["error"]?.stringValue?.contains("xpired") == true, "\(later)")
    }

    @Test("rotation: next → current → retired across two key files; assertions signed before still verify")
    func rotation() async throws {
        let folder = try Folder()
        let k1 = try ConfigurationLoaderAssertionTests.entry("k1", "current")
        let k2 = try ConfigurationLoaderAssertionTests.entry("k2", "next", .RS256)
        func with(_ entry: JSONValue, status: String) -> JSONValue {
            var object = entry.objectValue!
            object["status"] = .string(status)
            return .object(object)
        }
        let before = try Self.load(folder, keys: [k1, k2])
        let now = Date().timeIntervalSince1970
        let input = AssertionInput(subject: "alice", audience: "orders", authKind: .jwt)
        let old = AssertionSigner(configuration: before).assertion(for: input, now: now)
        // Step 2 of docs/assertions.md: k2 current, k1 retired, reloaded.
        let after = try Self.load(folder, keys: [with(k1, status: "retired"), with(k2, status: "current")])
        let new = AssertionSigner(configuration: after).assertion(for: input, now: now)
        #expect(try AssertionSignerTests.decode(old).header["kid"] == "k1")
        #expect(try AssertionSignerTests.decode(new).header["kid"] == "k2")
        #expect(try AssertionSignerTests.decode(new).header["alg"] == "RS256")
        let verdicts = try await Self.verify(
            jwks: after.keys.jwks, now: now, [(old, "orders", "JWT"), (new, "orders", "JWT")])
        #expect(verdicts.allSatisfy { $0["ok"] == true }, "\(verdicts)")
        // The JWKS published before the rotation already held k2 (so verifiers had it cached).
        let early = try await Self.verify(jwks: before.keys.jwks, now: now, [(new, "orders", "JWT")])
        #expect(early[0]["ok"] == true, "\(early)")
        // Once k1 leaves the file, its assertions no longer verify.
        let dropped = try Self.load(folder, keys: [with(k2, status: "current")])
        #expect(try await Self.verify(jwks: dropped.keys.jwks, now: now, [(old, "orders", "JWT")])[0]["ok"] == false)
    }

    @Test("three replicas given one key file publish byte-identical JWKS, as the endpoints serve it")
    func identicalJWKS() throws {
        let folder = try Folder()
        let keys = [
            try ConfigurationLoaderAssertionTests.entry("a", "retired", .RS256),
            try ConfigurationLoaderAssertionTests.entry("b", "current", .ES256),
            try ConfigurationLoaderAssertionTests.entry("c", "next", .EdDSA),
        ]
        let replicas = try (0..<3).map { _ in try Self.load(folder, keys: keys).keys.jwks }
        #expect(Set(replicas).count == 1)
        let configuration = try ConfigurationLoader(environment: [:]).load(
            text: """
                {"listener": {}, "backends": {"o": {"urls": ["http://127.0.0.1:9"]}},
                 "identityAssertion": {"issuer": "https://gw.example", "keysFile": "keys.json"},
                 "routes": [{"name": "o", "pathPrefix": "/", "backend": "o", "auth": "none"}]}
                """, baseDirectory: folder.url.path)
        let response = try #require(AssertionJWKSEndpoint.response(configuration, method: .GET))
        #expect(response.status == .ok)
        #expect(response.body == replicas[0])
        #expect(response.headers["Cache-Control"] == ["max-age=300"])
        #expect(response.headers["Content-Type"] == ["application/jwk-set+json"])
        #expect(AssertionJWKSEndpoint.mainPath(configuration) == "/.gateway/jwks.json")
        #expect(AssertionJWKSEndpoint.response(configuration, method: .POST)?.status == .methodNotAllowed)
    }

    @Test("txn-token: joserfc verifies it with typ txntoken+jwt")
    func transactionToken() async throws {
        let folder = try Folder()
        let configuration = try Self.load(
            folder, keys: [ConfigurationLoaderAssertionTests.entry("k1", "current", .EdDSA)], format: "txn-token")
        let now = Date().timeIntervalSince1970
        var input = AssertionInput(subject: "alice", audience: "orders", authKind: .jwt, claims: ["email": "a@x"])
        input.request = .init(clientIP: "192.0.2.1", method: "GET", path: "/orders")
        let token = AssertionSigner(configuration: configuration).assertion(for: input, now: now)
        let verdicts = try await Self.verify(
            jwks: configuration.keys.jwks, now: now, [(token, "orders", "txntoken+jwt"), (token, "orders", "JWT")])
        #expect(verdicts[0]["ok"] == true, "\(verdicts[0])")
        #expect(verdicts[0]["claims"]?["rctx"]?["req_ip"] == "192.0.2.1")
        #expect(verdicts[1]["ok"] == false)
    }
}
