import NIOCore
import NIOHTTP1

/// An HTTP/1.1 backend's response head, kept as bytes: the fields are ranges into `bytes`, so
/// the kept ones are copied to the client as they are, without a `String` per name and value.
struct HTTP1ResponseHead {
    /// The head, from the status line through its empty line.
    let bytes: ByteBuffer
    let version: HTTPVersion
    let status: Int
    let reason: Range<Int>
    let fields: [HeaderField]
    let framing: BodyFraming
    /// The backend allows another request on this connection afterwards.
    let keepAlive: Bool

    /// Calls `body` with each end-to-end field, the raw head's bytes at hand: not those
    /// describing the backend's connection (RFC 9110 §7.6.1, RFC 9113 §8.2.2: `Connection` and
    /// the fields it names, `HeaderNames`' hop-by-hop list, `Transfer-Encoding`), nor the
    /// backend's `X-Request-Id` (the gateway sends its own). What both client writers keep
    /// (`HTTPWriter.clientResponseHead`, `HTTP2Messages.responseHeaders`).
    func forEachEndToEndField(_ body: (HeaderField, UnsafeRawBufferPointer) -> Void) {
        self.bytes.withUnsafeReadableBytes { raw in
            let namesConnectionFields = self.fields.contains { $0.kind == .connection }
            for field in self.fields {
                switch field.kind {
                case .hopByHop, .connection, .transferEncoding, .requestID:
                    continue
                case .contentLength:
                    break
                case .other:
                    if namesConnectionFields, self.isNamedByConnection(field, raw) { continue }
                }
                body(field, raw)
            }
        }
    }

    /// The end-to-end fields as lower-cased names and values, for an HTTP/2 client; texts the
    /// connection saw lately come from `texts` instead of new allocations.
    func forEachEndToEndField(texts: inout FieldTextCache, _ body: (String, String) -> Void) {
        self.forEachEndToEndField { field, raw in
            body(
                texts.name(raw, field.nameStart, field.nameEnd),
                texts.value(raw, field.valueStart, field.valueEnd))
        }
    }

    /// Whether a `Connection` field of this head names `field` (then it is hop-by-hop too).
    func isNamedByConnection(_ field: HeaderField, _ raw: UnsafeRawBufferPointer) -> Bool {
        self.fields.contains { connection in
            connection.kind == .connection
                && HeaderNames.listContains(
                    raw, connection.valueStart, connection.valueEnd, nameStart: field.nameStart, nameEnd: field.nameEnd)
        }
    }

    /// The same head as NIO's type, for the gateway's own calls (auth service, JWKS).
    var httpResponseHead: HTTPResponseHead {
        self.bytes.withUnsafeReadableBytes { raw in
            var headers = HTTPHeaders()
            for field in self.fields {
                headers.add(
                    name: RequestParser.string(raw, field.nameStart, field.nameEnd),
                    value: RequestParser.string(raw, field.valueStart, field.valueEnd))
            }
            return HTTPResponseHead(
                version: self.version, status: HTTPResponseStatus(statusCode: self.status), headers: headers)
        }
    }
}

/// Parses the responses of one upstream connection: a pure state machine, told what each
/// response answers (`expectResponse`) because a HEAD response has no body. Interim 1xx
/// responses are skipped. A 101 answers only an upgrade request; after it every byte is
/// "body" until the connection closes (the tunnel), else it is an error.
struct ResponseParser {
    enum Event {
        case head(HTTP1ResponseHead)
        case body(ByteBuffer)
        case end
        /// Not a valid HTTP/1.1 response: the connection cannot be used any more.
        case error(String)
    }

    private enum State {
        case awaitingRequest
        case head(resumeAt: Int, method: HTTPMethod, upgrade: Bool)
        /// Reading the body (possibly empty) up to its `.end`; then awaiting the next request.
        case body(BodyReader)
        case failed
    }

    static let maxHeadBytes = 64 * 1024
    private var state = State.awaitingRequest
    /// The last head's field list, emptied for the next head (`HeadScanner.split`): once that
    /// head is gone (its client writer copies what it keeps), a head allocates no list.
    private var spareFields: [HeaderField] = []

    /// No response is expected: bytes arriving now are a protocol violation.
    var isAwaitingRequest: Bool {
        if case .awaitingRequest = self.state { return true }
        return false
    }

    /// The body runs until the connection closes.
    var isReadingUntilClose: Bool {
        if case .body(let reader) = self.state { return reader.isUntilClose }
        return false
    }

    /// A request answered by the next response was sent; `upgrade` when it asked for a
    /// protocol upgrade.
    mutating func expectResponse(to method: HTTPMethod, upgrade: Bool = false) {
        self.state = .head(resumeAt: 0, method: method, upgrade: upgrade)
    }

