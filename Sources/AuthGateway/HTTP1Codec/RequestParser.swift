import NIOCore
import NIOHTTP1

/// Parses the requests of one client connection from its bytes: a pure state machine pulled by
/// `HTTP1ServerConnection` (`next`), so a pipelined request simply stays unparsed in the buffer until
/// the response in flight has ended.
struct RequestParser {
    enum Event {
        /// A request head, with its body framing or why the framing is refused (400/413:
        /// nothing more is parsed on this connection).
        case head(HTTPRequestHead, Result<BodyFraming, GatewayError>)
        case body(ByteBuffer)
        case end
        /// Malformed input (400) or an oversized head (431); nothing more is parsed.
        case error(GatewayError)
    }

    private enum State {
        /// Waiting for a head; the scan resumes at `resumeAt`.
        case head(resumeAt: Int)
        /// Reading the body (possibly empty) up to its `.end`; then the next head.
        case body(BodyReader)
        case failed
    }

    let maxHeaderBytes: Int
    let maxBodyBytes: Int
    private var state = State.head(resumeAt: 0)
    /// The field ranges of the head being parsed, kept between requests so that each head reuses
    /// the array's storage instead of allocating its own (as `ResponseParser` does).
    private var spareFields: [HeaderField] = []
    private static let maxSpareFields = 64
    /// The last head's long names and values, reused when the next head repeats them.
    private var repeatedTexts = RepeatedFieldTexts()

