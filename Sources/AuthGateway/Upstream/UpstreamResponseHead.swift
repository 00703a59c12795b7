import NIOHTTP1

/// A backend's response head as its protocol delivered it, handed to the client's framing
/// without a conversion in between: an HTTP/1.1 head stays bytes (its kept fields are copied
/// as they are to an HTTP/1.1 client), an HTTP/2 head stays HPACK fields (they go as they are,
/// with the backend's never-indexed marks, to an HTTP/2 client). Each was checked where it was
/// read: by `ResponseParser`, or by NIOHTTP2's header validation and `HTTP2ResponseHead.init`.
/// The client writers (`HTTPWriter.clientResponseHead`, `HTTP2Messages.responseHeaders`) take
/// either and drop the same fields from both.
enum UpstreamResponseHead {
    case http1(HTTP1ResponseHead)
    case http2(HTTP2ResponseHead)

    var status: Int {
        switch self {
        case .http1(let head): return head.status
        case .http2(let head): return head.status
        }
    }

    /// How the body is delimited, as an HTTP/1.1 client's framing decides from it
    /// (`ClientResponseFraming`).
    var framing: BodyFraming {
        switch self {
        case .http1(let head): return head.framing
        case .http2(let head): return head.framing
        }
    }

    /// The head's size, roughly: to size the client's buffer.
    var estimatedBytes: Int {
        switch self {
        case .http1(let head): return head.bytes.readableBytes
        case .http2(let head): return head.estimatedBytes
        }
    }

    /// The same head as NIO's type, for the gateway's own calls (auth service, JWKS).
    var httpResponseHead: HTTPResponseHead {
        switch self {
        case .http1(let head): return head.httpResponseHead
        case .http2(let head): return head.httpResponseHead
        }
    }
}
