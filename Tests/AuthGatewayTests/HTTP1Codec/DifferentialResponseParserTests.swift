import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The gateway's response parser against an independent one: llhttp, through NIO's
/// `HTTPResponseDecoder` (told each request's method by an outbound request head, as in a
/// real client pipeline). Seeded mutations of valid pipelined responses go to both: stray
/// bytes (spaces, CR, LF, NUL, DEL, obs-text…), doubled lines, framing fields dropped in
/// (duplicate and conflicting `Content-Length`, `Transfer-Encoding` variants, connection
/// options, obs-fold, chunk-size lines), other status codes (1xx interim, 101, 204, 304, out
/// of range), HEAD instead of GET, and streams cut short (close-delimited bodies end at the
/// close).
///
/// The property, response by response, for as far as the gateway reads the stream: every
/// head the gateway accepts, llhttp accepts too, with the same status, version and fields;
/// every body the gateway ends, llhttp ends with the same bytes (so the next response starts
/// at the same byte for both, and is compared in turn); a body the gateway does not end (an
/// error or the close in the middle) is a prefix of llhttp's. A backend whose responses two
/// parsers frame differently could otherwise answer one client with bytes meant for another.
///
/// The gateway reads a stream as it does in production: each response after the one before
/// it ended, only while it keeps the connection alive, to the end of the bytes, then the
/// close. Where it would keep a connection llhttp closes, llhttp refuses the next response
/// and the comparison fails there. (NIO's `isKeepAlive` is not compared: llhttp decides it
/// before it is told that a HEAD response has no body.) Interim 1xx responses are skipped by
/// both, so they are compared through what follows them; a 101 is accepted by the gateway
/// only after an upgrade request, which the mutations never make.
///
/// Two known differences are not left out but edited away in llhttp's copy of the input
/// (`llhttpEdits`), so that the rest of such a response, and the ones after it, are still
/// compared: repeated identical `Content-Length`s, and tabs around `Connection` tokens.
///
/// Serialized, and 3,000 mutations a seed (about 2,000 accepted): its CPU-bound cases would
/// otherwise take both of a small machine's cooperative threads at once and starve the
/// suite's timing tests that run beside them.
@Suite("ResponseParser against llhttp", .serialized)
struct DifferentialResponseParserTests {
    struct Seed {
        /// The methods of the requests the responses answer, in order.
        var methods: [HTTPMethod]
        var text: String
    }

