import Crypto
import Foundation
import SwiftASN1
import _CryptoExtras

/// Reading private keys from PEM (PKCS #8 `PRIVATE KEY`, SEC 1 `EC PRIVATE KEY`, PKCS #1 `RSA
/// PRIVATE KEY`) and from private JWKs (RFC 7517/7518/8037). What cannot be used is refused
/// with a reason that never quotes key bytes: another curve than P-256, RSA under 2048 bits, a
/// JWK whose public members do not match its private one.
extension SigningKey {
    private static let oidRSAEncryption: ASN1ObjectIdentifier = "1.2.840.113549.1.1.1"
    private static let oidECPublicKey: ASN1ObjectIdentifier = "1.2.840.10045.2.1"
    private static let oidP256: ASN1ObjectIdentifier = "1.2.840.10045.3.1.7"
    private static let oidEd25519: ASN1ObjectIdentifier = "1.3.101.112"

    public init(pem: String) throws(PublicKeyError) {
        let document: PEMDocument
        do {
            document = try PEMDocument(pemString: pem)
        } catch {
            throw PublicKeyError("not a PEM document")
        }
        switch document.discriminator {
        case "EC PRIVATE KEY":
            self = try Self.p256(pem: pem)
        case "RSA PRIVATE KEY":
            self = try Self.rsa(pem: pem)
        case "PRIVATE KEY":
            let (algorithm, curve, privateKey) = try Self.pkcs8(document.derBytes)
            switch algorithm {
            case Self.oidRSAEncryption:
                self = try Self.rsa(pem: pem)
            case Self.oidECPublicKey where curve == Self.oidP256:
                self = try Self.p256(pem: pem)
            case Self.oidECPublicKey:
                throw PublicKeyError("unsupported elliptic curve (assertion keys are P-256, RSA or Ed25519)")
            case Self.oidEd25519:
                // The PrivateKey OCTET STRING holds a CurvePrivateKey OCTET STRING (RFC 8410 §7).
                guard let outer = try? ASN1OctetString(derEncoded: privateKey),
                    let innerNode = try? DER.parse(Array(outer.bytes)),
                    let inner = try? ASN1OctetString(derEncoded: innerNode), inner.bytes.count == 32,
                    let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: inner.bytes)
                else { throw PublicKeyError("invalid Ed25519 private key") }
                self.init(.ed25519(key))
            default:
                throw PublicKeyError("unsupported key algorithm \(algorithm)")
            }
        case let other:
            throw PublicKeyError("PEM holds \"\(other)\", not a private key")
        }
    }

    /// A private JWK: `EC` (P-256, `d`, `x`, `y`), `RSA` (`n`, `e`, `d`, `p`, `q`) or `OKP`
    /// (Ed25519, `d`, `x`).
    public init(jwk: JSONObject) throws(PublicKeyError) {
        guard let kty = jwk["kty"]?.stringValue else { throw PublicKeyError("missing \"kty\"") }
        if let alg = jwk["alg"]?.stringValue, Algorithm(rawValue: alg) == nil {
            throw PublicKeyError("unsupported \"alg\" \"\(alg)\" (ES256, RS256 or EdDSA)")
        }
        switch kty {
        case "EC":
            guard jwk["crv"]?.stringValue == "P-256" else {
                throw PublicKeyError("unsupported elliptic curve (assertion keys are P-256, RSA or Ed25519)")
            }
            let d = try Self.bytes(jwk, "d")
            guard let key = try? P256.Signing.PrivateKey(rawRepresentation: d) else {
                throw PublicKeyError("invalid P-256 private key")
            }
            self.init(.p256(key))
        case "RSA":
            let n = try Self.bytes(jwk, "n"), e = try Self.bytes(jwk, "e"), d = try Self.bytes(jwk, "d")
            let p = try Self.bytes(jwk, "p"), q = try Self.bytes(jwk, "q")
            let bits = n.drop { $0 == 0 }.count * 8
            guard bits >= PublicKey.minimumRSABits else {
                throw PublicKeyError("RSA key of about \(bits) bits is too short (minimum \(PublicKey.minimumRSABits))")
            }
            guard let key = try? _RSA.Signing.PrivateKey(n: n, e: e, d: d, p: p, q: q) else {
                throw PublicKeyError("invalid RSA private key")
            }
            self.init(.rsa(key))
        case "OKP":
            guard jwk["crv"]?.stringValue == "Ed25519" else { throw PublicKeyError("unsupported OKP curve") }
            guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: try Self.bytes(jwk, "d")) else {
                throw PublicKeyError("invalid Ed25519 private key")
            }
            self.init(.ed25519(key))
        case "oct":
            throw PublicKeyError("oct keys are never used: assertions are signed with a private key")
        default:
            throw PublicKeyError("unsupported key type \"\(kty)\"")
        }
        // A JWK whose public members belong to another key would publish a JWKS that does not
        // verify what is signed.
        let derived = self.publicJWK(kid: "")
        for member in ["x", "y", "n", "e"] where jwk[member] != nil {
            guard let given = jwk[member]?.stringValue.flatMap({ Base64URL.decode($0) }),
                let own = derived[member]?.stringValue.flatMap({ Base64URL.decode($0) }),
                given.drop(while: { $0 == 0 }).elementsEqual(own.drop(while: { $0 == 0 }))
            else { throw PublicKeyError("\"\(member)\" does not belong to the private key") }
        }
    }

    private static func p256(pem: String) throws(PublicKeyError) -> SigningKey {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw PublicKeyError(
                "not a usable EC private key (unsupported curve: assertion keys are P-256, RSA or Ed25519)")
        }
        return SigningKey(.p256(key))
    }

    private static func rsa(pem: String) throws(PublicKeyError) -> SigningKey {
        guard let key = try? _RSA.Signing.PrivateKey(unsafePEMRepresentation: pem) else {
            throw PublicKeyError("invalid RSA private key")
        }
        guard key.keySizeInBits >= PublicKey.minimumRSABits else {
            throw PublicKeyError(
                "RSA key of \(key.keySizeInBits) bits is too short (minimum \(PublicKey.minimumRSABits))")
        }
        return SigningKey(.rsa(key))
    }

    /// The algorithm, its curve parameter, and the PrivateKey octets of a PKCS #8
    /// PrivateKeyInfo (RFC 5208 §5).
    private static func pkcs8(
        _ der: [UInt8]
    ) throws(PublicKeyError) -> (ASN1ObjectIdentifier, ASN1ObjectIdentifier?, ASN1Node) {
        do {
            let root = try DER.parse(der)
            return try DER.sequence(root, identifier: .sequence) { nodes in
                _ = try Int(derEncoded: &nodes)  // version
                guard let algorithmNode = nodes.next() else { throw PublicKeyError("missing algorithm") }
                let (oid, parameter) = try DER.sequence(algorithmNode, identifier: .sequence) {
                    inner -> (ASN1ObjectIdentifier, ASN1ObjectIdentifier?) in
                    let oid = try ASN1ObjectIdentifier(derEncoded: &inner)
                    guard let parameterNode = inner.next() else { return (oid, nil) }
                    if parameterNode.identifier == ASN1ObjectIdentifier.defaultIdentifier {
                        return (oid, try ASN1ObjectIdentifier(derEncoded: parameterNode))
                    }
                    return (oid, nil)
                }
                guard let privateKey = nodes.next() else { throw PublicKeyError("missing private key") }
                while nodes.next() != nil {}  // attributes, public key
                return (oid, parameter, privateKey)
            }
        } catch let error as PublicKeyError {
            throw error
        } catch {
            throw PublicKeyError("not a PKCS #8 private key")
        }
    }

    private static func bytes(_ jwk: JSONObject, _ member: String) throws(PublicKeyError) -> [UInt8] {
        guard let text = jwk[member]?.stringValue, let bytes = Base64URL.decode(text), !bytes.isEmpty else {
            throw PublicKeyError("missing or invalid \"\(member)\"")
        }
        return bytes
    }
}
