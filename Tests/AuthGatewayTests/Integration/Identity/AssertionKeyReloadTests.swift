import Crypto
import Foundation
import Testing
import _CryptoExtras

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// The assertion keys file on the real `auth-gateway` executable (docs/assertions.md, "Keys and
/// the JWKS" and "Rotating keys, step by step"): `check` refuses a file without exactly one
/// `current` key or with a key it cannot use; `serve` refuses such a file on SIGHUP and keeps
/// signing with, and publishing, the keys in force; a rotation by SIGHUP leaves the assertions
/// signed before it verifiable (joserfc, against the newly served JWKS) until they expire.
@Suite(
    "Assertion keys: rotation and refused key files (serve, SIGHUP)", .serialized, .awaitsCleanups,
    .timeLimit(.minutes(5)))
struct AssertionKeyReloadTests {
    static func configuration(backendURL: String, keys: IdentityPeers.KeysFile) -> JSONObject {
        var document = RunningGateway.configuration(backendURL: backendURL, drainSeconds: 1)
        document["identityAssertion"] = IdentityPeers.section(keys)
        document["routes"] = [
            ["name": "orders", "pathPrefix": "/", "backend": "api", "assertion": ["audience": "orders-api"]]
        ]
        return document
    }

    /// `serve` with `keys`, in front of an echo backend; both stopped when the test ends.
    static func serve(_ keys: IdentityPeers.KeysFile) async throws -> (gateway: RunningGateway, port: Int) {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        let gateway = try RunningGateway(configuration: Self.configuration(backendURL: backend.baseURL, keys: keys))
        atTestEnd {
            gateway.signal(SIGTERM)
            _ = try? await gateway.waitForExit(timeout: .seconds(30))
            gateway.kill()
        }
        return (gateway, try await gateway.waitForPort())
    }

    /// The assertion the backend gets for a JWT of `subject` (a new subject: a new signature).
    static func assertion(port: Int, subject: String) async throws -> String {
        let connection = try await TestConnection.connect(port: port)
        let response = try await withCleanup({ await connection.close() }) { () async throws in
            try await connection.send(.get("/x", token: TestKeys.token(subject: subject)))
        }
        return try IdentityPeers.assertion(response)
    }

    static func kid(_ token: String) throws -> String? { try IdentityPeers.decode(token).header["kid"]?.stringValue }

