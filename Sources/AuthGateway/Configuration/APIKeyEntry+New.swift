import Crypto
import Foundation

/// `auth-gateway apikey new --id ID` (docs/policies.md, "API keys"): a fresh key and the entry
/// that names it. Only the digest goes into the configuration; the key is shown once.
extension APIKeyEntry {
    /// What every key `new` makes starts with, so a leaked one is recognizable (secret scanners).
    public static let keyPrefix = "agk_"

    /// A fresh key (32 bytes from the system's secure generator, base64url) and its entry, with
    /// `{"sub": id}` as the claims to edit.
    public static func new(id: String) -> (key: String, entry: APIKeyEntry) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let key = Self.keyPrefix + Base64URL.encode(bytes)
        let entry = APIKeyEntry(id: id, sha256: Array(SHA256.hash(data: Array(key.utf8))), claims: ["sub": .string(id)])
        return (key, entry)
    }

    /// What `apikey new` prints: the key (shown once) and its entry.
    public static func newKeyText(key: String, entry: APIKeyEntry) -> String {
        """
        API key "\(entry.id)" (shown once: store it as a secret; the gateway keeps only its SHA-256):
        \(key)

        Its entry, for tokens.apiKeys.keys or the keys file (edit the claims, add "expires" if it should):
        \(entry.json.jsonText)

        Clients send it as: \(APIKeysConfiguration.defaultHeader): \(key)

        """
    }

    /// The entry as it goes into `tokens.apiKeys.keys` or a keys file.
    public var json: JSONValue {
        var object: JSONObject = [
            "id": .string(self.id), "sha256": .string(self.sha256.map { Self.hexDigit($0) }.joined()),
            "claims": .object(self.claims),
        ]
        if let expiresAt = self.expiresAt {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime]
            object["expires"] = .string(formatter.string(from: Date(timeIntervalSince1970: expiresAt)))
        }
        return .object(object)
    }

    private static func hexDigit(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
