import Crypto
import Foundation
import _CryptoExtras

/// A private key the gateway signs with (docs/assertions.md): its identity assertions for
/// backends. The algorithm follows the key type — EC P-256 → ES256, RSA (2048 bits or more) →
/// RS256, Ed25519 → EdDSA — so a key file never names one that does not fit its key.
///
/// Descriptions and dumps show the algorithm only: the key material must never reach a log
/// line (docs/operations.md, "What is never logged").
public struct SigningKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    enum Material: Sendable {
        case p256(P256.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    /// The algorithms the gateway signs with.
    public enum Algorithm: String, Sendable, CaseIterable {
        case ES256, RS256, EdDSA
    }

    let material: Material

    init(_ material: Material) { self.material = material }

    public var algorithm: Algorithm {
        switch self.material {
        case .p256: return .ES256
        case .rsa: return .RS256
        case .ed25519: return .EdDSA
        }
    }

    /// A fresh key of `algorithm` (`auth-gateway assertion-key new`; RSA keys have 2048 bits).
    public static func generate(_ algorithm: Algorithm) throws -> SigningKey {
        switch algorithm {
        case .ES256: return SigningKey(.p256(P256.Signing.PrivateKey()))
        case .RS256: return SigningKey(.rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048)))
        case .EdDSA: return SigningKey(.ed25519(Curve25519.Signing.PrivateKey()))
        }
    }

    /// The signature of `input` (the JWS signing input, RFC 7515 §5.1) in JWS form: r‖s for
    /// ES256 (RFC 7518 §3.4), PKCS #1 v1.5 for RS256, the 64 bytes of Ed25519.
    func signature(of input: some DataProtocol) -> [UInt8] {
        // Signing with a key that loaded cannot fail but for memory exhaustion.
        switch self.material {
        case .p256(let key):
            return Array(try! key.signature(for: input).rawRepresentation)
        case .rsa(let key):
            return Array(
                try! key.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        case .ed25519(let key):
            return Array(try! key.signature(for: input))
        }
    }

    /// The public part as a JWK with `kid`, `use: sig` and `alg`: members in a fixed order, so
    /// that replicas given the same key publish the same bytes.
    public func publicJWK(kid: String) -> JSONObject {
        switch self.material {
        case .p256(let key):
            let point = Array(key.publicKey.x963Representation)
            return [
                "kty": "EC", "kid": .string(kid), "use": "sig", "alg": "ES256", "crv": "P-256",
                "x": .string(Base64URL.encode(point[1...32])), "y": .string(Base64URL.encode(point[33...64])),
            ]
        case .rsa(let key):
            // The primitives of a key that loaded are always there.
            let primitives = try! key.publicKey.getKeyPrimitives()
            return [
                "kty": "RSA", "kid": .string(kid), "use": "sig", "alg": "RS256",
                "n": .string(Base64URL.encode(primitives.modulus)),
                "e": .string(Base64URL.encode(primitives.publicExponent)),
            ]
        case .ed25519(let key):
            return [
                "kty": "OKP", "kid": .string(kid), "use": "sig", "alg": "EdDSA", "crv": "Ed25519",
                "x": .string(Base64URL.encode(key.publicKey.rawRepresentation)),
            ]
        }
    }

    /// The whole key as a private JWK (EC and Ed25519), or nil for RSA, whose entries carry PEM
    /// (`privateKeyPEM`): what `assertion-key new` prints.
    public func privateJWK(kid: String) -> JSONObject? {
        var jwk = self.publicJWK(kid: kid)
        switch self.material {
        case .p256(let key): jwk["d"] = .string(Base64URL.encode(key.rawRepresentation))
        case .ed25519(let key): jwk["d"] = .string(Base64URL.encode(key.rawRepresentation))
        case .rsa: return nil
        }
        return jwk
    }

    /// PEM of the private key (PKCS #8 for EC, PKCS #1 for RSA); nil for Ed25519, which
    /// swift-crypto writes only as a JWK here.
    public var privateKeyPEM: String? {
        switch self.material {
        case .p256(let key): return key.pemRepresentation
        case .rsa(let key): return key.pemRepresentation
        case .ed25519: return nil
        }
    }

    public var description: String { "SigningKey(\(self.algorithm.rawValue), <redacted>)" }
    public var debugDescription: String { self.description }
    public var customMirror: Mirror { Mirror(self, children: ["algorithm": self.algorithm], displayStyle: .struct) }
}
