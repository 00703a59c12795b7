import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

/// What a parser produced, comparable.
enum ParsedPart: Equatable {
    case head(String)
    case framing(BodyFraming)
    case body(String)
    case end
    case error(String)
}

/// Feeds `chunks` one after the other, collecting every event (as the proxy does, the parser is
/// pulled until it needs more bytes).
func parseRequests(
    _ chunks: [String], maxHeaderBytes: Int = 1024, maxBodyBytes: Int = 1000
) -> (parts: [ParsedPart], rest: String) {
    var parser = RequestParser(maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes)
    var buffer = ByteBuffer()
    var parts: [ParsedPart] = []
    for chunk in chunks {
        buffer.writeString(chunk)
        while let event = parser.next(&buffer) {
            switch event {
            case .head(let head, let framing):
                let fields = head.headers.map { "\($0.name)=\($0.value)" }.joined(separator: ";")
                parts.append(.head("\(head.method.rawValue) \(head.uri) \(head.version) [\(fields)]"))
                switch framing {
                case .success(let framing): parts.append(.framing(framing))
                case .failure(let error): parts.append(.error(error.errorType))
                }
            case .body(let body): parts.append(.body(String(buffer: body)))
            case .end: parts.append(.end)
            case .error(let error): parts.append(.error(error.errorType))
            }
        }
    }
    return (parts, String(buffer: buffer))
}

