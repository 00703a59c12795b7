/// The gRPC status codes the gateway answers with, and the one mapping from its HTTP statuses
/// (docs/http2.md, "gRPC"; docs/authorizer.md for the `Check` denials): a gRPC client of a
/// proxied call and Envoy asking `Check` read a refusal the same way.
enum GRPCStatusCode {
    static let ok = 0
    static let unknown = 2
    static let invalidArgument = 3
    static let deadlineExceeded = 4
    static let permissionDenied = 7
    static let resourceExhausted = 8
    static let unimplemented = 12
    static let unavailable = 14
    static let unauthenticated = 16

    /// The code for an HTTP status the gateway answers with.
    static func forHTTPStatus(_ status: Int) -> Int {
        switch status {
        // A sign-in redirect is the answer to a caller without credentials.
        case 401, 302, 303, 307: return Self.unauthenticated
        case 403: return Self.permissionDenied
        case 404: return Self.unimplemented
        case 400, 405, 408: return Self.invalidArgument
        case 413, 429, 431: return Self.resourceExhausted
        case 502, 503: return Self.unavailable
        case 504: return Self.deadlineExceeded
        default: return Self.unknown
        }
    }

    /// `grpc-message` is percent-encoded (gRPC over HTTP/2): bytes outside 0x20…0x7E, and `%`,
    /// become `%XX`.
    static func percentEncoded(_ message: String) -> String {
        var output = ""
        for byte in message.utf8 {
            if byte >= 0x20 && byte <= 0x7E && byte != UInt8(ascii: "%") {
                output.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                output += "%" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return output
    }
}
