import Foundation
import NIOHTTP1

/// `application/x-www-form-urlencoded` encoding (WHATWG URL §5.2) of the form posts the gateway
/// makes itself: refreshes, introspection, sign-in, token exchanges.
enum FormEncoding {
    /// The fields as a form body.
    static func body(_ fields: [(String, String)]) -> String {
        fields.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
    }

    /// OAuth client authentication (RFC 6749 §2.3.1) of a form post to a token or
    /// introspection endpoint: HTTP Basic with both parts form-encoded before base64, or the
    /// credentials in the form. Nothing without a client id.
    static func authenticateClient(
        _ clientID: String?, secret: Secret?, as authentication: RefreshConfiguration.ClientAuthentication,
        headers: inout HTTPHeaders,
        form: inout [(String, String)]
    ) {
        guard let clientID else { return }
        switch authentication {
        case .basic:
            // Where the secret leaves its `Secret` (docs/operations.md, "What is never logged").
            let credentials = "\(Self.encode(clientID)):\(Self.encode(secret?.value ?? ""))"
            headers.add(name: "Authorization", value: "Basic \(Data(credentials.utf8).base64EncodedString())")
        case .form:
            form.append(("client_id", clientID))
            if let secret { form.append(("client_secret", secret.value)) }
        }
    }

    static func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                output += "+"
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }
}
