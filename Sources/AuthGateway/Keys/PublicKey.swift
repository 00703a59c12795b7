import Crypto
import Foundation
import SwiftASN1
import _CryptoExtras

/// A parsed public key of one of the kinds JWS uses.
public enum PublicKey: Sendable {
    case rsa(_RSA.Signing.PublicKey)
    case p256(P256.Signing.PublicKey)
    case p384(P384.Signing.PublicKey)
    case p521(P521.Signing.PublicKey)
    case ed25519(Curve25519.Signing.PublicKey)

    public var kind: PublicKeyKind {
        switch self {
        case .rsa: return .rsa
        case .p256: return .p256
        case .p384: return .p384
        case .p521: return .p521
        case .ed25519: return .ed25519
        }
    }

    /// RSA keys shorter than this are refused when loaded (NIST SP 800-131A).
    public static let minimumRSABits = 2048
}

/// Why key material could not be used. The message never contains key bytes.
public struct PublicKeyError: Error, Sendable, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}

extension PublicKey {
    // Object identifiers of RFC 3279, RFC 5480 and RFC 8410.
    private static let oidRSAEncryption: ASN1ObjectIdentifier = "1.2.840.113549.1.1.1"
    private static let oidECPublicKey: ASN1ObjectIdentifier = "1.2.840.10045.2.1"
    private static let oidP256: ASN1ObjectIdentifier = "1.2.840.10045.3.1.7"
    private static let oidP384: ASN1ObjectIdentifier = "1.3.132.0.34"
    private static let oidP521: ASN1ObjectIdentifier = "1.3.132.0.35"
    private static let oidEd25519: ASN1ObjectIdentifier = "1.3.101.112"

    /// Parses a DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7): the "raw public key" of CosyncAuth
    /// and the body of a `PUBLIC KEY` PEM block.
    public init(subjectPublicKeyInfo der: [UInt8]) throws(PublicKeyError) {
        let algorithm: ASN1ObjectIdentifier
        let curve: ASN1ObjectIdentifier?
        let keyBits: ArraySlice<UInt8>
        do {
            let root = try DER.parse(der)
            (algorithm, curve, keyBits) = try DER.sequence(root, identifier: .sequence) { nodes in
                guard let algorithmNode = nodes.next() else { throw PublicKeyError("missing algorithm") }
                let (oid, parameter) = try DER.sequence(algorithmNode, identifier: .sequence) {
                    inner -> (ASN1ObjectIdentifier, ASN1ObjectIdentifier?) in
                    let oid = try ASN1ObjectIdentifier(derEncoded: &inner)
                    guard let parameterNode = inner.next() else { return (oid, nil) }
                    if parameterNode.identifier == ASN1ObjectIdentifier.defaultIdentifier {
                        return (oid, try ASN1ObjectIdentifier(derEncoded: parameterNode))
                    }
                    return (oid, nil)  // NULL parameters of rsaEncryption
                }
                let bits = try ASN1BitString(derEncoded: &nodes)
                guard bits.paddingBits == 0 else { throw PublicKeyError("key bit string is not whole bytes") }
                return (oid, parameter, bits.bytes)
            }
        } catch let error as PublicKeyError {
            throw error
        } catch {
            throw PublicKeyError("not a DER SubjectPublicKeyInfo")
        }
        do {
            switch algorithm {
            case Self.oidRSAEncryption:
                let key = try _RSA.Signing.PublicKey(unsafeDERRepresentation: der)
                guard key.keySizeInBits >= Self.minimumRSABits else {
                    throw PublicKeyError(
                        "RSA key of \(key.keySizeInBits) bits is too short (minimum \(Self.minimumRSABits))")
                }
                self = .rsa(key)
            case Self.oidECPublicKey where curve == Self.oidP256:
                self = .p256(try P256.Signing.PublicKey(derRepresentation: der))
            case Self.oidECPublicKey where curve == Self.oidP384:
                self = .p384(try P384.Signing.PublicKey(derRepresentation: der))
            case Self.oidECPublicKey where curve == Self.oidP521:
                self = .p521(try P521.Signing.PublicKey(derRepresentation: der))
            case Self.oidECPublicKey:
                throw PublicKeyError("unsupported elliptic curve")
            case Self.oidEd25519:
                self = .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: keyBits))
            default:
                throw PublicKeyError("unsupported key algorithm \(algorithm)")
            }
        } catch let error as PublicKeyError {
            throw error
        } catch {
            throw PublicKeyError("invalid public key")
        }
    }

    /// Parses PEM text holding a `PUBLIC KEY`, an `RSA PUBLIC KEY` (PKCS #1) or a `CERTIFICATE`
    /// (the certificate's subject public key is used; its validity is not checked, as with
    /// Envoy's and oauth2-proxy's static keys).
    public init(pem: String) throws(PublicKeyError) {
        let document: PEMDocument
        do {
            document = try PEMDocument(pemString: pem)
        } catch {
            throw PublicKeyError("not a PEM document")
        }
        switch document.discriminator {
        case "PUBLIC KEY":
            try self.init(subjectPublicKeyInfo: document.derBytes)
        case "CERTIFICATE":
            try self.init(certificateDER: document.derBytes)
        case "RSA PUBLIC KEY":
            do {
                let key = try _RSA.Signing.PublicKey(unsafePEMRepresentation: pem)
                guard key.keySizeInBits >= Self.minimumRSABits else {
                    throw PublicKeyError(
                        "RSA key of \(key.keySizeInBits) bits is too short (minimum \(Self.minimumRSABits))")
                }
                self = .rsa(key)
            } catch let error as PublicKeyError {
                throw error
            } catch {
                throw PublicKeyError("invalid RSA public key")
            }
        case let other:
            if other.contains("PRIVATE") {
                throw PublicKeyError("PEM holds a private key; configure the public key only")
            }
            throw PublicKeyError("unsupported PEM type \"\(other)\"")
        }
    }

    /// Extracts and parses the SubjectPublicKeyInfo of a DER X.509 certificate (RFC 5280 §4.1).
    public init(certificateDER der: [UInt8]) throws(PublicKeyError) {
        let spki: ArraySlice<UInt8>
        do {
            let root = try DER.parse(der)
            spki = try DER.sequence(root, identifier: .sequence) { certificate in
                guard let tbs = certificate.next() else { throw PublicKeyError("empty certificate") }
                // signatureAlgorithm and signatureValue follow; skip them.
                while certificate.next() != nil {}
                return try DER.sequence(tbs, identifier: .sequence) { fields in
                    var node = fields.next()
                    // version [0] EXPLICIT is optional.
                    if node?.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                        node = fields.next()
                    }
                    // serialNumber (node), signature, issuer, validity, subject, then the key.
                    for _ in 0..<4 { _ = fields.next() }
                    guard node != nil, let keyInfo = fields.next() else {
                        throw PublicKeyError("truncated certificate")
                    }
                    while fields.next() != nil {}
                    return keyInfo.encodedBytes
                }
            }
        } catch let error as PublicKeyError {
            throw error
        } catch {
            throw PublicKeyError("not a DER X.509 certificate")
        }
        try self.init(subjectPublicKeyInfo: Array(spki))
    }

    /// Parses standard base64 of a DER SubjectPublicKeyInfo (whitespace allowed).
    public init(base64SubjectPublicKeyInfo text: String) throws(PublicKeyError) {
        let compact = text.filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: compact) else { throw PublicKeyError("not valid base64") }
        try self.init(subjectPublicKeyInfo: Array(data))
    }
}
