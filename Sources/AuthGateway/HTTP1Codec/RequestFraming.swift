import NIOHTTP1

/// How a message's body is delimited (RFC 9112 §6).
package enum BodyFraming: Equatable {
    case none
    case contentLength(Int)
    case chunked
    /// Response only: the body runs until the connection closes.
    case untilClose
}

/// Checks a request head for the ambiguities request smuggling is made of, before anything
/// else looks at it. `RequestParser` already refuses malformed lines; this
/// second, explicit check keeps the gateway's promise independent of the parser's: anything
/// ambiguous gets 400 and a closed connection, never a backend. (Response framing is decided
/// by `ResponseParser`.)
enum RequestFraming {
    static func validate(_ head: HTTPRequestHead, maxBodyBytes: Int) -> Result<BodyFraming, GatewayError> {
        var contentLength: Int?
        var contentLengthText: Substring?
        var transferEncodings = 0
        var chunked = false
        var hosts = 0
        for (name, value) in head.headers {
            if ASCII.equalsIgnoringCase(name, "content-length") {
                // A list ("5, 5") or repeated header is accepted only when every value is the
                // same text ("5" and "05" are refused together: no room for two readings).
                for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let text = ASCII.trimmingOWS(part)
                    guard let parsed = Self.parseLength(text) else {
                        return .failure(.malformedRequest("Invalid Content-Length"))
                    }
                    if let existing = contentLengthText, existing != text {
                        return .failure(.malformedRequest("Conflicting Content-Length headers"))
                    }
                    contentLength = parsed
                    contentLengthText = text
                }
            } else if ASCII.equalsIgnoringCase(name, "transfer-encoding") {
                transferEncodings += 1
                chunked = ASCII.equalsIgnoringCase(ASCII.trimmingOWS(value[...]), "chunked")
                guard chunked, transferEncodings == 1 else {
                    return .failure(.malformedRequest("Unsupported Transfer-Encoding"))
                }
            } else if ASCII.equalsIgnoringCase(name, "host") {
                // Its spelling is judged with the target (`RequestTarget`, docs/forwarding.md).
                hosts += 1
            }
        }
        if transferEncodings > 0 && contentLength != nil {
            return .failure(.malformedRequest("Both Content-Length and Transfer-Encoding"))
        }
        if transferEncodings > 0 && head.version == .http1_0 {
            return .failure(.malformedRequest("Transfer-Encoding in an HTTP/1.0 request"))
        }
        if hosts > 1 { return .failure(.ambiguousHost(AmbiguousHost.several.description)) }
        if hosts == 0 && head.version == .http1_1 { return .failure(.malformedRequest("Missing Host header")) }
        if chunked { return .success(.chunked) }
        if let contentLength {
            if contentLength > maxBodyBytes { return .failure(.bodyTooLarge) }
            return .success(contentLength == 0 ? .none : .contentLength(contentLength))
        }
        return .success(.none)
    }

    /// 1*DIGIT without overflow.
    static func parseLength(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(text)
    }

    /// Whether the request asks for a protocol upgrade (WebSocket and the like).
    static func isUpgrade(_ head: HTTPRequestHead) -> Bool {
        guard head.headers.contains(name: "upgrade") else { return false }
        return head.headers[canonicalForm: "connection"].contains { ASCII.equalsIgnoringCase($0, "upgrade") }
    }

    /// The protocol of an upgrade request that asks for exactly WebSocket (RFC 6455 §4.1), as
    /// the client wrote it; nil for any other upgrade (h2c and the like: not supported).
    static func webSocketUpgrade(_ head: HTTPRequestHead) -> String? {
        let values = head.headers[canonicalForm: "upgrade"]
        guard values.count == 1, ASCII.equalsIgnoringCase(values[0], "websocket") else { return nil }
        return String(values[0])
    }
}
