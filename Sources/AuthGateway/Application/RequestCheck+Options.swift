import Foundation

/// What `check --request` reads from its command line.
extension RequestCheck {
    /// The header `--token` goes in: the first configured token source, as a client sends it.
    static func tokenHeader(_ token: String, sources: [TokenSourceConfiguration]) -> (name: String, value: String) {
        switch sources.first {
        case .header(let name, let bearer, _)?: return (name, bearer ? "Bearer \(token)" : token)
        case .cookie(let name)?: return ("Cookie", "\(name)=\(token)")
        // helper/streams hook: the token source docs/streams.md adds.
        case .websocketProtocol(let prefix)?:
            return ("Sec-WebSocket-Protocol", prefix + Base64URL.encode(Array(token.utf8)))
        case nil: return ("Authorization", "Bearer \(token)")
        }
    }

    static func object(_ text: String, option: String) throws(UsageError) -> JSONObject {
        guard let value = try? JSONValue(parsing: text), case .object(let object) = value else {
            throw UsageError("\(option): expected a JSON object")
        }
        return object
    }
}
