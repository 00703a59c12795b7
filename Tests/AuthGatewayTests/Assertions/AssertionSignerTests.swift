import Foundation
import Testing

@testable import AuthGateway

/// The signer of identity assertions (docs/assertions.md): the claims it writes, the expiry
/// rule, and the reuse of an assertion until 80 % of its life.
@Suite("AssertionSigner")
struct AssertionSignerTests {
    static func configuration(
        _ algorithm: SigningKey.Algorithm = .ES256, format: IdentityAssertionConfiguration.Format = .jwt,
        lifetime: Int = 60
    ) throws -> IdentityAssertionConfiguration {
        let keys = try #require(
            AssertionKeySet(entries: [.init(kid: "k1", status: .current, key: try SigningKey.generate(algorithm))]))
        return IdentityAssertionConfiguration(
            issuer: "https://gw.example", keysFile: "/keys.json", keys: keys, lifetimeSeconds: lifetime, format: format)
    }

    /// The header and claims of a compact JWS, without checking anything.
    static func decode(_ token: String) throws -> (header: JSONValue, claims: JSONValue) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        let header = try JSONValue(parsing: String(decoding: try #require(Base64URL.decode(parts[0])), as: UTF8.self))
        let claims = try JSONValue(parsing: String(decoding: try #require(Base64URL.decode(parts[1])), as: UTF8.self))
        return (header, claims)
    }

    static let input = AssertionInput(
        subject: "alice", audience: "orders", authKind: .jwt, thumbprint: "jkt-1",
        claims: ["email": "alice@example.com", "groups": ["a", "b"], "sub": "mallory"], credentialExpiresAt: 1_000_030)

    @Test("claims: iss, sub, aud, iat, exp, jti, auth, cnf.jkt and the mapped claims, never over registered ones")
    func claims() throws {
        let signer = AssertionSigner(configuration: try Self.configuration())
        let token = signer.assertion(for: Self.input, now: 1_000_000.7)
        let (header, claims) = try Self.decode(token)
        #expect(header == ["alg": "ES256", "typ": "JWT", "kid": "k1"])
        #expect(claims["iss"] == "https://gw.example")
        #expect(claims["sub"] == "alice", "a mapped claim named sub does not replace the subject")
        #expect(claims["aud"] == "orders")
        #expect(claims["iat"] == .number(JSONNumber(1_000_000)))
        // The credential ends before the lifetime does.
        #expect(claims["exp"] == .number(JSONNumber(1_000_030)))
        #expect(claims["auth"] == "jwt")
        #expect(claims["cnf"] == ["jkt": "jkt-1"])
        #expect(claims["email"] == "alice@example.com")
        #expect(claims["groups"] == ["a", "b"])
        #expect((claims["jti"]?.stringValue?.count ?? 0) >= 20)
        // Without a credential expiry, the lifetime decides; without a thumbprint, no cnf.
        var unbound = Self.input
        unbound.thumbprint = nil
        unbound.credentialExpiresAt = nil
        unbound.authKind = .apikey
        let second = try Self.decode(signer.assertion(for: unbound, now: 1_000_000)).claims
        #expect(second["exp"] == .number(JSONNumber(1_000_060)))
        #expect(second["cnf"] == nil)
        #expect(second["auth"] == "apikey")
        #expect(second["jti"] != claims["jti"])
    }

    @Test("an assertion is reused for the same inputs until 80 % of its life, and no longer")
    func reuse() throws {
        let signer = AssertionSigner(configuration: try Self.configuration(lifetime: 100))
        var input = Self.input
        input.credentialExpiresAt = nil
        let first = signer.assertion(for: input, now: 2_000_000)
        #expect(signer.signatures == 1)
        #expect(signer.assertion(for: input, now: 2_000_079) == first)
        #expect(signer.signatures == 1, "a reused assertion costs no signature")
        // Another input of any kind: another assertion.
        let changes: [(inout AssertionInput) -> Void] = [
            { $0.subject = "bob" }, { $0.audience = "billing" }, { $0.authKind = .session },
            { $0.thumbprint = "jkt-2" }, { $0.claims["email"] = "other@example.com" },
        ]
        for change in changes {
            var other = input
            change(&other)
            #expect(signer.assertion(for: other, now: 2_000_001) != first)
        }
        // 80 s into a 100 s life: signed afresh.
        let renewed = signer.assertion(for: input, now: 2_000_080)
        #expect(renewed != first)
        #expect(try Self.decode(renewed).claims["iat"] == .number(JSONNumber(2_000_080)))
        // A credential that ends before the remembered assertion would: not reused.
        var shorter = input
        shorter.credentialExpiresAt = 2_000_100
        let bounded = signer.assertion(for: shorter, now: 2_000_081)
        #expect(bounded != renewed)
        #expect(try Self.decode(bounded).claims["exp"] == .number(JSONNumber(2_000_100)))
    }

    @Test("txn-token: typ txntoken+jwt, txn, sub, scope, tctx, rctx; signed for every request")
    func transactionToken() throws {
        let signer = AssertionSigner(configuration: try Self.configuration(.EdDSA, format: .txnToken))
        var input = Self.input
        input.scope = "orders.read"
        input.request = .init(clientIP: "203.0.113.9", method: "POST", path: "/orders/1")
        let token = signer.assertion(for: input, now: 1_000_000)
        let (header, claims) = try Self.decode(token)
        #expect(header == ["alg": "EdDSA", "typ": "txntoken+jwt", "kid": "k1"])
        #expect(claims["sub"] == "alice")
        #expect(claims["scope"] == "orders.read")
        #expect(claims["tctx"]?["email"] == "alice@example.com")
        #expect(claims["rctx"] == ["authn": "jwt", "req_ip": "203.0.113.9", "method": "POST", "path": "/orders/1"])
        #expect(claims["txn"]?.stringValue?.isEmpty == false)
        #expect(claims["aud"] == "orders" && claims["iss"] == "https://gw.example")
        #expect(signer.assertion(for: input, now: 1_000_000) != token)
        #expect(signer.signatures == 2)
    }

    @Test("what the gateway's own verifier accepts: each algorithm's signature over the JWKS")
    func signaturesVerify() throws {
        for algorithm in SigningKey.Algorithm.allCases {
            let configuration = try Self.configuration(algorithm)
            let token = AssertionSigner(configuration: configuration).assertion(for: Self.input, now: 1_000_000)
            let keys = try JWKSet.parse(text: configuration.keys.jwks).keys
            #expect(keys.count == 1)
            let parts = token.split(separator: ".")
            let signature = try #require(Base64URL.decode(parts[2]))
            let input = Array("\(parts[0]).\(parts[1])".utf8)
            #expect(input.withUnsafeBytes { keys[0].isValidSignature(signature, for: $0) }, "\(algorithm)")
            var tampered = input
            tampered[tampered.count - 1] ^= 1
            #expect(!tampered.withUnsafeBytes { keys[0].isValidSignature(signature, for: $0) }, "\(algorithm)")
        }
    }
}
