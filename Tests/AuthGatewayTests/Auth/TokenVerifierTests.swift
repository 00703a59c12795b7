import Crypto
import Testing

import AuthGatewayDemo
@testable import AuthGateway

/// Verifier behaviour beyond the committed vectors, with tokens signed by the committed
/// `ec256` private key (kid `ec256-1`).
@Suite("TokenVerifier")
struct TokenVerifierTests {
    private let keys = VectorKeys.staticSnapshot
    private let now = VectorKeys.now

    @Test("the signer's baseline token is valid")
    func baseline() {
        #expect(VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims()), keys: keys) == "valid")
    }

    @Test("exp is exclusive and the leeway applies exactly")
    func expiryBoundary() {
        // Expired once now >= exp + leeway.
        #expect(
            VectorKeys.verdict(
                VectorKeys.sign(VectorKeys.claims(["exp": .number(JSONNumber(Int(now) - 30))])), keys: keys)
                == "expired")
        #expect(
            VectorKeys.verdict(
                VectorKeys.sign(VectorKeys.claims(["exp": .number(JSONNumber(Int(now) - 29))])), keys: keys) == "valid")
        #expect(
            VectorKeys.verdict(
                VectorKeys.sign(
                    VectorKeys.claims(["exp": .number(JSONNumber(text: "1700000970.5", double: 1_700_000_970.5))])),
                keys: keys) == "valid")
    }

    @Test("nbf and iat boundaries")
    func notBeforeAndIssuedAt() {
        #expect(
            VectorKeys.verdict(
                VectorKeys.sign(VectorKeys.claims(["nbf": .number(JSONNumber(Int(now) + 30))])), keys: keys) == "valid")
        #expect(
            VectorKeys.verdict(
                VectorKeys.sign(VectorKeys.claims(["nbf": .number(JSONNumber(Int(now) + 31))])), keys: keys)
                == "not_yet_valid")
        #expect(
            VectorKeys.verdict(
                VectorKeys.sign(VectorKeys.claims(["iat": .number(JSONNumber(Int(now) + 30))])), keys: keys) == "valid")
        #expect(
            VectorKeys.verdict(
                VectorKeys.sign(VectorKeys.claims(["iat": .number(JSONNumber(Int(now) + 31))])), keys: keys)
                == "issued_in_future")
    }

    @Test("timeFailure runs on the verified token at any time")
    func timeFailureAtDifferentTimes() throws {
        let verified = try VectorKeys.verify(
            VectorKeys.sign(VectorKeys.claims(["iat": nil, "nbf": .number(JSONNumber(1_700_001_100))])), keys: keys
        ).get()
        #expect(verified.timeFailure(now: 1_700_001_000) == .notYetValid)  // nbf - 100
        #expect(verified.timeFailure(now: 1_700_001_070) == nil)  // within leeway of nbf
        #expect(verified.timeFailure(now: 1_700_003_629) == nil)
        #expect(verified.timeFailure(now: 1_700_003_630) == .expired)
        #expect(verified.secondsSinceExpiry(now: 1_700_003_000) == 0)
        #expect(verified.secondsSinceExpiry(now: 1_700_003_700) == 100)
    }

    @Test("a leeway of 0 is no leeway")
    func zeroLeeway() throws {
        let strict = KeySnapshot(
            generation: 1,
            issuers: [
                VectorKeys.issuerEntry(
                    VectorKeys.issuer, keys: VectorKeys.staticIssuerKeys, audiences: nil, requiredClaims: [],
                    leewaySeconds: 0)
            ])
        let verified = try VectorKeys.verify(VectorKeys.sign(VectorKeys.claims()), keys: strict).get()
        #expect(verified.timeFailure(now: 1_700_003_599.9) == nil)
        #expect(verified.timeFailure(now: 1_700_003_600) == .expired)
        #expect(verified.timeFailure(now: 1_699_999_999) != nil)
    }

    @Test("claim shapes the vectors do not cover")
    func claimShapes() {
        #expect(VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["sub": 42])), keys: keys) == "invalid_claim")
        #expect(VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["sub": .null])), keys: keys) == "invalid_claim")
        #expect(
            VectorKeys.verdict(
                VectorKeys.sign(VectorKeys.claims(["aud": [1, .string(VectorKeys.audience)]])), keys: keys)
                == "invalid_claim")
        #expect(VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["aud": 7])), keys: keys) == "invalid_claim")
        #expect(VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["exp": .null])), keys: keys) == "invalid_claim")
        #expect(VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["iss": 5])), keys: keys) == "wrong_issuer")
    }

    @Test("a required claim that is null counts as missing")
    func nullRequiredClaim() {
        let snapshot = KeySnapshot(
            generation: 1,
            issuers: [
                VectorKeys.issuerEntry(
                    VectorKeys.issuer, keys: VectorKeys.staticIssuerKeys, audiences: nil, requiredClaims: ["email"])
            ])
        #expect(VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims()), keys: snapshot) == "valid")
        #expect(
            VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["email": .null])), keys: snapshot) == "missing_claim")
        #expect(
            VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["email": nil])), keys: snapshot) == "missing_claim")
    }

    @Test("without configured audiences, aud is not checked")
    func noAudienceCheck() {
        let snapshot = KeySnapshot(
            generation: 1,
            issuers: [
                VectorKeys.issuerEntry(
                    VectorKeys.issuer, keys: VectorKeys.staticIssuerKeys, audiences: nil, requiredClaims: [])
            ])
        #expect(
            VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["aud": "someone-else"])), keys: snapshot) == "valid")
        #expect(VectorKeys.verdict(VectorKeys.sign(VectorKeys.claims(["aud": nil])), keys: snapshot) == "valid")
    }

    private func rejection(_ token: String) -> TokenRejection? {
        if case .failure(let rejection) = VectorKeys.verify(token, keys: keys) { return rejection }
        return nil
    }

    @Test("a rejection names the claimed issuer once the issuer is known, so an unknown kid can trigger a JWKS refetch")
    func rejectionIssuerIndex() {
        #expect(
            rejection(VectorKeys.sign(VectorKeys.claims(), header: ["kid": "rotated-2"]))
                == TokenRejection(.unknownKey, issuerIndex: 0))
        #expect(
            rejection(
                VectorKeys.sign(VectorKeys.claims(["iss": .string(VectorKeys.otherIssuer)]), header: ["kid": "nope"]))
                == TokenRejection(.unknownKey, issuerIndex: 1))
        #expect(
            rejection(VectorKeys.sign(VectorKeys.claims(["aud": "x"])))
                == TokenRejection(.wrongAudience, issuerIndex: 0))
        #expect(
            rejection(VectorKeys.sign(VectorKeys.claims(["iss": "https://evil.test"])))
                == TokenRejection(.wrongIssuer, issuerIndex: nil))
        #expect(rejection("not.a.token") == TokenRejection(.malformed))
    }

    @Test("a key removed from the snapshot no longer verifies")
    func keyRemoved() {
        let token = VectorKeys.sign(VectorKeys.claims())
        let without = VectorKeys.snapshot(
            generation: 2, mainKeys: VectorKeys.staticIssuerKeys.filter { $0.kid != "ec256-1" })
        #expect(VectorKeys.verdict(token, keys: without) == "unknown_key")
    }

    @Test("a token without kid is tried against every kid-less key of its algorithm")
    func kidlessCandidates() throws {
        // Two kid-less ES256 keys; the token is signed by the second.
        let decoy = try VerificationKey(kid: nil, algorithm: .ES256, key: P256Decoy.publicKey)
        let snapshot = KeySnapshot(
            generation: 1,
            issuers: [
                VectorKeys.issuerEntry(
                    VectorKeys.issuer, keys: [decoy, VectorKeys.key(nil, .ES256, "ec256")], audiences: nil,
                    requiredClaims: [])
            ])
        var claims = VectorKeys.claims()
        claims["aud"] = nil
        let token = VectorKeys.sign(claims, header: ["kid": .null])
        // A JSON null kid is not "no kid": the header must hold a string kid or none at all.
        #expect(VectorKeys.verdict(token, keys: snapshot) == "malformed")

        let kidless = try VectorKeys.ec256Signer.signWithoutKid(claims)
        #expect(VectorKeys.verdict(kidless, keys: snapshot) == "valid")
    }
}

/// A P-256 key nobody signs with.
private enum P256Decoy {
    static let publicKey = PublicKey.p256(P256.Signing.PrivateKey().publicKey)
}

extension JWTSigner {
    /// A token whose header has no `kid` at all.
    func signWithoutKid(_ claims: JSONObject) throws -> String {
        guard case .es256(let key) = self.key else { fatalError("ES256 only") }
        let header: JSONValue = ["alg": "ES256", "typ": "JWT"]
        let input =
            Base64URL.encode(Array(header.jsonText.utf8)) + "."
            + Base64URL.encode(Array(JSONValue.object(claims).jsonText.utf8))
        let signature = try key.signature(for: SHA256.hash(data: Array(input.utf8))).rawRepresentation
        return input + "." + Base64URL.encode(signature)
    }
}
