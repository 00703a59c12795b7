import Crypto
import Foundation

import AuthGatewayDemo
@testable import AuthGateway

/// The committed key fixtures (`Fixtures/jwt/keys`) as the verifier configurations that
/// `scripts/make_test_vectors.py` describes in its header.
enum VectorKeys {
    static let issuer = "https://issuer.test"
    static let otherIssuer = "https://other.test"
    static let audience = "gateway-tests"
    static let now: Double = 1_700_001_000
    static let leewaySeconds = 30

    static func publicKey(_ stem: String) -> PublicKey {
        do {
            return try PublicKey(pem: Fixtures.text("jwt/keys/\(stem).pub.pem"))
        } catch {
            fatalError("cannot load \(stem).pub.pem: \(error)")
        }
    }

    static func key(_ kid: String?, _ algorithm: JWSAlgorithm, _ stem: String) -> VerificationKey {
        do {
            return try VerificationKey(kid: kid, algorithm: algorithm, key: self.publicKey(stem))
        } catch {
            fatalError("\(stem) cannot be used for \(algorithm): \(error)")
        }
    }

    /// The static keys of https://issuer.test (kidConfig "static").
    static let staticIssuerKeys: [VerificationKey] = [
        key("rsa-1", .RS256, "rsa"), key("rsa-384", .RS384, "rsa"), key("rsa-512", .RS512, "rsa"),
        key("pss-256", .PS256, "rsa-pss"), key("pss-384", .PS384, "rsa-pss"), key("pss-512", .PS512, "rsa-pss"),
        key("ec256-1", .ES256, "ec256"), key("ec384-1", .ES384, "ec384"), key("ec521-1", .ES512, "ec521"),
        key("ed-1", .EdDSA, "ed25519"),
        key(nil, .RS256, "rsa"),
    ]

    /// The keys of https://issuer.test read from `keys/jwks.json` (kidConfig "jwks").
    static let jwksIssuerKeys: [VerificationKey] = {
        do {
            return try JWKSet.parse(text: Fixtures.text("jwt/keys/jwks.json")).keys
        } catch {
            fatalError("cannot parse jwks.json: \(error)")
        }
    }()

    static func issuerEntry(
        _ name: String,
        keys: [VerificationKey],
        audiences: [String]?,
        requiredClaims: [String],
        leewaySeconds: Int = VectorKeys.leewaySeconds
    ) -> KeySnapshot.Issuer {
        var byID: [String: VerificationKey] = [:]
        var withoutID: [VerificationKey] = []
        for key in keys {
            if let kid = key.kid { byID[kid] = key } else { withoutID.append(key) }
        }
        return KeySnapshot.Issuer(
            issuer: name,
            audiences: audiences,
            leewaySeconds: leewaySeconds,
            requiredClaims: requiredClaims,
            keysByID: byID,
            keysWithoutID: withoutID,
            hasRemoteKeys: false,
            remoteKeysFetchedAt: nil
        )
    }

    static func mainIssuer(keys: [VerificationKey]) -> KeySnapshot.Issuer {
        issuerEntry(issuer, keys: keys, audiences: [audience], requiredClaims: ["sub"])
    }

    static let otherIssuerEntry = issuerEntry(
        otherIssuer, keys: [key("other-1", .RS256, "other-rsa")], audiences: nil, requiredClaims: [])

    static func snapshot(generation: UInt64 = 1, mainKeys: [VerificationKey]) -> KeySnapshot {
        KeySnapshot(generation: generation, issuers: [mainIssuer(keys: mainKeys), otherIssuerEntry])
    }

    static let staticSnapshot = snapshot(mainKeys: staticIssuerKeys)
    static let jwksSnapshot = snapshot(mainKeys: jwksIssuerKeys)

    /// Signs tokens with the committed `ec256` private key (kid `ec256-1`, ES256), for tests
    /// that need tokens with claims of their own.
    static let ec256Signer: JWTSigner = {
        do {
            let key = try P256.Signing.PrivateKey(pemRepresentation: Fixtures.text("jwt/keys/private/ec256.key.pem"))
            return JWTSigner(key: .es256(key), kid: "ec256-1")
        } catch {
            fatalError("cannot load ec256.key.pem: \(error)")
        }
    }()

    /// The baseline claims of the vectors (valid at `now`).
    static func claims(_ changes: [String: JSONValue?] = [:]) -> JSONObject {
        var claims: JSONObject = [
            "iss": .string(issuer), "sub": "user-42", "aud": .string(audience),
            "iat": 1_700_000_000, "nbf": 1_700_000_000, "exp": 1_700_003_600,
            "email": "alice@example.com",
        ]
        for (name, value) in changes.sorted(by: { $0.key < $1.key }) { claims[name] = value }
        return claims
    }

    static func sign(_ claims: JSONObject, header: JSONObject = JSONObject()) -> String {
        do {
            return try ec256Signer.sign(claims, header: header)
        } catch {
            fatalError("signing failed: \(error)")
        }
    }

    /// Signature verification of `token` against `keys`, then the clock check at `now`:
    /// "valid" or the failure's reason code.
    static func verdict(_ token: String, keys: KeySnapshot, now: Double = VectorKeys.now) -> String {
        var token = token
        let result = token.withUTF8 { TokenVerifier.verifySignature(token: UnsafeRawBufferPointer($0), keys: keys) }
        switch result {
        case .success(let verified): return verified.timeFailure(now: now)?.rawValue ?? "valid"
        case .failure(let rejection): return rejection.failure.rawValue
        }
    }

    static func verify(_ token: String, keys: KeySnapshot) -> Result<VerifiedToken, TokenRejection> {
        var token = token
        return token.withUTF8 { TokenVerifier.verifySignature(token: UnsafeRawBufferPointer($0), keys: keys) }
    }
}
