import Foundation

/// The fields of a query string or an `application/x-www-form-urlencoded` body.
///
/// OAuth parameters must not repeat (RFC 6749 §3.1), so a field sent twice is remembered as
/// `repeated` and the endpoints refuse the request instead of picking one of the values.
struct DemoForm: Sendable {
    private(set) var fields: [String: String] = [:]
    private(set) var repeated: Set<String> = []
    /// Whether some part was not valid percent-encoding.
    private(set) var malformed = false

    init(encoded text: some StringProtocol) {
        for pair in text.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(Substring(parts[0])),
                let value = Self.decode(Substring(parts.count > 1 ? parts[1] : ""))
            else {
                self.malformed = true
                continue
            }
            if self.fields[name] != nil { self.repeated.insert(name) }
            self.fields[name] = value
        }
    }

    /// The query of a request target (`/authorize?a=b`).
    init(queryOf uri: String) {
        self.init(encoded: uri.split(separator: "?", maxSplits: 1).dropFirst().first ?? "")
    }

    /// A field's value; empty values count as absent (RFC 6749 §3.1).
    subscript(name: String) -> String? {
        guard let value = self.fields[name], !value.isEmpty else { return nil }
        return value
    }

    /// The fields as `a=b&c=d`, in the order given.
    static func encode(_ fields: [(String, String)]) -> String {
        fields.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
    }

    /// `uri` with `fields` added to its query (RFC 6749 §4.1.2: the redirect URI may already have one).
    static func appending(_ fields: [(String, String)], to uri: String) -> String {
        uri + (uri.contains("?") ? "&" : "?") + Self.encode(fields)
    }

    /// Form encoding (WHATWG URL §5.2): unreserved bytes as they are, space as `+`, the rest `%XX`.
    static func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "*"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                output += "+"
            default:
                output += String(format: "%%%02X", byte)
            }
        }
        return output
    }

    static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
