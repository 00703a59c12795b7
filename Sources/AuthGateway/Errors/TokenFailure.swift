/// Why an access token was refused.
///
/// The raw value is the stable reason code: the `reason` label of
/// `auth_gateway_auth_failures_total`, the `auth.failure` log field and the test vectors'
/// expectations. `description` is the RFC 6750 `error_description` a client sees.
public enum TokenFailure: String, Error, Sendable, CaseIterable {
    case malformed
    case unsupportedAlgorithm = "unsupported_algorithm"
    case unknownKey = "unknown_key"
    case algorithmMismatch = "algorithm_mismatch"
    case badSignature = "bad_signature"
    case criticalHeader = "critical_header"
    case expired
    case notYetValid = "not_yet_valid"
    case issuedInFuture = "issued_in_future"
    case wrongIssuer = "wrong_issuer"
    case wrongAudience = "wrong_audience"
    case missingClaim = "missing_claim"
    case invalidClaim = "invalid_claim"

    public var description: String {
        switch self {
        case .malformed: return "The access token is malformed"
        case .unsupportedAlgorithm: return "The access token uses an unsupported algorithm"
        case .unknownKey: return "The access token is signed with an unknown key"
        case .algorithmMismatch: return "The access token algorithm does not match its key"
        case .badSignature: return "The access token signature is invalid"
        case .criticalHeader: return "The access token has an unsupported critical header"
        case .expired: return "The access token expired"
        case .notYetValid: return "The access token is not valid yet"
        case .issuedInFuture: return "The access token was issued in the future"
        case .wrongIssuer: return "The access token issuer is not trusted"
        case .wrongAudience: return "The access token is not meant for this audience"
        case .missingClaim: return "The access token lacks a required claim"
        case .invalidClaim: return "The access token has an invalid claim"
        }
    }
}