    static func kids(_ jwks: String) throws -> [String] {
        try JSONValue(parsing: jwks)["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } ?? []
    }

    static func occurrences(_ event: String, _ output: String) -> Int {
        output.components(separatedBy: event).count - 1
    }

    /// SIGHUP, then a bounded wait for one more `event` (`config.reloaded` or `config.reload_failed`).
    static func reload(_ gateway: RunningGateway, expecting event: String) async throws {
        let before = Self.occurrences(event, gateway.output)
        gateway.signal(SIGHUP)
        let seen = try await gateway.waitForOutput { Self.occurrences(event, $0) > before }
        try #require(seen, "no \(event) after SIGHUP: \(gateway.output.suffix(2000))")
    }

    /// The key files `check` and a reload refuse, each with what the refusal says.
    static func refusedFiles() throws -> [(name: String, entries: [JSONValue], message: String)] {
        let publicPEM = P256.Signing.PrivateKey().publicKey.pemRepresentation
        let shortRSA = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024)).pemRepresentation
        return [
            (
                "no current key", [try IdentityPeers.entry("k8", "next"), try IdentityPeers.entry("k9", "retired")],
                "exactly one key must have \"status\": \"current\" (found 0)"
            ),
            (
                "two current keys",
                [try IdentityPeers.entry("k8", "current"), try IdentityPeers.entry("k9", "current")],
                "exactly one key must have \"status\": \"current\" (found 2)"
            ),
            (
                "a public key", [.object(["kid": "k9", "status": "current", "privateKeyPEM": .string(publicPEM)])],
                "identityAssertion.keysFile[0].privateKeyPEM: cannot be used: PEM holds \"PUBLIC KEY\", not a private key"
            ),
            (
                "an RSA key too short",
                [.object(["kid": "k9", "status": "current", "privateKeyPEM": .string(shortRSA)])],
                "identityAssertion.keysFile[0].privateKeyPEM: cannot be used: RSA key of 1024 bits is too short"
            ),
        ]
    }

    @Test("check: a keys file without exactly one current key, or with an unusable key, is refused with its reason")
    func checkRefuses() async throws {
        let keys = try IdentityPeers.KeysFile()
        let path = keys.folder.appendingPathComponent("gateway.json").path
        try JSONValue.object(Self.configuration(backendURL: "http://127.0.0.1:9", keys: keys)).jsonText.write(
            toFile: path, atomically: true, encoding: .utf8)
        try keys.write([try IdentityPeers.entry("k1", "current"), try IdentityPeers.entry("k2", "next")])
        let good = try await ProcessTests.run(["check", "--config", path])
        #expect(good.status == 0, "\(good.output)")
        for refused in try Self.refusedFiles() {
            try keys.write(refused.entries)
            let result = try await ProcessTests.run(["check", "--config", path])
            #expect(result.status == 1, "\(refused.name): \(result.output)")
            #expect(result.output.contains(refused.message), "\(refused.name): \(result.output)")
            #expect(!result.output.contains("PRIVATE KEY-----"), "no key printed")
        }
    }

    @Test("SIGHUP with a refused keys file: the reload fails, the JWKS and the signing key stay as they were")
    func sighupKeepsTheOldKeys() async throws {
        let keys = try IdentityPeers.KeysFile()
        let k1 = try IdentityPeers.entry("k1", "current"), k2 = try IdentityPeers.entry("k2", "next")
        try keys.write([k1, k2])
        let (gateway, port) = try await Self.serve(keys)
        let jwks = try await IdentityPeers.jwks(port: port)
        #expect(try Self.kids(jwks) == ["k1", "k2"])
        #expect(try Self.kid(try await Self.assertion(port: port, subject: "before")) == "k1")

        for (index, refused) in try Self.refusedFiles().enumerated() {
            try keys.write(refused.entries)
            try await Self.reload(gateway, expecting: "config.reload_failed")
            #expect(gateway.output.contains(refused.message), "\(refused.name): \(gateway.output.suffix(2000))")
            #expect(try await IdentityPeers.jwks(port: port) == jwks, "\(refused.name): the JWKS is unchanged")
            let assertion = try await Self.assertion(port: port, subject: "after-\(index)")
            #expect(try Self.kid(assertion) == "k1", "\(refused.name): still signed by the current key")
            let verdict = try await IdentityPeers.verify(jwks: jwks, [.init(token: assertion, audience: "orders-api")])
            #expect(verdict[0]["ok"] == true, "\(refused.name): \(verdict)")
        }
        #expect(!gateway.output.contains("PRIVATE KEY-----"), "no private key is logged")
        // The same SIGHUP with a good file does apply (so the refusals above were refusals).
        try keys.write([IdentityPeers.with(k1, status: "retired"), IdentityPeers.with(k2, status: "current")])
        try await Self.reload(gateway, expecting: "config.reloaded")
        #expect(try Self.kid(try await Self.assertion(port: port, subject: "good")) == "k2")
    }

    @Test("rotation by SIGHUP: next, then current; assertions signed before verify with the new JWKS until they expire")
    func rotation() async throws {
        let keys = try IdentityPeers.KeysFile()
        let k1 = try IdentityPeers.entry("k1", "current"), k2 = try IdentityPeers.entry("k2", "next", .RS256)
        try keys.write([k1])
        let (gateway, port) = try await Self.serve(keys)
        #expect(try Self.kids(try await IdentityPeers.jwks(port: port)) == ["k1"])
        let old = try await Self.assertion(port: port, subject: "ada")
        #expect(try Self.kid(old) == "k1")

        // Step 1-2: the next key is published, nothing is signed with it yet.
        try keys.write([k1, k2])
        try await Self.reload(gateway, expecting: "config.reloaded")
        let published = try await IdentityPeers.jwks(port: port)
        #expect(try Self.kids(published) == ["k1", "k2"])
        #expect(try Self.kid(try await Self.assertion(port: port, subject: "bob")) == "k1")

        // Step 4: promoted; the old key retired.
        try keys.write([IdentityPeers.with(k1, status: "retired"), IdentityPeers.with(k2, status: "current")])
        try await Self.reload(gateway, expecting: "config.reloaded")
        let new = try await Self.assertion(port: port, subject: "ada")
        #expect(try Self.kid(new) == "k2")
        #expect(try IdentityPeers.decode(new).header["alg"] == "RS256")
        let rotated = try await IdentityPeers.jwks(port: port)
        #expect(try Self.kids(rotated) == ["k1", "k2"])
        let now = Date().timeIntervalSince1970
        let verdicts = try await IdentityPeers.verify(
            jwks: rotated, now: now,
            [.init(token: old, audience: "orders-api"), .init(token: new, audience: "orders-api")])
        #expect(verdicts[0]["ok"] == true, "signed before the rotation: \(verdicts[0])")
        #expect(verdicts[1]["ok"] == true, "\(verdicts[1])")
        // A verifier that cached the JWKS of step 2 verifies the new assertions already.
        let cached = try await IdentityPeers.verify(jwks: published, [.init(token: new, audience: "orders-api")])
        #expect(cached[0]["ok"] == true, "\(cached)")
        // Until it expires.
        let expiry = try #require(try IdentityPeers.decode(old).claims["exp"]?.numberValue?.double)
        let expired = try await IdentityPeers.verify(
            jwks: rotated, now: expiry + 1, [.init(token: old, audience: "orders-api")])
        #expect(expired[0]["ok"] == false)
        #expect(expired[0]["error"]?.stringValue?.contains("xpired") == true, "\(expired)")

        // Step 5: the retired key leaves the file and the JWKS; its assertions no longer verify.
        try keys.write([IdentityPeers.with(k2, status: "current")])
        try await Self.reload(gateway, expecting: "config.reloaded")
        let final = try await IdentityPeers.jwks(port: port)
        #expect(try Self.kids(final) == ["k2"])
        #expect(
            try await IdentityPeers.verify(jwks: final, now: now, [.init(token: old, audience: "orders-api")])[0]["ok"]
                == false)
    }
}
