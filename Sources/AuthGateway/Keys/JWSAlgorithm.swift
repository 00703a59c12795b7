/// The JWS signature algorithms the gateway verifies (RFC 7518 §3, RFC 8037 for EdDSA).
///
/// There is deliberately no `none` and no HMAC case: a gateway that holds only public keys must
/// never accept a token whose integrity rests on a shared secret (or on nothing).
public enum JWSAlgorithm: String, Sendable, CaseIterable, Hashable {
    case RS256, RS384, RS512
    case PS256, PS384, PS512
    case ES256, ES384, ES512
    case EdDSA

    /// The kind of public key the algorithm needs.
    public var keyKind: PublicKeyKind {
        switch self {
        case .RS256, .RS384, .RS512, .PS256, .PS384, .PS512: return .rsa
        case .ES256: return .p256
        case .ES384: return .p384
        case .ES512: return .p521
        case .EdDSA: return .ed25519
        }
    }

    /// The algorithm a JWK or key type implies when only one fits (EC curves and Ed25519);
    /// RSA keys fit six algorithms and need one named.
    public static func implied(by kind: PublicKeyKind) -> JWSAlgorithm? {
        switch kind {
        case .rsa: return nil
        case .p256: return .ES256
        case .p384: return .ES384
        case .p521: return .ES512
        case .ed25519: return .EdDSA
        }
    }
}

/// The type of a public key, as read from its SubjectPublicKeyInfo or JWK.
public enum PublicKeyKind: String, Sendable, Hashable, CustomStringConvertible {
    case rsa = "RSA"
    case p256 = "EC P-256"
    case p384 = "EC P-384"
    case p521 = "EC P-521"
    case ed25519 = "Ed25519"

    public var description: String { self.rawValue }
}