    static let seeds = [
        Seed(
            methods: [.GET, .GET],
            text: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello"
                + "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno"
        ),
        Seed(
            methods: [.GET, .GET],
            text: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-B: two words\r\n\r\n"
                + "5\r\nhello\r\n3;ext=v;q=\"a b\"\r\nabc\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer-A: 1\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nend"
        ),
        Seed(
            methods: [.HEAD, .GET, .GET, .GET],
            text: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nETag: \"x\"\r\n\r\n"
                + "HTTP/1.1 204 No Content\r\nX-C: c\r\n\r\n"
                + "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz"
        ),
        Seed(
            methods: [.POST, .GET],
            text: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
                + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        ),
        Seed(methods: [.GET], text: "HTTP/1.0 200 OK\r\nServer: s\r\n\r\nbody until the close"),
        Seed(
            methods: [.GET], text: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close\r\nHTTP/1.1 200 OK\r\n\r\n"),
        Seed(
            methods: [.GET, .GET],
            text: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 4\r\n\r\nkeep"
                + "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nfail\r\n0\r\n\r\n"
        ),
        Seed(
            methods: [.GET, .GET],
            text: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Type: a\r\n\r\n2\r\nok\r\n0\r\n\r\n"
                + "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\n!"
        ),
    ]

    /// Lines that change how a response is framed, dropped in at the start of a line.
    static let framingLines = [
        "Content-Length: 0", "Content-Length: 2", "Content-Length: 5", "Content-Length: 5, 5", "Content-Length: 5,5",
        "Content-Length: 05",
        "Content-Length: +5", "Content-Length: 5 5", "Content-Length:", "Content-Length : 5", "content-length: 5",
        "Content-Length:  5",
        "Content-Length: 0x5", "Content-Length: 18446744073709551621", "Content-Length: 1e1",
        "Transfer-Encoding: chunked", "Transfer-Encoding: gzip", "Transfer-Encoding: gzip, chunked",
        "Transfer-Encoding: chunked, gzip",
        "Transfer-Encoding: identity", "Transfer-Encoding: chunked, chunked", "Transfer-Encoding:\tchunked",
        "transfer-encoding: CHUNKED",
        "Transfer-Encoding:", "Transfer-Encoding: chunked,", "Transfer-Encoding: ,chunked",
        "Transfer-Encoding: gzip,,chunked",
        "Connection: close", "Connection: keep-alive", "Connection: Keep-Alive", "Connection: keep-alive, close",
        "Connection: keep-alive\t",
        "Connection: close\t", "Connection: upgrade", "Upgrade: websocket", "Proxy-Connection: close",
        "Proxy-Connection: keep-alive",
        " folded", "\tfolded", "Trailer: X-T", "X-Empty:", "0", "0;x=y", "0\r\n", "ff", "1;", "fffffffffffffffff",
    ]

    /// Status codes to swap in.
    static let statuses = [
        "100", "101", "102", "103", "199", "200", "204", "205", "206", "299", "304", "404", "600", "999", "099", "000",
        "20", "2000", "2a0",
    ]

    /// What a parser made of one response.
    struct Response: Equatable, CustomStringConvertible {
        var status: Int
        var version: HTTPVersion
        var headers: [String]
        var body: [UInt8] = []
        /// The body ended (rather than an error or the close in the middle of it).
        var complete = false

        var description: String {
            let body = String(decoding: self.body, as: UTF8.self).debugDescription
            return "\(self.version) \(self.status) \(self.headers) body \(body)\(self.complete ? "" : " (unfinished)")"
        }
    }

    @Test(arguments: 0..<Self.seeds.count)
    func mutationsAgreeWithLLHTTP(seedIndex: Int) async throws {
        let seed = Self.seeds[seedIndex]
        let bytes = Array(seed.text.utf8)
        let seedResponses = Self.gateway(bytes, methods: seed.methods)
        #expect(
            seedResponses.responses.count == seed.methods.count && seedResponses.responses.allSatisfy(\.complete),
            "the seed itself must parse")
        #expect(seedResponses.forLLHTTP == bytes)
        #expect(
            Self.disagreement(ours: seedResponses.responses, theirs: Self.llhttp(bytes, methods: seed.methods)) == nil,
            "the seed itself must parse the same")
        let outcome = await onCPUHeavyQueue {
            Self.compareMutations(of: bytes, methods: seed.methods, seedIndex: seedIndex)
        }
        for disagreement in outcome.disagreements { Issue.record("\(disagreement)") }
        // The mutations must leave enough accepted inputs for the comparison to mean something.
        #expect(outcome.accepted > 800)
    }

    struct MutationOutcome: Sendable {
        var accepted = 0
        var disagreements: [String] = []
    }

    /// 3 000 seeded mutations through both parsers (CPU work for seconds: the test runs it on
    /// `onCPUHeavyQueue`).
    static func compareMutations(
        of bytes: [UInt8], methods seedMethods: [HTTPMethod], seedIndex: Int
    ) -> MutationOutcome {
        var random = RequestIDGenerator(seed: 0x5EED_1000 + UInt64(seedIndex))
        var outcome = MutationOutcome()
        for _ in 0..<3_000 where outcome.disagreements.count < 20 {
            var methods = seedMethods
            let input = Self.mutate(bytes, methods: &methods, using: &random)
            let ours = Self.gateway(input, methods: methods)
            guard !ours.responses.isEmpty else { continue }
            if ours.responses.contains(where: \.complete) { outcome.accepted += 1 }
            let theirs = Self.llhttp(ours.forLLHTTP, methods: methods)
            guard let problem = Self.disagreement(ours: ours.responses, theirs: theirs) else { continue }
            outcome.disagreements.append(
                "\(problem) for \(methods) \(String(decoding: input, as: UTF8.self).debugDescription)")
        }
        return outcome
    }

    @Test("the exemptions edit llhttp's copy only, and only where they apply")
    func exemptionsAreEdits() {
        let input = Array(
            ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: 1\r\nContent-Length: 2, 2\r\n\r\nok"
                + "HTTP/1.0 200 OK\r\nConnection: keep-alive\t\r\nContent-Length: 1\r\n\r\n!"
                + "HTTP/1.1 204 No Content\r\nConnection:\tx,\tkeep-alive\r\n\r\n").utf8
        )
        let ours = Self.gateway(input, methods: [.GET, .GET, .GET])
        #expect(ours.responses.count == 3 && ours.responses.allSatisfy(\.complete))
        #expect(
            String(decoding: ours.forLLHTTP, as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX: 1\r\n\r\nok"
                + "HTTP/1.0 200 OK\r\nConnection: keep-alive \r\nContent-Length: 1\r\n\r\n!"
                + "HTTP/1.1 204 No Content\r\nConnection:\tx, keep-alive\r\n\r\n"
        )
        #expect(
            Self.disagreement(ours: ours.responses, theirs: Self.llhttp(ours.forLLHTTP, methods: [.GET, .GET, .GET]))
                == nil)
        // Unedited, llhttp refuses the first response.
        #expect(
            Self.disagreement(ours: ours.responses, theirs: Self.llhttp(input, methods: [.GET, .GET, .GET])) != nil)
        let plain = Array("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n".utf8)
        #expect(Self.gateway(plain, methods: [.GET]).forLLHTTP == plain)
    }

    @Test("what counts as a disagreement")
    func disagreements() {
        let ok = Response(
            status: 200, version: .http1_1, headers: ["Content-Length: 2"], body: Array("ok".utf8), complete: true)
        var unfinished = ok
        unfinished.body = Array("o".utf8)
        unfinished.complete = false
        var longer = ok
        longer.body += Array("!".utf8)
        var otherHead = ok
        otherHead.headers = ["Content-Length:  2"]
        #expect(Self.disagreement(ours: [ok], theirs: [ok, ok]) == nil, "llhttp may read further")
        #expect(
            Self.disagreement(ours: [unfinished], theirs: [ok]) == nil, "a body the gateway stopped reading is a prefix"
        )
        #expect(Self.disagreement(ours: [ok], theirs: []) != nil, "llhttp refused the head")
        #expect(Self.disagreement(ours: [ok], theirs: [unfinished]) != nil, "llhttp did not end the body")
        #expect(Self.disagreement(ours: [ok], theirs: [longer]) != nil, "llhttp ended it elsewhere")
        #expect(Self.disagreement(ours: [ok], theirs: [otherHead]) != nil, "another head")
        #expect(Self.disagreement(ours: [ok, ok], theirs: [ok]) != nil, "llhttp refused the next response")
    }

    /// Where the gateway read something llhttp did not, or read it differently; nil when it
    /// did not.
    static func disagreement(ours: [Response], theirs: [Response]) -> String? {
        for (index, our) in ours.enumerated() {
            guard index < theirs.count else { return "llhttp refused response \(index) (ours: \(our))" }
            let their = theirs[index]
            guard our.status == their.status, our.version == their.version, our.headers == their.headers else {
                return "response \(index) has another head (ours: \(our), llhttp: \(their))"
            }
            if our.complete {
                guard their.complete, their.body == our.body else {
                    return "response \(index) ends differently (ours: \(our), llhttp: \(their))"
                }
            } else {
                guard their.body.starts(with: our.body) else {
                    return "response \(index) has another body (ours: \(our), llhttp: \(their))"
                }
            }
        }
        return nil
    }

    static func mutate(_ seed: [UInt8], methods: inout [HTTPMethod], using random: inout RequestIDGenerator) -> [UInt8]
    {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let position = Int.random(in: 0..<bytes.count, using: &random)
            let lineStart = bytes[..<position].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1: bytes.insert(DifferentialParserTests.nasty.randomElement(using: &random)!, at: position)
            case 2: bytes.remove(at: position)
            case 3, 4: bytes[position] = DifferentialParserTests.nasty.randomElement(using: &random)!
            case 5:
                // Double the line the position falls in (a second Content-Length, chunk…).
                if let end = bytes[position...].firstIndex(of: UInt8(ascii: "\n")) {
                    bytes.insert(contentsOf: bytes[lineStart...end], at: end + 1)
                }
            case 6, 7:
                bytes.insert(
                    contentsOf: Array((Self.framingLines.randomElement(using: &random)! + "\r\n").utf8), at: lineStart)
            case 8:
                // Another status code in the status line the position falls in.
                let line = bytes[lineStart...]
                if line.starts(with: Array("HTTP/1.".utf8)), line.count >= 12 {
                    let status = Array(Self.statuses.randomElement(using: &random)!.utf8)
                    bytes.replaceSubrange((lineStart + 9)..<(lineStart + 12), with: status)
                } else {
                    let index = Int.random(in: 0..<methods.count, using: &random)
                    methods[index] = methods[index] == .HEAD ? .GET : .HEAD
                }
            default:
                // The stream ends early (the backend closed).
                bytes.removeSubrange(position...)
            }
            if bytes.isEmpty { bytes = seed }
        }
        return bytes
    }

    /// The gateway's parser, as `UpstreamHandler` drives it: the responses it read, the last
    /// one possibly unfinished; and the input for llhttp: the same bytes with the heads the
    /// gateway read (interim ones too) edited by `llhttpEdits` (the responses' fields are
    /// edited the same way, `fieldLines`).
    static func gateway(_ input: [UInt8], methods: [HTTPMethod]) -> (responses: [Response], forLLHTTP: [UInt8]) {
        var parser = ResponseParser()
        var buffer = ByteBuffer(bytes: input)
        var responses: [Response] = []
        var edits: [(range: Range<Int>, replacement: [UInt8])] = []
        var pending = methods[...]
        var keepAlive = false
        var headsStart = 0
        parser.expectResponse(to: pending.removeFirst())
        reading: while let event = parser.next(&buffer) ?? parser.connectionClosed() {
            switch event {
            case .head(let head):
                keepAlive = head.keepAlive
                // The heads read since the last response ended (interim ones, then this one)
                // end where the buffer is read up to.
                var start = headsStart
                while start < buffer.readerIndex, let end = Self.headEnd(input, from: start) {
                    edits += Self.llhttpEdits(input, start..<end)
                    start = end
                }
                responses.append(
                    Response(
                        status: head.status, version: head.version,
                        headers: Self.fieldLines(head.httpResponseHead.headers)))
            case .body(let part):
                responses[responses.count - 1].body += part.readableBytesView
            case .end:
                responses[responses.count - 1].complete = true
                headsStart = buffer.readerIndex
                // A connection not kept alive is not read any further (nor is a stream without
                // another request on it).
                guard keepAlive, let method = pending.popFirst() else { break reading }
                parser.expectResponse(to: method)
            case .error:
                break reading
            }
        }
        var forLLHTTP = input
        for edit in edits.reversed() { forLLHTTP.replaceSubrange(edit.range, with: edit.replacement) }
        return (responses, forLLHTTP)
    }

    /// The end of the head starting at `start`, as the gateway finds it.
    static func headEnd(_ input: [UInt8], from start: Int) -> Int? {
        input.withUnsafeBytes { raw in
            HeadScanner.headEnd(UnsafeRawBufferPointer(rebasing: raw[start...]), from: 0).end.map { start + $0 }
        }
    }

    /// The exemptions, as edits of `input[head]` for llhttp's copy rather than inputs left
    /// out, so that everything else about such a response (and those after it) is still
    /// compared:
    /// - llhttp refuses any repeated `Content-Length` (a second field, or a list), where the
    ///   gateway accepts one repeated as the same text (RFC 9110 §8.6 allows either; HAProxy
    ///   accepts them too): llhttp gets the first field with its first value only;
    /// - llhttp takes only SP, not HTAB, as the whitespace around a `Connection` token
    ///   ("keep-alive<HTAB>" is no keep-alive to it; RFC 9110 §5.6.1 makes both OWS): llhttp
    ///   gets the value with its tabs as spaces.
    static func llhttpEdits(_ input: [UInt8], _ head: Range<Int>) -> [(range: Range<Int>, replacement: [UInt8])] {
        input[head].withUnsafeBytes { raw in
            guard case .success(let lines) = HeadScanner.split(raw, end: raw.count) else { return [] }
            let base = head.lowerBound
            var edits: [(range: Range<Int>, replacement: [UInt8])] = []
            let lengths = lines.fields.filter { $0.kind == .contentLength }
            var values: [Range<Int>] = []
            for field in lengths {
                HeaderNames.forEachListElement(raw, field.valueStart, field.valueEnd) { values.append($0..<$1) }
            }
            for field in lines.fields {
                switch field.kind {
                case .contentLength where values.count > 1:
                    // Content-Length takes no trailing whitespace: its CRLF follows the value.
                    let isFirst = field.nameStart == lengths[0].nameStart
                    edits.append(
                        isFirst
                            ? ((base + field.valueStart)..<(base + field.valueEnd), Array(raw[values[0]]))
                            : ((base + field.nameStart)..<(base + field.valueEnd + 2), [])
                    )
                case .connection:
                    // The value with its trailing whitespace, up to the CR.
                    let end = raw[field.valueEnd...].firstIndex(of: UInt8(ascii: "\r"))!
                    guard raw[field.valueStart..<end].contains(0x09) else { continue }
                    edits.append(
                        (
                            (base + field.valueStart)..<(base + end),
                            raw[field.valueStart..<end].map { $0 == 0x09 ? 0x20 : $0 }
                        ))
                case .contentLength, .other, .transferEncoding, .hopByHop, .requestID:
                    continue
                }
            }
            return edits
        }
    }

    /// The fields as "name: value", edited as `llhttpEdits` edits llhttp's copy.
    static func fieldLines(_ headers: HTTPHeaders) -> [String] {
        var lines: [String] = []
        var sawLength = false
        for (name, value) in headers {
            switch name.lowercased() {
            case "content-length":
                guard !sawLength else { continue }
                sawLength = true
                lines.append(
                    "\(name): \(ASCII.trimmingOWS(value.split(separator: ",", omittingEmptySubsequences: false)[0]))")
            case "connection":
                lines.append("\(name): \(String(value.map { $0 == "\t" ? " " : $0 }))")
            default:
                lines.append("\(name): \(value)")
            }
        }
        return lines
    }

    /// llhttp through NIO: the final responses it read before an error or the end of the
    /// bytes and the close, the last one possibly unfinished.
    static func llhttp(_ input: [UInt8], methods: [HTTPMethod]) -> [Response] {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        try? channel.pipeline.syncOperations.addHandler(HTTPRequestEncoder())
        try? channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)))
        for method in methods {
            // The decoder learns each request's method from the request heads written.
            _ = try? channel.writeOutbound(
                HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: method, uri: "/")))
            _ = try? channel.writeOutbound(HTTPClientRequestPart.end(nil))
        }
        // An error part-way does not undo what came before it: those parts are in the channel.
        _ = try? channel.writeInbound(ByteBuffer(bytes: input))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        var responses: [Response] = []
        while let part = try? channel.readInbound(as: HTTPClientResponsePart.self) {
            switch part {
            case .head(let head):
                // Values without trailing whitespace, as RFC 9112 §5 defines them.
                responses.append(
                    Response(
                        status: Int(head.status.code), version: head.version,
                        headers: head.headers.map { "\($0.name): \(ASCII.trimmingOWS($0.value[...]))" }
                    )
                )
            case .body(let part):
                responses[responses.count - 1].body += part.readableBytesView
            case .end:
                responses[responses.count - 1].complete = true
            }
        }
        return responses
    }
}
