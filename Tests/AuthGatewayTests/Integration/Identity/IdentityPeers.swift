import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// What the end-to-end identity tests share (docs/assertions.md, docs/token-exchange.md): a
/// keys file of their own, the gateway's published JWKS fetched from its main listener, and
/// the backend's check of an assertion by an independent implementation (Python joserfc,
/// `Fixtures/assertions/verify_assertions.py`).
enum IdentityPeers {
    static let issuer = "https://gateway.test"
    static let header = "X-Gateway-Assertion"
    static let script = Fixtures.url("assertions/verify_assertions.py").path

    /// A keys file in a folder of its own (absolute path), removed when the test ends.
    struct KeysFile {
        let folder: URL
        var path: String { self.folder.appendingPathComponent("assertion-keys.json").path }

        init() throws {
            self.folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "assertion-keys-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: self.folder, withIntermediateDirectories: true)
            let folder = self.folder
            atTestEnd { try? FileManager.default.removeItem(at: folder) }
        }

        func write(_ entries: [JSONValue]) throws {
            try JSONValue.array(entries).jsonText.write(toFile: self.path, atomically: true, encoding: .utf8)
        }
    }

    /// A key entry as `assertion-key new` prints it, with `status`.
    static func entry(_ kid: String, _ status: String, _ algorithm: SigningKey.Algorithm = .ES256) throws -> JSONValue {
        try ConfigurationLoaderAssertionTests.entry(kid, status, algorithm)
    }

    /// `entry` with another status (a rotation step).
    static func with(_ entry: JSONValue, status: String) -> JSONValue {
        var object = entry.objectValue ?? JSONObject()
        object["status"] = .string(status)
        return .object(object)
    }

    /// The `identityAssertion` section for `keys`.
    static func section(_ keys: KeysFile, format: String = "jwt") -> JSONValue {
        [
            "issuer": .string(Self.issuer), "keysFile": .string(keys.path), "lifetimeSeconds": 60,
            "format": .string(format),
        ]
    }

    /// The JWKS as the main listener serves it (`/.gateway/jwks.json`), byte for byte; the admin
    /// listener serves it at `/.well-known/jwks.json`.
    static func jwks(port: Int, path: String = "/.gateway/jwks.json") async throws -> String {
        let connection = try await TestConnection.connect(port: port)
        return try await withCleanup({ await connection.close() }) { () async throws in
            let response = try await connection.send(.get(path))
            try #require(response.status == 200, "the JWKS: \(response.status) \(response.text)")
            #expect(response.header("Cache-Control") == "max-age=300")
            return response.text
        }
    }

    /// The one assertion the echo backend received; fails the test unless there is exactly one.
    static func assertion(_ response: TestResponse, header: String = Self.header) throws -> String {
        try #require(response.status == 200, "\(response.status) \(response.text)")
        let values = response.echoedHeader(header)
        try #require(values.count == 1, "the backend got \(values.count) \(header) headers: \(values)")
        return values[0]
    }

    struct Check {
        var token: String
        var audience: String
        var typ = "JWT"
    }

    /// joserfc's verdict on each check, as a backend makes it: the signature against `jwks`, the
    /// header's `typ`, `iss`, `aud` and `exp` at `now`.
    static func verify(
        jwks: String, now: Double = Date().timeIntervalSince1970, _ checks: [Check]
    ) async throws
        -> [JSONValue]
    {
        let python = try ExternalTool.require("python3", package: "python3")
        let document: JSONValue = [
            "jwks": try JSONValue(parsing: jwks), "issuer": .string(Self.issuer),
            "now": .number(JSONNumber(Int(now))),
            "checks": .array(
                checks.map { ["token": .string($0.token), "audience": .string($0.audience), "typ": .string($0.typ)] }),
        ]
        let result = try await ExternalTool.run(python, [Self.script], input: Data(document.jsonText.utf8))
        try #require(
            result.status == 0,
            "verify_assertions.py: \(result.stderr) (Python joserfc: pip install joserfc, or run .ci/run)")
        let verdicts = try #require(try JSONValue(parsing: result.stdout).arrayValue, "\(result.stderr)")
        try #require(verdicts.count == checks.count)
        return verdicts
    }

    /// The assertion's header and claims, unverified (to pick the `kid` or `exp`).
    static func decode(_ token: String) throws -> (header: JSONValue, claims: JSONValue) {
        try AssertionSignerTests.decode(token)
    }
}
