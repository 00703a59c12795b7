/// The gateway's own HTTP/1.1 codec for the proxy path (client side and upstream side).
///
/// Why not NIOHTTP1 here: measured with perf, NIO's decoder/encoder pair costs a `String` per
/// header name and value on both sides, an `HTTPHeaders` rebuild per message, and four extra
/// pipeline handlers per connection (each read and write crosses them, with retain/release
/// and `NIOAny` boxing). The proxy path only needs to find the head's lines, check them, and
/// copy the kept ones; bodies pass through as slices of the read buffer.
///
/// The grammar is RFC 9112 and strict: lines end in CRLF (a bare LF or CR is refused), header
/// names are tokens directly followed by ':', values hold no control characters, obs-fold is
/// refused. Anything else is a 400 (or a 502 from a backend), never a guess.

/// One header field of a head, as byte offsets into the head's bytes.
struct HeaderField {
    var nameStart: Int
    var nameEnd: Int
    var valueStart: Int
    var valueEnd: Int
    var kind: HeaderKind
}

/// Header names the codec acts on, recognised once while scanning.
enum HeaderKind: UInt8 {
    case other
    case contentLength
    case transferEncoding
    case connection
    /// Describes one connection (RFC 9110 §7.6.1) and is never forwarded.
    case hopByHop
    case requestID
}

/// A head split into its start line and fields.
struct HeadLines {
    var startLine: Range<Int>
    var fields: [HeaderField]
}

enum HeadScanner {
    /// Finds the end of a head: the offset just after its empty line, or nil when the head is
    /// incomplete. `resumeAt` is where the next scan may start (the start of the last
    /// incomplete line), so a head arriving byte by byte is scanned once, not once per byte.
    static func headEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> (end: Int?, resumeAt: Int) {
        var lineStart = start
        var index = start
        let count = bytes.count
        while index < count {
            // Eight bytes at a time past the long lines (the token): most words hold no LF.
            if index + 8 <= count,
                !SWAR.contains(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self), UInt8(ascii: "\n"))
            {
                index += 8
                continue
            }
            if bytes[index] == UInt8(ascii: "\n") {
                let length = index - lineStart
                if length == 0 || (length == 1 && bytes[lineStart] == UInt8(ascii: "\r")) {
                    return (index + 1, index + 1)
                }
                lineStart = index + 1
            }
            index += 1
        }
        return (nil, lineStart)
    }

    /// Splits and checks the lines of a complete head (`bytes[0..<end]`, ending in its empty line).
    static func split(_ bytes: UnsafeRawBufferPointer, end: Int) -> Result<HeadLines, HeadError> {
        var fields: [HeaderField] = []
        return Self.split(bytes, end: end, fields: &fields)
    }

    /// `split`, collecting the fields in `fields` (emptied first, its capacity kept): a parser
    /// that keeps the array between heads allocates none once the last head has let go of it.
    static func split(
        _ bytes: UnsafeRawBufferPointer, end: Int, fields: inout [HeaderField]
    ) -> Result<HeadLines, HeadError> {
        fields.removeAll(keepingCapacity: true)
        guard let startLineEnd = Self.lineEnd(bytes, from: 0, limit: end) else { return .failure(.bareLineFeed) }
        guard startLineEnd > 0 else { return .failure(.emptyHead) }
        fields.reserveCapacity(12)
        var lineStart = startLineEnd + 2
        while lineStart < end {
            if bytes[lineStart] == UInt8(ascii: "\r") {
                // The empty line: `headEnd` put the end right after it.
                guard lineStart + 2 == end, bytes[lineStart + 1] == UInt8(ascii: "\n") else {
                    return .failure(.bareLineFeed)
                }
                break
            }
            switch Self.field(bytes, lineStart, end) {
            case .success(let (field, next)):
                fields.append(field)
                lineStart = next
            case .failure(let error):
                return .failure(error)
            }
        }
        return .success(HeadLines(startLine: 0..<startLineEnd, fields: fields))
    }

    /// The offset of the CR of the CRLF ending the line at `start`; nil for a bare LF or CR.
    private static func lineEnd(_ bytes: UnsafeRawBufferPointer, from start: Int, limit: Int) -> Int? {
        var index = start
        while index < limit {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\r") {
                return index + 1 < limit && bytes[index + 1] == UInt8(ascii: "\n") ? index : nil
            }
            if byte == UInt8(ascii: "\n") { return nil }
            index += 1
        }
        return nil
    }

    /// `field-name ":" OWS field-value OWS CRLF` (RFC 9112 §5) at `start`; the field and the
    /// start of the next line.
    private static func field(
        _ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int
    ) -> Result<(HeaderField, Int), HeadError> {
        let first = bytes[start]
        if first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { return .failure(.obsFold) }
        var index = start
        while index < end, bytes[index] != UInt8(ascii: ":") {
            // A space before the colon is a classic smuggling vector: refused, not trimmed.
            guard HTTPToken.isTokenByte(bytes[index]) else { return .failure(.invalidHeaderName) }
            index += 1
        }
        guard index < end, index > start else { return .failure(.invalidHeaderName) }
        let nameEnd = index
        index += 1
        while index < end, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
        let valueStart = index
        // The value runs to the CRLF; every byte is checked, eight at a time where no control
        // character is among them (measured: the byte loop over a 700-byte token cost ~3 %).
        while true {
            while index + 8 <= end, SWAR.isPlainText(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                index += 8
            }
            guard index < end else { return .failure(.bareLineFeed) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\r") {
                guard index + 1 < end, bytes[index + 1] == UInt8(ascii: "\n") else { return .failure(.bareLineFeed) }
                break
            }
            guard Self.isFieldValueByte(byte) else {
                return .failure(byte == UInt8(ascii: "\n") ? .bareLineFeed : .invalidHeaderValue)
            }
            index += 1
        }
        let lineEnd = index
        var valueEnd = lineEnd
        while valueEnd > valueStart,
            bytes[valueEnd - 1] == UInt8(ascii: " ") || bytes[valueEnd - 1] == UInt8(ascii: "\t")
        { valueEnd -= 1 }
        let kind = HeaderNames.kind(bytes, start, nameEnd)
        if valueEnd != lineEnd, kind == .contentLength || kind == .transferEncoding {
            // Trailing whitespace is legal (and trimmed) elsewhere; in the two fields that
            // frame a message it is refused, as llhttp refuses it: parsers that disagree about
            // framing are how requests get smuggled.
            return .failure(.invalidHeaderValue)
        }
        return .success(
            (
                HeaderField(nameStart: start, nameEnd: nameEnd, valueStart: valueStart, valueEnd: valueEnd, kind: kind),
                lineEnd + 2
            ))
    }

    /// A field line without its CRLF (a trailer): `field-name ":" field-value`, by the same
    /// rules as a head's fields.
    static func isValidFieldLine(_ line: [UInt8]) -> Bool {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        return line[..<colon].allSatisfy(HTTPToken.isTokenByte)
            && line[(colon + 1)...].allSatisfy(Self.isFieldValueByte)
    }

    /// HTAB, SP, VCHAR and obs-text: no NUL, CR, LF or other control characters.
    @inline(__always)
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }
}