@Suite("RequestParser")
struct RequestParserTests {
    @Test("heads of different sizes on one connection each get their own fields (the ranges' storage is reused)")
    func fieldStorageReusedAcrossHeads() {
        let many = (0..<100).map { "X-F\($0): v\($0)\r\n" }.joined()
        let result = parseRequests(
            [
                "GET /a HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n"
                    + "GET /b HTTP/1.1\r\nHost: h\r\n\(many)\r\n"
                    + "GET /c HTTP/1.1\r\nHost: h\r\n\r\n"
            ], maxHeaderBytes: 4096)
        let manyFields = (0..<100).map { "X-F\($0)=v\($0)" }.joined(separator: ";")
        #expect(
            result.parts == [
                .head("GET /a HTTP/1.1 [Host=h;A=1;B=2]"), .framing(.none), .end,
                .head("GET /b HTTP/1.1 [Host=h;\(manyFields)]"), .framing(.none), .end,
                .head("GET /c HTTP/1.1 [Host=h]"), .framing(.none), .end,
            ])
    }

    @Test("heads on one connection each get their own field texts, also when only a byte of a long one differs")
    func repeatedTextsNeverLeakBetweenHeads() {
        let alice = String(repeating: "a", count: 600) + "1"
        let bob = String(repeating: "a", count: 600) + "2"
        let agent = "Mozilla/5.0 (X11; Linux x86_64) Chrome/120"
        let result = parseRequests(
            [
                "GET /a HTTP/1.1\r\nHost: h\r\nUser-Agent: \(agent)\r\nAuthorization: Bearer \(alice)\r\n\r\n"
                    + "GET /b HTTP/1.1\r\nHost: h\r\nUser-Agent: \(agent)\r\nAuthorization: Bearer \(bob)\r\n\r\n"
                    + "GET /c HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer \(bob)\r\nUser-Agent: \(agent)\r\n\r\n"
                    + "GET /d HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer \(bob)\r\nUser-Agent: \(agent)\r\n\r\n"
            ], maxHeaderBytes: 4096)
        #expect(
            result.parts == [
                .head("GET /a HTTP/1.1 [Host=h;User-Agent=\(agent);Authorization=Bearer \(alice)]"), .framing(.none),
                .end,
                .head("GET /b HTTP/1.1 [Host=h;User-Agent=\(agent);Authorization=Bearer \(bob)]"), .framing(.none),
                .end,
                .head("GET /c HTTP/1.1 [Host=h;Authorization=Bearer \(bob);User-Agent=\(agent)]"), .framing(.none),
                .end,
                .head("GET /d HTTP/1.1 [Host=h;Authorization=Bearer \(bob);User-Agent=\(agent)]"), .framing(.none),
                .end,
            ])
    }

    @Test("a bodiless GET: head, then its end without further bytes")
    func bodilessGet() {
        let result = parseRequests(["GET /a?b=1 HTTP/1.1\r\nHost: h\r\nX-Thing:  spaced value \t\r\n\r\n"])
        #expect(result.parts == [.head("GET /a?b=1 HTTP/1.1 [Host=h;X-Thing=spaced value]"), .framing(.none), .end])
        #expect(result.rest.isEmpty)
    }

    @Test("a head arriving byte by byte parses the same")
    func byteByByte() {
        let request = "POST /p HTTP/1.0\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
        let result = parseRequests(request.unicodeScalars.map { String($0) })
        #expect(
            result.parts == [
                .head("POST /p HTTP/1.0 [Host=h;Content-Length=3]"), .framing(.contentLength(3)),
                .body("a"), .body("b"), .body("c"), .end,
            ])
    }

    @Test("a fixed-length body ends at its length; the pipelined request stays in the buffer until pulled")
    func pipelined() {
        var parser = RequestParser(maxHeaderBytes: 1024, maxBodyBytes: 1000)
        var buffer = ByteBuffer(
            string: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nokGET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        guard case .head = parser.next(&buffer) else { Issue.record("no head"); return }
        guard case .body(let body) = parser.next(&buffer) else { Issue.record("no body"); return }
        #expect(String(buffer: body) == "ok")
        guard case .end = parser.next(&buffer) else { Issue.record("no end"); return }
        #expect(parser.isAtMessageStart)
        #expect(String(buffer: buffer) == "GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        guard case .head(let next, _) = parser.next(&buffer) else { Issue.record("no second head"); return }
        #expect(next.uri == "/next")
    }

    @Test("chunked bodies: sizes in either case, extensions ignored, trailers dropped")
    func chunked() {
        let result = parseRequests([
            "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
            "5;name=value\r\nhello\r\nA\r\n0123456789\r\n", "0\r\nX-Trailer: t\r\n\r\n",
        ])
        #expect(
            result.parts == [
                .head("POST / HTTP/1.1 [Host=h;Transfer-Encoding=chunked]"), .framing(.chunked), .body("hello"),
                .body("0123456789"), .end,
            ])
    }

    @Test("leading empty lines before a request line are ignored (RFC 9112 §2.2)")
    func leadingEmptyLines() {
        let result = parseRequests(["\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"])
        #expect(result.parts.first == .head("GET / HTTP/1.1 [Host=h]"))
    }

    @Test(
        "malformed heads are refused",
        arguments: [
            "GET / HTTP/1.1\nHost: h\n\n",  // bare LF
            "GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",  // obs-fold
            "GET / HTTP/1.1\r\nHost : h\r\n\r\n",  // space before the colon
            "GET / HTTP/1.1\r\nHost: h\r\nX: a\u{0}b\r\n\r\n",  // NUL in a value
            "GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n",  // bare CR in a value
            "GET / HTTP/1.1\r\n: empty-name\r\n\r\n",
            "GET  / HTTP/1.1\r\nHost: h\r\n\r\n",  // two spaces
            "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /\u{e9} HTTP/1.1\r\nHost: h\r\n\r\n",  // raw non-ASCII in the target
            "GET / HTTP/2.0\r\nHost: h\r\n\r\n",
            "GET / http/1.1\r\nHost: h\r\n\r\n",
            "G(T / HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /\r\nHost: h\r\n\r\n",
        ]
    )
    func malformed(_ request: String) {
        #expect(parseRequests([request]).parts == [.error("request.malformed")])
    }

    @Test("ambiguous framing is refused with the head (so the error can be logged with it)")
    func ambiguousFraming() {
        let both = parseRequests([
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc"
        ])
        #expect(both.parts.last == .error("request.malformed"))
        let gzip = parseRequests(["POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"])
        #expect(gzip.parts.last == .error("request.malformed"))
        // Nothing after a refused head is parsed: the connection is closed.
        #expect(both.rest == "abc")
    }

    @Test("a head over the limit is 431, complete or not")
    func headTooLarge() {
        let big = "GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "a", count: 2000))\r\n\r\n"
        #expect(parseRequests([big]).parts == [.error("request.headers_too_large")])
        #expect(parseRequests([String(big.prefix(1500))]).parts == [.error("request.headers_too_large")])
        #expect(parseRequests([String(big.prefix(900))]).parts == [])
    }

    @Test(
        "bad chunk framing is refused",
        arguments: [
            "zz\r\nab\r\n0\r\n\r\n",  // not hex
            "1000000000000000\r\n",  // 16 hex digits: would overflow
            "2\r\nabc\r\n0\r\n\r\n",  // data longer than its size
            "2\nab\r\n0\r\n\r\n",  // bare LF
            "2 x\r\nab\r\n0\r\n\r\n",
            "\r\nab\r\n",  // empty size
            "2\r\nab\r\n0\r\nno colon\r\n\r\n",  // a trailer that is not a field
            "2\r\nab\r\n0\r\n: empty name\r\n\r\n",
        ]
    )
    func badChunks(_ body: String) {
        let result = parseRequests(["POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + body])
        #expect(result.parts.last == .error("request.malformed"))
    }

    @Test("chunk sizes: hex digits, then checked extensions without whitespace")
    func chunkSizes() {
        #expect(ChunkedBody.chunkSize(Array("ff".utf8)) == 255)
        #expect(ChunkedBody.chunkSize(Array("FF;x=y".utf8)) == 255)
        #expect(ChunkedBody.chunkSize(Array("FF ;x=y".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("FF;x= y".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("FF ".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("fffffffffffffff".utf8)) == 0xfff_ffff_ffff_ffff)
        #expect(ChunkedBody.chunkSize(Array("".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("-1".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("1;\u{1}".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("a;x=y;flag;q=\"a \\\" b\"".utf8)) == 10)
        #expect(ChunkedBody.chunkSize(Array("1;".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("1;:x=y".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("1;x=".utf8)) == nil)
        #expect(ChunkedBody.chunkSize(Array("1;x=\"open".utf8)) == nil)
        #expect(
            ChunkedBody.chunkSize([UInt8(ascii: "1"), UInt8(ascii: ";"), UInt8(ascii: "x"), UInt8(ascii: "="), 0xFF])
                == nil)
    }

    @Test("the eight-byte tests agree with the byte-wise ones, for every byte value in every position")
    func swar() {
        for value in 0...255 {
            for position in 0..<8 {
                let byte = UInt8(value)
                var word: UInt64 = 0x4141_4141_4141_4141  // "AAAAAAAA"
                word &= ~(UInt64(0xFF) << (8 * position))
                word |= UInt64(byte) << (8 * position)
                #expect(SWAR.contains(word, byte))
                #expect(SWAR.contains(word, UInt8(ascii: "\n")) == (byte == UInt8(ascii: "\n")))
                #expect(SWAR.isPlainText(word) == (byte >= 0x20 && byte != 0x7F))
            }
        }
    }

    @Test("a control character anywhere in a long value is refused; a tab is not")
    func controlAnywhere() {
        for position in 0..<40 {
            var value = Array(repeating: "a", count: 40)
            value[position] = "\u{1}"
            let request = "GET / HTTP/1.1\r\nHost: h\r\nX: \(value.joined())\r\n\r\n"
            #expect(parseRequests([request]).parts == [.error("request.malformed")], "position \(position)")
            value[position] = "\t"
            #expect(parseRequests(["GET / HTTP/1.1\r\nHost: h\r\nX: \(value.joined())\r\n\r\n"]).parts.count == 3)
        }
    }
}
