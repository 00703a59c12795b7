/// Facts about HTTP/2 header fields that both the gateway's HTTP/2 server (`HTTP2/`) and its
/// HTTP/2 backend connections (`Upstream/`) need: kept here, below both.
enum HTTP2Fields {
    /// Fields that belong to one HTTP/1.1 connection, never sent on HTTP/2 (RFC 9113 §8.2.2).
    static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer",
    ]

    /// Whether a message is gRPC: `application/grpc` or `application/grpc+…` (and `;` params).
    static func isGRPC(contentType: String?) -> Bool {
        guard let contentType else { return false }
        let lowered = contentType.lowercased()
        guard lowered.hasPrefix("application/grpc") else { return false }
        let rest = lowered.dropFirst("application/grpc".count)
        return rest.isEmpty || rest.first == "+" || rest.first == ";"
    }
}
