import AuthGateway
import Crypto
import Foundation
import _CryptoExtras

/// Issues JWS compact tokens, for the demo auth service and the tests' scripted services.
/// (The verifier is also checked against tokens made by an independent implementation; see
/// `scripts/make_test_vectors.py`.)
public struct JWTSigner: Sendable {
    public enum Key: Sendable {
        case rs256(_RSA.Signing.PrivateKey)
        case es256(P256.Signing.PrivateKey)
        case edDSA(Curve25519.Signing.PrivateKey)
    }

    public let key: Key
    public let kid: String

    public init(key: Key, kid: String) {
        self.key = key
        self.kid = kid
    }

    /// A fresh RSA-2048 key (the demo makes one per run).
    public static func generateRS256(kid: String) throws -> JWTSigner {
        JWTSigner(key: .rs256(try _RSA.Signing.PrivateKey(keySize: .bits2048)), kid: kid)
    }

    public var algorithm: String {
        switch self.key {
        case .rs256: return "RS256"
        case .es256: return "ES256"
        case .edDSA: return "EdDSA"
        }
    }

    public func sign(_ claims: JSONObject, header extra: JSONObject = JSONObject()) throws -> String {
        var header: JSONObject = ["alg": .string(self.algorithm), "typ": "JWT", "kid": .string(self.kid)]
        for entry in extra.entries { header[entry.key] = entry.value }
        let input =
            Base64URL.encode(Array(JSONValue.object(header).jsonText.utf8)) + "."
            + Base64URL.encode(Array(JSONValue.object(claims).jsonText.utf8))
        let data = Data(input.utf8)
        let signature: Data
        switch self.key {
        case .rs256(let key):
            signature = try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5).rawRepresentation
        case .es256(let key):
            signature = try key.signature(for: SHA256.hash(data: data)).rawRepresentation
        case .edDSA(let key):
            signature = try key.signature(for: data)
        }
        return input + "." + Base64URL.encode(signature)
    }

    /// The public key as a JWK (for a JWKS document).
    public func publicJWK() throws -> JSONValue {
        switch self.key {
        case .rs256(let key):
            let primitives = try key.publicKey.getKeyPrimitives()
            return [
                "kty": "RSA", "use": "sig", "alg": "RS256", "kid": .string(self.kid),
                "n": .string(Base64URL.encode(primitives.modulus)),
                "e": .string(Base64URL.encode(primitives.publicExponent)),
            ]
        case .es256(let key):
            let point = Array(key.publicKey.x963Representation)
            return [
                "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": .string(self.kid),
                "x": .string(Base64URL.encode(point[1...32])), "y": .string(Base64URL.encode(point[33...64])),
            ]
        case .edDSA(let key):
            return [
                "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": .string(self.kid),
                "x": .string(Base64URL.encode(key.publicKey.rawRepresentation)),
            ]
        }
    }

    /// The public key as SubjectPublicKeyInfo PEM.
    public var publicKeyPEM: String {
        switch self.key {
        case .rs256(let key): return key.publicKey.pemRepresentation
        case .es256(let key): return key.publicKey.pemRepresentation
        case .edDSA(let key):
            // RFC 8410 SubjectPublicKeyInfo: fixed 12-byte prefix + the 32-byte key.
            let der: [UInt8] =
                [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]
                + Array(key.publicKey.rawRepresentation)
            return "-----BEGIN PUBLIC KEY-----\n\(Data(der).base64EncodedString())\n-----END PUBLIC KEY-----\n"
        }
    }
}