    mutating func next(_ buffer: inout ByteBuffer) -> Event? {
        switch self.state {
        case .awaitingRequest:
            guard buffer.readableBytes > 0 else { return nil }
            return self.fail("Bytes before a request was sent")
        case .head(let resumeAt, let method, let upgrade):
            return self.head(&buffer, resumeAt: resumeAt, method: method, upgrade: upgrade)
        case .body(var reader):
            switch reader.next(&buffer) {
            case .none:
                self.state = .body(reader)
                return nil
            case .data(let part):
                self.state = .body(reader)
                return .body(part)
            case .end:
                self.state = .awaitingRequest
                return .end
            case .error(let detail):
                return self.fail(detail)
            }
        case .failed:
            return nil
        }
    }

    /// The connection closed: the end of a close-delimited body, else nothing.
    mutating func connectionClosed() -> Event? {
        guard case .body(var reader) = self.state, case .end = reader.connectionClosed() else { return nil }
        self.state = .awaitingRequest
        return .end
    }

    private mutating func head(
        _ buffer: inout ByteBuffer, resumeAt initialResumeAt: Int, method: HTTPMethod, upgrade: Bool
    ) -> Event? {
        var resumeAt = initialResumeAt
        while true {
            guard buffer.readableBytes > 0 else { return nil }
            let scan = buffer.withUnsafeReadableBytes { HeadScanner.headEnd($0, from: resumeAt) }
            guard let end = scan.end else {
                if buffer.readableBytes > Self.maxHeadBytes { return self.fail("Response head too large") }
                self.state = .head(resumeAt: scan.resumeAt, method: method, upgrade: upgrade)
                return nil
            }
            guard end <= Self.maxHeadBytes else { return self.fail("Response head too large") }
            let bytes = buffer.readSlice(length: end)!
            let parsed = bytes.withUnsafeReadableBytes {
                Self.responseHead($0, bytes: bytes, method: method, fields: &self.spareFields)
            }
            guard case .success(let head) = parsed else {
                if case .failure(let detail) = parsed { return self.fail(detail.message) }
                return nil
            }
            if head.status == 101 {
                guard upgrade else { return self.fail("Unexpected 101 Switching Protocols") }
                self.state = .body(BodyReader(.untilClose))
                return .head(head)
            }
            if head.status < 200 {
                // Interim response (100 Continue, 103 Early Hints): skipped, the final one follows.
                // One that ends the connection (`Connection: close`, HTTP/1.0 without keep-alive:
                // no HTTP/1.0 server sends 1xx) is refused: llhttp takes the connection as
                // closed after it and refuses the final response.
                guard head.keepAlive else { return self.fail("Interim response closing the connection") }
                self.state = .head(resumeAt: 0, method: method, upgrade: upgrade)
                resumeAt = 0
                continue
            }
            self.state = .body(BodyReader(head.framing))
            return .head(head)
        }
    }

    private mutating func fail(_ detail: String) -> Event {
        self.state = .failed
        return .error(detail)
    }

    struct Invalid: Error {
        let message: String
    }

    private static let chunked = Array("chunked".utf8)
    private static let close = Array("close".utf8)
    private static let keepAlive = Array("keep-alive".utf8)
    private static let proxyConnection = Array("proxy-connection".utf8)

    /// `HTTP-version SP 3DIGIT [SP reason-phrase]` and the fields; the framing by RFC 9112 §6.3.
    static func responseHead(
        _ raw: UnsafeRawBufferPointer, bytes: ByteBuffer, method: HTTPMethod
    ) -> Result<HTTP1ResponseHead, Invalid> {
        var fields: [HeaderField] = []
        return Self.responseHead(raw, bytes: bytes, method: method, fields: &fields)
    }

    /// `responseHead`, its fields collected in `fields` (`HeadScanner.split`).
    static func responseHead(
        _ raw: UnsafeRawBufferPointer, bytes: ByteBuffer, method: HTTPMethod, fields: inout [HeaderField]
    ) -> Result<HTTP1ResponseHead, Invalid> {
        let lines: HeadLines
        switch HeadScanner.split(raw, end: raw.count, fields: &fields) {
        case .success(let value): lines = value
        case .failure(let error): return .failure(Invalid(message: error.detail))
        }
        let line = lines.startLine
        let start = line.lowerBound
        guard line.count >= 12, let version = RequestParser.version(raw, start, start + 8),
            raw[start + 8] == UInt8(ascii: " ")
        else {
            return .failure(Invalid(message: "Invalid status line"))
        }
        var status = 0
        for offset in 9..<12 {
            let byte = raw[start + offset]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                return .failure(Invalid(message: "Invalid status code"))
            }
            status = status * 10 + Int(byte - UInt8(ascii: "0"))
        }
        guard status >= 100 else { return .failure(Invalid(message: "Invalid status code")) }
        var reason = (start + 12)..<(start + 12)
        if line.count > 12 {
            guard raw[start + 12] == UInt8(ascii: " ") else { return .failure(Invalid(message: "Invalid status line")) }
            reason = (start + 13)..<line.upperBound
            // Copied to the client as it is: no control characters.
            guard raw[reason].allSatisfy(HeadScanner.isFieldValueByte) else {
                return .failure(Invalid(message: "Invalid reason phrase"))
            }
        }

