import NIOCore

/// Decodes a chunked body (RFC 9112 §7.1) into its data, as slices of the input: the pure state
/// machine behind `BodyReader`'s chunked bodies, for requests and responses alike. Chunk sizes
/// are 1–15 hex digits (no overflow), extensions are checked for control characters and
/// ignored, trailers are checked (no framing or connection fields) and dropped.
struct ChunkedBody {
    /// The reader's own steps, so `BodyReader` passes them on without translating.
    typealias Step = BodyReader.Step

    private enum State {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailers(bytes: Int)
        case done
        case failed
    }

    /// A chunk-size line longer than this (size plus extensions) is refused.
    static let maxSizeLineBytes = 1024
    /// Trailer section limit.
    static let maxTrailerBytes = 16 * 1024

    private var state = State.size

    /// The next step from `buffer`, consuming what it uses; nil when more bytes are needed.
    mutating func next(_ buffer: inout ByteBuffer) -> Step? {
        while true {
            switch self.state {
            case .size:
                guard let line = Self.readLine(&buffer, limit: Self.maxSizeLineBytes) else {
                    return buffer.readableBytes > Self.maxSizeLineBytes ? self.fail("Chunk size line too long") : nil
                }
                guard case .success(let text) = line, let size = Self.chunkSize(text) else {
                    return self.fail("Invalid chunk size")
                }
                self.state = size == 0 ? .trailers(bytes: 0) : .data(remaining: size)
            case .data(let remaining):
                guard buffer.readableBytes > 0 else { return nil }
                let length = min(remaining, buffer.readableBytes)
                let part = buffer.readSlice(length: length)!
                self.state = length == remaining ? .dataEnd : .data(remaining: remaining - length)
                return .data(part)
            case .dataEnd:
                guard buffer.readableBytes >= 2 else { return nil }
                guard buffer.readInteger(as: UInt16.self) == 0x0D0A else {
                    return self.fail("Missing CRLF after chunk data")
                }
                self.state = .size
            case .trailers(let bytes):
                let available = buffer.readableBytes
                guard let line = Self.readLine(&buffer, limit: max(0, Self.maxTrailerBytes - bytes)) else {
                    return bytes + available > Self.maxTrailerBytes ? self.fail("Trailers too large") : nil
                }
                guard case .success(let text) = line else { return self.fail("Invalid trailer line") }
                if text.isEmpty {
                    self.state = .done
                    return .end
                }
                guard HeadScanner.isValidFieldLine(text) else { return self.fail("Invalid trailer line") }
                guard !Self.isFramingField(text) else { return self.fail("Framing field in trailers") }
                self.state = .trailers(bytes: bytes + text.count + 2)
            case .done, .failed:
                return nil
            }
        }
    }

    private mutating func fail(_ detail: String) -> Step {
        self.state = .failed
        return .error(detail)
    }

    /// Reads one CRLF-terminated line (without the CRLF); nil when none is complete within
    /// `limit` bytes; failure for a bare LF.
    private static func readLine(_ buffer: inout ByteBuffer, limit: Int) -> Result<[UInt8], ChunkLineError>? {
        let view = buffer.readableBytesView.prefix(limit + 2)
        guard let lf = view.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        let length = lf - view.startIndex
        guard length >= 1, view[lf - 1] == UInt8(ascii: "\r") else {
            buffer.moveReaderIndex(forwardBy: length + 1)
            return .failure(ChunkLineError())
        }
        let line = buffer.readBytes(length: length - 1)!
        buffer.moveReaderIndex(forwardBy: 2)
        return line.contains(UInt8(ascii: "\r")) ? .failure(ChunkLineError()) : .success(line)
    }

    private struct ChunkLineError: Error {}

    private static let proxyConnection = Array("proxy-connection".utf8)

    /// Whether a (valid) trailer line names a field that frames the message or controls the
    /// connection. They are not allowed in trailers (RFC 9110 §6.5.1) and the gateway drops
    /// trailers, but llhttp acts on them: it refuses a `Content-Length` there, and after a
    /// `Transfer-Encoding` or `Connection` (`Proxy-Connection`) trailer it may take the
    /// connection as closing and refuse the next message. Refused, so that the two never
    /// disagree about where the next message starts.
    private static func isFramingField(_ line: [UInt8]) -> Bool {
        let colon = line.firstIndex(of: UInt8(ascii: ":"))!
        return line.withUnsafeBytes { raw in
            switch HeaderNames.kind(raw, 0, colon) {
            case .contentLength, .transferEncoding, .connection: return true
            case .hopByHop: return HeaderNames.equals(raw, 0, colon, Self.proxyConnection)
            case .other, .requestID: return false
            }
        }
    }

    /// `1*HEXDIG *( ";" ext-name [ "=" ext-value ] )` (RFC 9112 §7.1.1, without the optional
    /// whitespace: llhttp refuses it too, and two parsers that disagree about a chunk line are
    /// a smuggling risk); nil when invalid or over 15 digits. Extensions are checked, then
    /// ignored.
    static func chunkSize(_ line: [UInt8]) -> Int? {
        var size = 0
        var digits = 0
        var index = 0
        while index < line.count, let value = Self.hexValue(line[index]) {
            size = size << 4 | value
            digits += 1
            index += 1
        }
        guard digits > 0, digits <= 15 else { return nil }
        while true {
            if index == line.count { return size }
            guard line[index] == UInt8(ascii: ";") else { return nil }
            index += 1
            guard Self.skipToken(line, &index) else { return nil }
            if index < line.count, line[index] == UInt8(ascii: "=") {
                index += 1
                guard Self.skipToken(line, &index) || Self.skipQuotedString(line, &index) else { return nil }
            }
        }
    }

    /// 1*tchar; false when there is none.
    private static func skipToken(_ line: [UInt8], _ index: inout Int) -> Bool {
        let start = index
        while index < line.count, HTTPToken.isTokenByte(line[index]) { index += 1 }
        return index > start
    }

    /// `DQUOTE *( qdtext / quoted-pair ) DQUOTE` (RFC 9110 §5.6.4); false when there is none.
    private static func skipQuotedString(_ line: [UInt8], _ index: inout Int) -> Bool {
        guard index < line.count, line[index] == UInt8(ascii: "\"") else { return false }
        var position = index + 1
        while position < line.count {
            let byte = line[position]
            if byte == UInt8(ascii: "\"") {
                index = position + 1
                return true
            }
            if byte == UInt8(ascii: "\\") {
                position += 1
                guard position < line.count, HeadScanner.isFieldValueByte(line[position]) else { return false }
            } else if !HeadScanner.isFieldValueByte(byte) {
                return false
            }
            position += 1
        }
        return false
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }
}
