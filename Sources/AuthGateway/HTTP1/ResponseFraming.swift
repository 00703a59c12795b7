import NIOHTTP1

/// How a backend's response goes to an HTTP/1.x client: a pure decision from the backend's
/// framing, the client's version and whether the connection must end.
struct ClientResponseFraming: Equatable {
    /// The body goes to the client chunk-framed.
    let chunked: Bool
    /// The client connection closes after this response.
    let close: Bool

    /// A body without a length (chunked or close-delimited) goes to an HTTP/1.1 client
    /// chunked; an HTTP/1.0 client cannot take chunks, so its body ends with the connection.
    /// The connection also ends when the client did not ask to keep it, or the gateway drains.
    static func decide(
        upstream: BodyFraming, clientVersion: HTTPVersion, clientKeepAlive: Bool, mustClose: Bool
    ) -> ClientResponseFraming {
        let unsized: Bool
        switch upstream {
        case .chunked, .untilClose: unsized = true
        case .none, .contentLength: unsized = false
        }
        let isHTTP11 = clientVersion == .http1_1
        return ClientResponseFraming(
            chunked: unsized && isHTTP11, close: (unsized && !isHTTP11) || !clientKeepAlive || mustClose)
    }
}