    init(maxHeaderBytes: Int, maxBodyBytes: Int) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
    }

    /// Between requests: the next event would be a head.
    var isAtMessageStart: Bool {
        if case .head = self.state { return true }
        return false
    }

    /// The next event from `buffer`, consuming what it uses; nil when more bytes are needed
    /// (or after an error).
    mutating func next(_ buffer: inout ByteBuffer) -> Event? {
        switch self.state {
        case .head(let resumeAt):
            return self.head(&buffer, resumeAt: resumeAt)
        case .body(var reader):
            switch reader.next(&buffer) {
            case .none:
                self.state = .body(reader)
                return nil
            case .data(let part):
                self.state = .body(reader)
                return .body(part)
            case .end:
                self.state = .head(resumeAt: 0)
                return .end
            case .error(let detail):
                return self.fail(.malformedRequest(detail))
            }
        case .failed:
            return nil
        }
    }

    private mutating func head(_ buffer: inout ByteBuffer, resumeAt: Int) -> Event? {
        if resumeAt == 0 { Self.skipEmptyLines(&buffer) }
        guard buffer.readableBytes > 0 else { return nil }
        let scan = buffer.withUnsafeReadableBytes { HeadScanner.headEnd($0, from: resumeAt) }
        guard let end = scan.end else {
            if buffer.readableBytes > self.maxHeaderBytes { return self.fail(.headersTooLarge) }
            self.state = .head(resumeAt: scan.resumeAt)
            return nil
        }
        if end > self.maxHeaderBytes { return self.fail(.headersTooLarge) }
        let parsed = buffer.withUnsafeReadableBytes {
            Self.requestHead($0, end: end, fields: &self.spareFields, texts: &self.repeatedTexts)
        }
        // An idle connection keeps no more than a usual head's worth (a client that once sent
        // hundreds of fields does not pin their ranges for the connection's life).
        if self.spareFields.capacity > Self.maxSpareFields { self.spareFields = [] }
        buffer.moveReaderIndex(forwardBy: end)
        let head: HTTPRequestHead
        switch parsed {
        case .success(let value): head = value
        case .failure(let error): return self.fail(.malformedRequest(error.detail))
        }
        let framing = RequestFraming.validate(head, maxBodyBytes: self.maxBodyBytes)
        switch framing {
        case .success(.untilClose), .failure: self.state = .failed  // untilClose: never for requests
        case .success(let framing): self.state = .body(BodyReader(framing))
        }
        return .head(head, framing)
    }

    private mutating func fail(_ error: GatewayError) -> Event {
        self.state = .failed
        return .error(error)
    }

    /// RFC 9112 §2.2: empty lines before a request line are ignored.
    private static func skipEmptyLines(_ buffer: inout ByteBuffer) {
        while let byte = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) {
            if byte == UInt8(ascii: "\n") {
                buffer.moveReaderIndex(forwardBy: 1)
            } else if byte == UInt8(ascii: "\r"),
                buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self) == UInt8(ascii: "\n")
            {
                buffer.moveReaderIndex(forwardBy: 2)
            } else {
                return
            }
        }
    }

    /// `method SP request-target SP HTTP-version` and the fields, as NIO's `HTTPRequestHead`
    /// (what routing, authentication and header rewriting work on).
    /// Its field ranges are collected in `scratch` (`HeadScanner.split`: emptied first, its
    /// storage kept); long names and values the connection's last head had at the same place
    /// come from `texts`.
    static func requestHead(
        _ bytes: UnsafeRawBufferPointer, end: Int, fields scratch: inout [HeaderField],
        texts: inout RepeatedFieldTexts
    ) -> Result<HTTPRequestHead, HeadError> {
        let lines: HeadLines
        switch HeadScanner.split(bytes, end: end, fields: &scratch) {
        case .success(let value): lines = value
        case .failure(let error): return .failure(error)
        }
        let line = lines.startLine
        var index = line.lowerBound
        while index < line.upperBound, HTTPToken.isTokenByte(bytes[index]) { index += 1 }
        guard index > line.lowerBound, index < line.upperBound, bytes[index] == UInt8(ascii: " ") else {
            return .failure(.invalidStartLine)
        }
        let method = Self.method(bytes, line.lowerBound, index)
        index += 1
        let targetStart = index
        // Visible ASCII only: no controls, spaces or raw non-ASCII bytes in the target.
        while index < line.upperBound, bytes[index] > 0x20, bytes[index] < 0x7F { index += 1 }
        guard index > targetStart, index < line.upperBound, bytes[index] == UInt8(ascii: " ") else {
            return .failure(.invalidStartLine)
        }
        let target = Self.string(bytes, targetStart, index)
        index += 1
        guard let version = Self.version(bytes, index, line.upperBound) else {
            return .failure(
                Self.looksLikeVersion(bytes, index, line.upperBound) ? .unsupportedVersion : .invalidStartLine)
        }
        // Built as an array and wrapped once: `HTTPHeaders.add` re-checks every name for
        // non-ASCII bytes and compares it with "connection" (measured, ~1 % of a request);
        // the scanner has already admitted only token characters in names.
        var fields: [(String, String)] = []
        fields.reserveCapacity(lines.fields.count)
        for (index, field) in lines.fields.enumerated() {
            fields.append(
                (
                    texts.text(at: 2 * index, UnsafeRawBufferPointer(rebasing: bytes[field.nameStart..<field.nameEnd])),
                    texts.text(
                        at: 2 * index + 1, UnsafeRawBufferPointer(rebasing: bytes[field.valueStart..<field.valueEnd]))
                ))
        }
        return .success(HTTPRequestHead(version: version, method: method, uri: target, headers: HTTPHeaders(fields)))
    }

    private static func method(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> HTTPMethod {
        // The two methods nearly every request uses, without building a String.
        if end - start == 3, bytes[start] == UInt8(ascii: "G"), bytes[start + 1] == UInt8(ascii: "E"),
            bytes[start + 2] == UInt8(ascii: "T")
        {
            return .GET
        }
        if end - start == 4, bytes[start] == UInt8(ascii: "P"), bytes[start + 1] == UInt8(ascii: "O"),
            bytes[start + 2] == UInt8(ascii: "S"),
            bytes[start + 3] == UInt8(ascii: "T")
        {
            return .POST
        }
        return HTTPMethod(rawValue: Self.string(bytes, start, end))
    }

    /// "HTTP/1.1" or "HTTP/1.0".
    static func version(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> HTTPVersion? {
        guard end - start == 8, Self.looksLikeVersion(bytes, start, end), bytes[start + 5] == UInt8(ascii: "1") else {
            return nil
        }
        switch bytes[start + 7] {
        case UInt8(ascii: "1"): return .http1_1
        case UInt8(ascii: "0"): return .http1_0
        default: return nil
        }
    }

    /// "HTTP/" DIGIT "." DIGIT
    static func looksLikeVersion(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> Bool {
        guard end - start == 8 else { return false }
        for offset in 0..<5 where bytes[start + offset] != Self.httpPrefix[offset] { return false }
        return Self.isDigit(bytes[start + 5]) && bytes[start + 6] == UInt8(ascii: ".") && Self.isDigit(bytes[start + 7])
    }

    private static let httpPrefix: [UInt8] = Array("HTTP/".utf8)

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    static func string(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }
}
