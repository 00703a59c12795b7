import Crypto
import Foundation

/// Seals refresh outcomes (and introspection answers, `OutcomeSealer+Introspection`) for the
/// shared tables with AES-256-GCM (docs/shared-state.md): nothing stored reveals a token. The key
/// digest of the row is the authenticated data, so a sealed outcome copied to another row does not
/// open there.
///
/// Layout: a format byte (1), then AES-GCM's combined form (12-byte nonce, ciphertext, 16-byte
/// tag). The plaintext is a small JSON object: `{"o":"refreshed","a":…,"r":…}`, `{"o":"rejected"}`
/// or `{"o":"unavailable"}` for refreshes; `{"o":"active","c":{claims}}` or `{"o":"inactive"}`
/// for introspection answers.
struct OutcomeSealer: Sendable {
    struct OpenError: Error, Equatable, CustomStringConvertible {
        enum Reason: Equatable {
            case unknownFormat
            /// Wrong key, another row's outcome, or altered bytes.
            case notAuthentic
            case unreadable
        }

        let reason: Reason

        var description: String {
            switch self.reason {
            case .unknownFormat: return "stored outcome has an unknown format"
            case .notAuthentic:
                return "stored outcome does not open with this key (is encryptionKeyBase64 the same on every instance?)"
            case .unreadable: return "stored outcome is unreadable"
            }
        }
    }

    static let format: UInt8 = 1
    private let key: SymmetricKey

    init(key: SharedStateConfiguration.EncryptionKey) {
        self.key = SymmetricKey(data: key.bytes)
    }

    func seal(_ outcome: RefreshOutcome, for digest: TokenDigest) -> [UInt8] {
        self.seal(document: Self.encode(outcome), for: digest)
    }

    func open(_ sealed: [UInt8], for digest: TokenDigest) throws(OpenError) -> RefreshOutcome {
        guard let outcome = Self.decode(try self.openDocument(sealed, for: digest)) else {
            throw OpenError(reason: .unreadable)
        }
        return outcome
    }

    /// Seals any small JSON document the same way (the shared introspection answers use it).
    func seal(document: JSONValue, for digest: TokenDigest) -> [UInt8] {
        let plaintext = Array(document.jsonText.utf8)
        // Sealing with a fresh random nonce cannot fail for these sizes.
        let box = try! AES.GCM.seal(plaintext, using: self.key, authenticating: digest.bytes)
        return [Self.format] + Array(box.combined!)
    }

    func openDocument(_ sealed: [UInt8], for digest: TokenDigest) throws(OpenError) -> JSONValue {
        guard sealed.first == Self.format else { throw OpenError(reason: .unknownFormat) }
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(combined: sealed.dropFirst())
            plaintext = try AES.GCM.open(box, using: self.key, authenticating: digest.bytes)
        } catch {
            throw OpenError(reason: .notAuthentic)
        }
        guard let document = try? JSONValue(parsing: String(decoding: plaintext, as: UTF8.self)) else {
            throw OpenError(reason: .unreadable)
        }
        return document
    }

    private static func encode(_ outcome: RefreshOutcome) -> JSONValue {
        switch outcome {
        case .refreshed(let accessToken, let refreshToken):
            var object: JSONObject = ["o": "refreshed", "a": .string(accessToken)]
            if let refreshToken { object["r"] = .string(refreshToken) }
            return .object(object)
        case .rejected:
            return ["o": "rejected"]
        case .unavailable:
            return ["o": "unavailable"]
        }
    }

    private static func decode(_ document: JSONValue) -> RefreshOutcome? {
        switch document["o"]?.stringValue {
        case "refreshed":
            guard let accessToken = document["a"]?.stringValue else { return nil }
            return .refreshed(accessToken: accessToken, refreshToken: document["r"]?.stringValue)
        case "rejected":
            return .rejected
        case "unavailable":
            return .unavailable
        default:
            return nil
        }
    }
}
