import NIOCore
import NIOHPACK
import NIOHTTP1

/// gRPC's view of the gateway's own answers (docs/http2.md): a Trailers-Only response — HTTP 200,
/// `content-type: application/grpc`, `grpc-status` and a percent-encoded `grpc-message` in one
/// HEADERS frame that ends the stream (gRPC over HTTP/2, "Responses").
enum GRPCStatus {
    /// The gRPC status code for an HTTP status the gateway answers with (`GRPCStatusCode`).
    static func code(forHTTPStatus status: Int) -> Int { GRPCStatusCode.forHTTPStatus(status) }

    /// The Trailers-Only HEADERS block for a local answer.
    static func trailersOnly(_ response: LocalResponse, requestID: String, secrets: SecretHeaderNames) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: "200")
        headers.add(name: "content-type", value: "application/grpc")
        headers.add(name: "grpc-status", value: String(Self.code(forHTTPStatus: Int(response.status.code))))
        headers.add(
            name: "grpc-message",
            value: Self.percentEncoded(response.error?.grpcMessage ?? response.status.reasonPhrase))
        for (name, value) in response.headers {
            let lowered = name.lowercased()
            // The challenge and cookies clearing a session travel as they do over HTTP.
            if lowered == "www-authenticate" || lowered == "set-cookie" || lowered == "retry-after"
                || lowered.hasPrefix("x-")
            {
                headers.add(name: lowered, value: value, indexing: secrets.indexing(lowered))
            }
        }
        headers.add(name: "x-request-id", value: requestID, indexing: .nonIndexable)
        return headers
    }

    static func percentEncoded(_ message: String) -> String { GRPCStatusCode.percentEncoded(message) }

    /// `grpc-timeout` (e.g. `250m`, `3S`): at most 8 digits and a unit (H M S m u n). At
    /// least one millisecond: a zero or nanosecond deadline has passed before anything could
    /// be forwarded.
    static func timeout(_ value: String) -> TimeAmount? {
        guard let unit = value.last, value.count >= 2, value.count <= 9, let amount = Int64(value.dropLast()),
            amount >= 0
        else { return nil }
        let timeout: TimeAmount
        switch unit {
        case "H": timeout = .hours(amount)
        case "M": timeout = .minutes(amount)
        case "S": timeout = .seconds(amount)
        case "m": timeout = .milliseconds(amount)
        case "u": timeout = .microseconds(amount)
        case "n": timeout = .nanoseconds(amount)
        default: return nil
        }
        return max(timeout, .milliseconds(1))
    }
}

extension GatewayError {
    /// The human-readable part of the problem document, for `grpc-message`.
    var grpcMessage: String { self.detail }
}
