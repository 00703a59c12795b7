/// Checks that an HTTP/2 request's DATA adds up to its `content-length`, exactly.
///
/// NIOHTTP2 checks this too (its own `ContentLengthVerifier`, whose shape this keeps); the
/// gateway keeps the guarantee local because it is what stops one HTTP/2 request becoming two
/// for an HTTP/1.1 backend: excess bytes there would be read as the next request. Pure; an
/// `HTTP2StreamStateMachine` carries one while the client may still send DATA.
struct ContentLengthVerifier: Equatable {
    /// What a request whose DATA disagrees with its `content-length` is answered with.
    static var violation: GatewayError { .malformedRequest("The DATA disagrees with content-length") }

    /// Bytes still expected; nil when the request declared no length (nothing is checked).
    private(set) var remaining: Int?

    /// `contentLength`: the length the request declared, if any.
    init(contentLength: Int?) {
        self.remaining = contentLength
    }

    /// `length` bytes of DATA arrived: whether they stay within the declared length.
    mutating func receivedData(length: Int) -> Bool {
        guard let remaining = self.remaining else { return true }
        self.remaining = remaining - length
        return remaining >= length
    }

    /// The request ended (END_STREAM): whether all the declared bytes arrived.
    func endOfStream() -> Bool {
        switch self.remaining {
        case .none, .some(0): return true
        case .some: return false
        }
    }
}