/// Byte tests on eight bytes at once ("SIMD within a register").
enum SWAR {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Whether any byte of `word` equals `byte`.
    @inline(__always)
    static func contains(_ word: UInt64, _ byte: UInt8) -> Bool {
        let x = word ^ (Self.ones &* UInt64(byte))
        return (x &- Self.ones) & ~x & Self.highBits != 0
    }

    /// No byte below 0x20 (controls, including CR, LF and HTAB) and none is DEL: every byte
    /// is a visible character, a space or obs-text. (HTAB takes the byte-wise path.)
    @inline(__always)
    static func isPlainText(_ word: UInt64) -> Bool {
        let belowSpace = (word &- Self.ones &* 0x20) & ~word & Self.highBits
        return belowSpace == 0 && !Self.contains(word, 0x7F)
    }
}

enum HeadError: Error, Equatable {
    case bareLineFeed
    case emptyHead
    case obsFold
    case invalidHeaderName
    case invalidHeaderValue
    case invalidStartLine
    case unsupportedVersion

    var detail: String {
        switch self {
        case .bareLineFeed: return "Lines must end with CRLF"
        case .emptyHead: return "Empty request"
        case .obsFold: return "Folded header line (obs-fold)"
        case .invalidHeaderName: return "Invalid header name"
        case .invalidHeaderValue: return "Invalid header value"
        case .invalidStartLine: return "Invalid request line"
        case .unsupportedVersion: return "Unsupported HTTP version"
        }
    }
}
