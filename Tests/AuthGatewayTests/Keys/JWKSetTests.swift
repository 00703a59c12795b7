import Crypto
import Testing
import _CryptoExtras

@testable import AuthGateway

@Suite("JWKSet")
struct JWKSetTests {
    /// The fixture JWKS entries by kid, to build variants from real key material.
    private static let fixtureEntries: [String: JSONObject] = {
        let document = try! JSONValue(parsing: Fixtures.text("jwt/keys/jwks.json"))
        var entries: [String: JSONObject] = [:]
        for entry in document["keys"]?.arrayValue ?? [] {
            if let object = entry.objectValue, let kid = object["kid"]?.stringValue { entries[kid] = object }
        }
        return entries
    }()

    private func entry(_ kid: String, _ changes: [String: JSONValue?] = [:]) -> JSONValue {
        var object = Self.fixtureEntries[kid]!
        for (name, value) in changes.sorted(by: { $0.key < $1.key }) { object[name] = value }
        return .object(object)
    }

    private func parse(_ entries: [JSONValue]) throws -> JWKSet.Parsed {
        try JWKSet.parse(["keys": .array(entries)])
    }

    @Test("the fixture JWKS: six signature keys, oct and enc keys skipped")
    func fixture() throws {
        let parsed = try JWKSet.parse(text: Fixtures.text("jwt/keys/jwks.json"))
        #expect(parsed.keys.map(\.kid) == ["rsa-1", "pss-1", "ec256-1", "ec384-1", "ec521-1", "ed-1"])
        #expect(parsed.keys.map(\.algorithm) == [.RS256, .PS256, .ES256, .ES384, .ES512, .EdDSA])
        #expect(parsed.skipped.count == 2)
        #expect(parsed.skipped.contains { $0.contains("hmac-1") && $0.contains("oct keys are never used") })
        #expect(parsed.skipped.contains { $0.contains("enc-1") })
    }

    @Test("JWKS keys are the same keys as the PEM files")
    func sameKeysAsPEM() throws {
        let parsed = try JWKSet.parse(text: Fixtures.text("jwt/keys/jwks.json"))
        let rsa = try #require(parsed.keys.first { $0.kid == "rsa-1" })
        guard case .rsa(let fromJWK) = rsa.key, case .rsa(let fromPEM) = VectorKeys.publicKey("rsa") else {
            Issue.record("expected RSA keys")
            return
        }
        #expect(fromJWK.derRepresentation == fromPEM.derRepresentation)
        let ed = try #require(parsed.keys.first { $0.kid == "ed-1" })
        guard case .ed25519(let edJWK) = ed.key, case .ed25519(let edPEM) = VectorKeys.publicKey("ed25519") else {
            Issue.record("expected Ed25519 keys")
            return
        }
        #expect(edJWK.rawRepresentation == edPEM.rawRepresentation)
    }

    @Test("an oct key is skipped even when it claims use sig")
    func octSkipped() throws {
        let parsed = try parse([entry("hmac-1"), entry("ec256-1")])
        #expect(parsed.keys.map(\.kid) == ["ec256-1"])
        #expect(parsed.skipped == ["keys[0] (kid \"hmac-1\"): oct keys are never used"])
    }

    @Test("use other than sig is skipped; use sig or absent is kept")
    func useEncSkipped() throws {
        let parsed = try parse([
            entry("ec256-1", ["use": "enc"]), entry("ec384-1", ["use": nil]), entry("ec521-1", ["use": "sig"]),
            entry("ed-1", ["use": 1]),
        ])
        #expect(parsed.keys.map(\.kid) == ["ec384-1", "ec521-1"])
        #expect(parsed.skipped.count == 2)
        #expect(parsed.skipped[0].hasPrefix("keys[0] (kid \"ec256-1\")"))
    }

    @Test("key_ops without verify is skipped")
    func keyOpsWithoutVerify() throws {
        let parsed = try parse([
            entry("ec256-1", ["key_ops": ["encrypt"], "use": nil]),
            entry("ec384-1", ["key_ops": ["sign", "verify"], "use": nil]),
            entry("ec521-1", ["key_ops": [], "use": nil]),
            entry("ed-1", ["key_ops": "verify", "use": nil]),
        ])
        #expect(parsed.keys.map(\.kid) == ["ec384-1"])
        #expect(parsed.skipped.count == 3)
    }

    @Test("an RSA key without alg is pinned to RS256")
    func rsaWithoutAlg() throws {
        let parsed = try parse([entry("rsa-1", ["alg": nil]), entry("pss-1", ["alg": nil])])
        #expect(parsed.keys.map(\.algorithm) == [.RS256, .RS256])
    }

