import Crypto

/// The RFC 7638 thumbprint of a public JWK: base64url SHA-256 of the JSON object of its
/// required members only, in lexicographic order, without whitespace (§3.2–3.3). What
/// `cnf.jkt` of a DPoP-bound token names (RFC 9449 §6.1).
enum JWKThumbprint {
    /// Nil when `jwk` lacks a required member or has a type the gateway does not verify.
    static func sha256(of jwk: JSONObject) -> String? {
        guard case .string(let kty)? = jwk["kty"] else { return nil }
        let members: [String]
        switch kty {
        case "EC": members = ["crv", "kty", "x", "y"]
        case "RSA": members = ["e", "kty", "n"]
        case "OKP": members = ["crv", "kty", "x"]
        default: return nil
        }
        var text = "{"
        for (index, name) in members.enumerated() {
            guard case .string(let value)? = jwk[name] else { return nil }
            // The members are base64url strings and short names: no escaping is needed, and
            // any character that would need it is refused rather than guessed at.
            guard
                value.utf8.allSatisfy({
                    $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
                })
            else { return nil }
            text += (index == 0 ? "" : ",") + "\"\(name)\":\"\(value)\""
        }
        text += "}"
        return Base64URL.encode(SHA256.hash(data: Array(text.utf8)))
    }
}
