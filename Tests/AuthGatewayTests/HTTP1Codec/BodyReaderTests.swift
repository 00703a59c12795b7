import NIOCore
import Testing

@testable import AuthGateway

@Suite("BodyReader")
struct BodyReaderTests {
    /// Feeds `chunks` one after the other, pulling the reader until it needs more bytes; the
    /// steps (data as text) and what is left of the buffer.
    private func read(
        _ framing: BodyFraming, _ chunks: [String], closeAfter: Bool = false
    ) -> (steps: [String], rest: String) {
        var reader = BodyReader(framing)
        var buffer = ByteBuffer()
        var steps: [String] = []
        for chunk in chunks {
            buffer.writeString(chunk)
            while let step = reader.next(&buffer) { steps.append(Self.text(step)) }
        }
        if closeAfter, let step = reader.connectionClosed() { steps.append(Self.text(step)) }
        return (steps, String(buffer: buffer))
    }

    private static func text(_ step: BodyReader.Step) -> String {
        switch step {
        case .data(let part): return "data(\(String(buffer: part)))"
        case .end: return "end"
        case .error(let detail): return "error(\(detail))"
        }
    }

    @Test("no body: the end comes first, without a byte, and the bytes stay for the next message")
    func empty() {
        #expect(read(.none, [""]) == (["end"], ""))
        #expect(read(.none, ["GET / HTTP/1.1\r\n"]) == (["end"], "GET / HTTP/1.1\r\n"))
        #expect(read(.contentLength(0), ["next"]) == (["end"], "next"))
    }

    @Test("a fixed length: parts as they arrive, the end at the last byte, nothing beyond it")
    func fixedLength() {
        #expect(
            read(.contentLength(5), ["he", "", "l", "lo", "NEXT"]) == (
                ["data(he)", "data(l)", "data(lo)", "end"], "NEXT"
            ))
        #expect(read(.contentLength(3), ["abcdef"]) == (["data(abc)", "end"], "def"))
        #expect(
            read(.contentLength(3), ["ab"], closeAfter: true) == (["data(ab)"], ""), "cut short by the close: not ended"
        )
    }

    @Test("chunked: the chunks' data, a size line split across reads, the end after the trailers")
    func chunked() {
        let result = read(
            .chunked, ["1", "0;a=b\r", "\n0123456789abcdef\r\n", "3\r\nxyz\r\n0\r\nT: 1\r\n", "\r\nNEXT"])
        #expect(result.steps == ["data(0123456789abcdef)", "data(xyz)", "end"])
        #expect(result.rest == "NEXT")
    }

    @Test("chunked: a malformed body is an error, and nothing is read after it")
    func chunkedError() {
        var reader = BodyReader(.chunked)
        var buffer = ByteBuffer(string: "2\r\nokX\r\n0\r\n\r\n")
        #expect(reader.next(&buffer) == .data(ByteBuffer(string: "ok")))
        #expect(reader.next(&buffer) == .error("Missing CRLF after chunk data"))
        #expect(reader.next(&buffer) == nil)
        #expect(reader.connectionClosed() == nil)
    }

    @Test(
        "chunked: a trailer that would frame the message or control the connection is an error (llhttp acts on them)",
        arguments: [
            "Content-Length: 5", "transfer-encoding: chunked", "Transfer-Encoding: gzip", "Connection: close",
            "Proxy-Connection: close",
        ]
    )
    func framingTrailers(_ field: String) {
        var reader = BodyReader(.chunked)
        var buffer = ByteBuffer(string: "1\r\nx\r\n0\r\nX-Fine: 1\r\n\(field)\r\n\r\n")
        #expect(reader.next(&buffer) == .data(ByteBuffer(string: "x")))
        guard case .error = reader.next(&buffer) else {
            Issue.record("accepted the trailer \(field)")
            return
        }
    }

    @Test("until close: every byte is body, the close is the end")
    func untilClose() {
        var reader = BodyReader(.untilClose)
        #expect(reader.isUntilClose)
        #expect(
            read(.untilClose, ["a", "", "HTTP/1.1 200 OK\r\n"], closeAfter: true) == (
                ["data(a)", "data(HTTP/1.1 200 OK\r\n)", "end"], ""
            ))
        #expect(reader.connectionClosed() == .end)
        #expect(!reader.isUntilClose)
        var buffer = ByteBuffer(string: "late")
        #expect(reader.next(&buffer) == nil)
        #expect(!BodyReader(.chunked).isUntilClose && !BodyReader(.contentLength(1)).isUntilClose)
    }

    @Test("the close ends only a close-delimited body")
    func closeEndsOnlyUntilClose() {
        for framing in [BodyFraming.none, .contentLength(2), .chunked] {
            var reader = BodyReader(framing)
            #expect(reader.connectionClosed() == nil, "\(framing)")
        }
    }

    @Test("after the end, nothing more: the next message's bytes are left alone")
    func afterEnd() {
        for framing in [BodyFraming.none, .contentLength(1), .chunked] {
            var reader = BodyReader(framing)
            var buffer = ByteBuffer(string: "x0\r\n\r\n")
            if case .contentLength = framing { #expect(reader.next(&buffer) == .data(ByteBuffer(string: "x"))) }
            if case .chunked = framing { buffer.moveReaderIndex(forwardBy: 1) }
            while let step = reader.next(&buffer), step != .end {}
            buffer.writeString("NEXT")
            #expect(reader.next(&buffer) == nil, "\(framing)")
            #expect(String(buffer: buffer).hasSuffix("NEXT"), "\(framing)")
        }
    }

    @Test("body parts are slices of the input buffer, not copies")
    func slices() {
        for framing in [BodyFraming.contentLength(4), .chunked, .untilClose] {
            var reader = BodyReader(framing)
            var buffer = ByteBuffer(string: framing == .chunked ? "4\r\nbody\r\n0\r\n\r\n" : "body")
            let base = buffer.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
            guard case .data(let part) = reader.next(&buffer) else {
                Issue.record("no data for \(framing)")
                continue
            }
            let offset = framing == .chunked ? 3 : 0
            #expect(
                part.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } == base + UInt(offset), "\(framing)")
        }
    }
}
