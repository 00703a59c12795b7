import NIOHPACK
import NIOHTTP1

/// The response HEADERS of an HTTP/2 backend, kept as HPACK fields (`UpstreamResponseHead`).
///
/// NIOHTTP2 has already refused what RFC 9113 §8.2 calls malformed: names that are not
/// lower-case tokens, CR, LF or NUL in a value, `connection`, `keep-alive`,
/// `proxy-connection`, `transfer-encoding` and `upgrade`, and a body longer or shorter than
/// its `content-length`. What is left here: the pseudo-fields, the connection-specific fields
/// (`te` and `trailer` pass NIOHTTP2 on a response) and the backend's `x-request-id` (the
/// gateway sends its own) are dropped, and `content-length` must be one decimal length (repeated only as the same
/// text) and no value may hold a control character, as `ResponseParser` asks of an HTTP/1.1
/// backend.
struct HTTP2ResponseHead {
    let status: Int
    /// The end-to-end fields, with the backend's indexing (never-indexed stays never-indexed).
    let fields: HPACKHeaders
    /// `.contentLength` when the backend gave one, `.none` for responses without a body, else
    /// `.chunked`: the body runs to END_STREAM (an HTTP/1.1 client gets it chunk-framed).
    let framing: BodyFraming

    /// Nil when the block cannot be forwarded (a missing or invalid `:status`, or an invalid
    /// `content-length`): the exchange fails with 502.
    init?(_ block: HPACKHeaders, method: HTTPMethod) {
        guard let statusText = block.first(name: ":status"), statusText.utf8.count == 3, let status = Int(statusText),
            status >= 100
        else {
            return nil
        }
        var fields = HPACKHeaders()
        fields.reserveCapacity(block.count)
        var contentLength: (text: String, value: Int)?
        for (name, value, indexing) in block {
            if name.utf8.first == UInt8(ascii: ":") { continue }
            // The control characters NIOHTTP2 lets through (all but CR, LF and NUL) are refused
            // too, as `ResponseParser` refuses them from an HTTP/1.1 backend.
            guard HTTPToken.isSafeHeaderValue(value) else { return nil }
            switch name {
            case "x-request-id":
                continue
            case "content-length":
                if let contentLength {
                    guard value == contentLength.text else { return nil }
                } else {
                    guard let length = Self.decimal(value) else { return nil }
                    contentLength = (value, length)
                }
            default:
                // NIOHTTP2 refuses the other connection-specific names; dropped here too (as
                // `ResponseParser`'s hop-by-hop fields are), so that no client gets one
                // whatever NIOHTTP2's settings.
                if HTTP2Fields.connectionSpecific.contains(name) { continue }
            }
            fields.add(name: name, value: value, indexing: indexing)
        }
        self.status = status
        self.fields = fields
        if method == .HEAD || status < 200 || status == 204 || status == 304 {
            self.framing = .none
        } else if let contentLength {
            self.framing = contentLength.value == 0 ? .none : .contentLength(contentLength.value)
        } else {
            self.framing = .chunked
        }
    }

    var estimatedBytes: Int {
        self.fields.reduce(16) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    var httpResponseHead: HTTPResponseHead {
        var headers = HTTPHeaders()
        for (name, value, _) in self.fields { headers.add(name: name, value: value) }
        return HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: self.status), headers: headers)
    }

    /// 1*DIGIT, at most 18 digits.
    private static func decimal(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 18,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return Int(text)
    }
}