    @Test("an EC or OKP key without alg takes its curve's algorithm")
    func curveImpliesAlg() throws {
        let parsed = try parse([
            entry("ec256-1", ["alg": nil]), entry("ec384-1", ["alg": nil]), entry("ec521-1", ["alg": nil]),
            entry("ed-1", ["alg": nil]),
        ])
        #expect(parsed.keys.map(\.algorithm) == [.ES256, .ES384, .ES512, .EdDSA])
    }

    @Test("alg Ed25519 is read as EdDSA")
    func ed25519AlgName() throws {
        #expect(try parse([entry("ed-1", ["alg": "Ed25519"])]).keys.map(\.algorithm) == [.EdDSA])
    }

    @Test("an alg that does not fit the curve or key type is rejected")
    func algMismatch() throws {
        let parsed = try parse([
            entry("ec256-1", ["alg": "ES384"]), entry("ec384-1", ["alg": "RS256"]), entry("rsa-1", ["alg": "ES256"]),
            entry("ed-1", ["alg": "ES256"]),
        ])
        #expect(parsed.keys.isEmpty)
        #expect(parsed.skipped.count == 4)
        #expect(parsed.skipped[0].contains("cannot verify ES384"))
    }

    @Test("unsupported or unknown algorithms are rejected")
    func unsupportedAlg() throws {
        let parsed = try parse([
            entry("rsa-1", ["alg": "HS256"]), entry("rsa-1", ["alg": "none"]), entry("rsa-1", ["alg": "RSA-OAEP"]),
        ])
        #expect(parsed.keys.isEmpty)
        #expect(parsed.skipped.allSatisfy { $0.contains("unsupported algorithm") })
    }

    @Test("broken entries are skipped with a reason and do not hide the good ones")
    func brokenEntries() throws {
        let parsed = try parse([
            "not an object",
            entry("ec256-1", ["kty": nil]),
            entry("ec256-1", ["kty": "DSA"]),
            entry("ec256-1", ["crv": "secp256k1"]),
            entry("ec256-1", ["x": "!!!"]),
            entry("ec256-1", ["y": nil]),
            entry("ec256-1", ["y": .string(Self.fixtureEntries["ec256-1"]!["x"]!.stringValue!)]),
            entry("ed-1", ["crv": "X25519"]),
            entry("rsa-1", ["n": "AQAB"]),
            entry("ec384-1"),
        ])
        #expect(parsed.keys.map(\.kid) == ["ec384-1"])
        #expect(parsed.skipped.count == 9)
        #expect(parsed.skipped[0] == "keys[0]: not an object")
        #expect(parsed.skipped[1].contains("missing \"kty\""))
        #expect(parsed.skipped[2].contains("unsupported key type \"DSA\""))
        #expect(parsed.skipped[3].contains("unsupported curve"))
        #expect(parsed.skipped[4].contains("\"x\""))
        #expect(parsed.skipped[5].contains("\"y\""))
        #expect(parsed.skipped[6].contains("invalid EC key"))
        #expect(parsed.skipped[7].contains("unsupported OKP curve"))
        #expect(parsed.skipped[8].contains("too short") || parsed.skipped[8].contains("invalid RSA key"))
    }

    @Test("a 1024-bit RSA JWK is refused")
    func weakRSAJWK() throws {
        let weak = try _RSA.Signing.PublicKey(unsafePEMRepresentation: Fixtures.text("jwt/keys/rsa-1024.pub.pem"))
        let primitives = try weak.getKeyPrimitives()
        let jwk: JSONValue = [
            "kty": "RSA", "kid": "weak", "alg": "RS256",
            "n": .string(Base64URL.encode(primitives.modulus)),
            "e": .string(Base64URL.encode(primitives.publicExponent)),
        ]
        let parsed = try parse([jwk])
        #expect(parsed.keys.isEmpty)
        #expect(parsed.skipped.count == 1)
        #expect(parsed.skipped.first?.hasPrefix("keys[0] (kid \"weak\"): ") == true)
    }

    @Test("documents without a keys array are refused")
    func notAJWKS() {
        #expect(throws: PublicKeyError.self) { try JWKSet.parse(["kty": "RSA"]) }
        #expect(throws: PublicKeyError.self) { try JWKSet.parse(["keys": "x"]) }
        #expect(throws: PublicKeyError.self) { try JWKSet.parse(text: "[]") }
        #expect(throws: PublicKeyError.self) { try JWKSet.parse(text: "{\"keys\": [}") }
        #expect(throws: PublicKeyError.self) { try JWKSet.parse(text: #"{"keys": [], "keys": []}"#) }
    }

    @Test("an empty keys array is a valid, empty set")
    func emptySet() throws {
        let parsed = try JWKSet.parse(text: #"{"keys": []}"#)
        #expect(parsed.keys.isEmpty)
        #expect(parsed.skipped.isEmpty)
    }
}
