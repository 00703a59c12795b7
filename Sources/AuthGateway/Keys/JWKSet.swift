import Crypto
import _CryptoExtras

/// Reads a JSON Web Key Set (RFC 7517 §5) into verification keys.
///
/// Only signature keys are taken: `oct` (shared-secret) keys, keys with `use` other than `sig`,
/// keys whose `key_ops` lack `verify`, and keys of unsupported types are skipped and reported.
/// An RSA key without `alg` is pinned to RS256 (the JWA default that every OIDC provider
/// uses); EC and OKP keys take the one algorithm their curve allows.
public enum JWKSet {
    public struct Parsed: Sendable {
        public var keys: [VerificationKey]
        /// One line per skipped key, e.g. `keys[3] (kid "hmac-1"): oct keys are never used`.
        public var skipped: [String]
    }

    public static func parse(_ document: JSONValue) throws(PublicKeyError) -> Parsed {
        guard let entries = document["keys"]?.arrayValue else {
            throw PublicKeyError("a JWKS must be an object with a \"keys\" array")
        }
        var parsed = Parsed(keys: [], skipped: [])
        for (index, entry) in entries.enumerated() {
            let kid = entry["kid"]?.stringValue
            let label = kid.map { "keys[\(index)] (kid \"\($0)\")" } ?? "keys[\(index)]"
            do throws(PublicKeyError) {
                guard let object = entry.objectValue else { throw PublicKeyError("not an object") }
                if let key = try Self.verificationKey(from: object, kid: kid) {
                    parsed.keys.append(key)
                } else {
                    parsed.skipped.append("\(label): not a signature verification key")
                }
            } catch {
                parsed.skipped.append("\(label): \(error.message)")
            }
        }
        return parsed
    }

    public static func parse(text: String) throws(PublicKeyError) -> Parsed {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: text)
        } catch {
            throw PublicKeyError("JWKS is not valid JSON: \(error)")
        }
        return try Self.parse(document)
    }

    /// The key, nil for keys that are not for verifying signatures, or an error for a broken one.
    static func verificationKey(from jwk: JSONObject, kid: String?) throws(PublicKeyError) -> VerificationKey? {
        if let use = jwk["use"], use != .string("sig") { return nil }
        if let operations = jwk["key_ops"] {
            guard let list = operations.arrayValue, list.contains(.string("verify")) else { return nil }
        }
        guard let kty = jwk["kty"]?.stringValue else { throw PublicKeyError("missing \"kty\"") }
        let declaredAlgorithm = jwk["alg"]?.stringValue
        let key: PublicKey
        switch kty {
        case "oct":
            throw PublicKeyError("oct keys are never used")
        case "RSA":
            let n = try Self.bytes(jwk, "n"), e = try Self.bytes(jwk, "e")
            let rsa: _RSA.Signing.PublicKey
            // Checked here as well as by swift-crypto, so the reason logged is the real one.
            let bits = (n.drop { $0 == 0 }.count) * 8
            guard bits >= PublicKey.minimumRSABits else {
                throw PublicKeyError("RSA key of about \(bits) bits is too short (minimum \(PublicKey.minimumRSABits))")
            }
            do {
                rsa = try _RSA.Signing.PublicKey(n: n, e: e)
            } catch {
                throw PublicKeyError("invalid RSA key")
            }
            guard rsa.keySizeInBits >= PublicKey.minimumRSABits else {
                throw PublicKeyError(
                    "RSA key of \(rsa.keySizeInBits) bits is too short (minimum \(PublicKey.minimumRSABits))")
            }
            key = .rsa(rsa)
        case "EC":
            let x = try Self.bytes(jwk, "x"), y = try Self.bytes(jwk, "y")
            let point = [0x04] + x + y
            do {
                switch jwk["crv"]?.stringValue {
                case "P-256": key = .p256(try P256.Signing.PublicKey(x963Representation: point))
                case "P-384": key = .p384(try P384.Signing.PublicKey(x963Representation: point))
                case "P-521": key = .p521(try P521.Signing.PublicKey(x963Representation: point))
                default: throw PublicKeyError("unsupported curve")
                }
            } catch let error as PublicKeyError {
                throw error
            } catch {
                throw PublicKeyError("invalid EC key")
            }
        case "OKP":
            guard jwk["crv"]?.stringValue == "Ed25519" else { throw PublicKeyError("unsupported OKP curve") }
            do {
                key = .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: try Self.bytes(jwk, "x")))
            } catch let error as PublicKeyError {
                throw error
            } catch {
                throw PublicKeyError("invalid Ed25519 key")
            }
        default:
            throw PublicKeyError("unsupported key type \"\(kty)\"")
        }
        let algorithm: JWSAlgorithm
        if let declaredAlgorithm {
            // RFC 8037 names the algorithm "EdDSA"; some providers write the curve instead.
            let name = declaredAlgorithm == "Ed25519" ? "EdDSA" : declaredAlgorithm
            guard let parsed = JWSAlgorithm(rawValue: name) else {
                throw PublicKeyError("unsupported algorithm \"\(declaredAlgorithm)\"")
            }
            algorithm = parsed
        } else {
            algorithm = JWSAlgorithm.implied(by: key.kind) ?? .RS256
        }
        return try VerificationKey(kid: kid, algorithm: algorithm, key: key)
    }

    private static func bytes(_ jwk: JSONObject, _ member: String) throws(PublicKeyError) -> [UInt8] {
        guard let text = jwk[member]?.stringValue, let bytes = Base64URL.decode(text), !bytes.isEmpty else {
            throw PublicKeyError("missing or invalid \"\(member)\"")
        }
        return bytes
    }
}
