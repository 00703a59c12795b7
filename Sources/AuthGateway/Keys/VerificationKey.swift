import Crypto
import _CryptoExtras

/// A public key pinned to the one JWS algorithm it may verify.
///
/// The pin is what defeats algorithm confusion: the token's `alg` header only selects among
/// keys, it never changes how a key is used.
public struct VerificationKey: Sendable {
    public let kid: String?
    public let algorithm: JWSAlgorithm
    public let key: PublicKey

    public init(kid: String?, algorithm: JWSAlgorithm, key: PublicKey) throws(PublicKeyError) {
        guard algorithm.keyKind == key.kind else {
            throw PublicKeyError("a \(key.kind) key cannot verify \(algorithm.rawValue)")
        }
        self.kid = kid
        self.algorithm = algorithm
        self.key = key
    }

    /// Checks `signature` over `signingInput` (the ASCII `header.payload` of the token).
    public func isValidSignature(_ signature: [UInt8], for signingInput: UnsafeRawBufferPointer) -> Bool {
        switch (self.key, self.algorithm) {
        case (.rsa(let key), .RS256):
            return key.isValidSignature(
                .init(rawRepresentation: signature), for: SHA256.hash(data: signingInput), padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .RS384):
            return key.isValidSignature(
                .init(rawRepresentation: signature), for: SHA384.hash(data: signingInput), padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .RS512):
            return key.isValidSignature(
                .init(rawRepresentation: signature), for: SHA512.hash(data: signingInput), padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .PS256):
            return key.isValidSignature(
                .init(rawRepresentation: signature), for: SHA256.hash(data: signingInput), padding: .PSS)
        case (.rsa(let key), .PS384):
            return key.isValidSignature(
                .init(rawRepresentation: signature), for: SHA384.hash(data: signingInput), padding: .PSS)
        case (.rsa(let key), .PS512):
            return key.isValidSignature(
                .init(rawRepresentation: signature), for: SHA512.hash(data: signingInput), padding: .PSS)
        case (.p256(let key), .ES256):
            guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: SHA256.hash(data: signingInput))
        case (.p384(let key), .ES384):
            guard let ecdsa = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: SHA384.hash(data: signingInput))
        case (.p521(let key), .ES512):
            guard let ecdsa = try? P521.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: SHA512.hash(data: signingInput))
        case (.ed25519(let key), .EdDSA):
            return key.isValidSignature(signature, for: signingInput)
        default:
            // Unreachable: `init` pins algorithm and key kind together.
            return false
        }
    }
}