        var contentLength: (text: Range<Int>, value: Int)?
        var lastTransferCoding: Range<Int>?
        var hasTransferEncoding = false
        var close = false
        var keepAliveToken = false
        for field in lines.fields {
            switch field.kind {
            case .contentLength:
                guard Self.contentLength(raw, field.valueStart, field.valueEnd, first: &contentLength) else {
                    return .failure(Invalid(message: "Invalid Content-Length"))
                }
            case .transferEncoding:
                hasTransferEncoding = true
                // Empty elements are refused, not skipped (RFC 9110 §5.6.1 would skip them):
                // llhttp reads "chunked," as not chunked.
                let complete = HeaderNames.forEachListElementRefusingEmpty(raw, field.valueStart, field.valueEnd) {
                    s, e in
                    lastTransferCoding = s..<e
                    return true
                }
                guard complete else { return .failure(Invalid(message: "Invalid Transfer-Encoding")) }
            case .connection:
                if HeaderNames.listContains(raw, field.valueStart, field.valueEnd, token: Self.close) { close = true }
                if HeaderNames.listContains(raw, field.valueStart, field.valueEnd, token: Self.keepAlive) {
                    keepAliveToken = true
                }
            case .hopByHop:
                // llhttp reads Proxy-Connection as Connection: its close is honoured (its
                // keep-alive is not), so the gateway never reads on where llhttp stops.
                if HeaderNames.equals(raw, field.nameStart, field.nameEnd, Self.proxyConnection),
                    HeaderNames.listContains(raw, field.valueStart, field.valueEnd, token: Self.close)
                {
                    close = true
                }
            case .other, .requestID:
                break
            }
        }
        if hasTransferEncoding && contentLength != nil {
            // RFC 9112 §6.3: "ought to be handled as an error"; llhttp refuses it too (for any
            // status and method), and two readings of one response are how one client gets
            // bytes meant for another.
            return .failure(Invalid(message: "Both Transfer-Encoding and Content-Length"))
        }
        // After a 101 the connection belongs to the upgraded protocol.
        var keepAlive = status == 101 ? false : version == .http1_1 ? !close : (keepAliveToken && !close)
        let framing: BodyFraming
        if method == .HEAD || status < 200 || status == 204 || status == 304 {
            framing = .none
        } else if hasTransferEncoding {
            let chunked =
                lastTransferCoding.map { HeaderNames.equals(raw, $0.lowerBound, $0.upperBound, Self.chunked) } ?? false
            framing = chunked ? .chunked : .untilClose
            if !chunked { keepAlive = false }
        } else if let contentLength {
            framing = contentLength.value == 0 ? .none : .contentLength(contentLength.value)
        } else {
            framing = .untilClose
            keepAlive = false
        }
        return .success(
            HTTP1ResponseHead(
                bytes: bytes, version: version, status: status, reason: reason, fields: lines.fields, framing: framing,
                keepAlive: keepAlive)
        )
    }

    /// Checks a `Content-Length` value, `1#(1*DIGIT)`, against the ones before it (`first`,
    /// set by the first element): a list ("5, 5") or repeated field is one length only when
    /// every element is the same text, as for requests (`RequestFraming`); "5" beside "05" or
    /// an empty element is refused, as llhttp refuses them: no room for two readings.
    private static func contentLength(
        _ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int, first: inout (text: Range<Int>, value: Int)?
    ) -> Bool {
        HeaderNames.forEachListElementRefusingEmpty(raw, start, end) { s, e in
            if let first { return raw[s..<e].elementsEqual(raw[first.text]) }
            guard let value = Self.decimal(raw, s, e) else { return false }
            first = (s..<e, value)
            return true
        }
    }

    /// 1*DIGIT, at most 18 digits.
    private static func decimal(_ raw: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Int? {
        guard end > start, end - start <= 18 else { return nil }
        var value = 0
        for index in start..<end {
            let byte = raw[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
