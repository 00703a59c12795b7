import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("ResponseParser")
struct ResponseParserTests {
    /// Parses `text` as the response to `method`, then reports the connection's close when
    /// `closeAfter`.
    private func parse(_ text: String, method: HTTPMethod = .GET, closeAfter: Bool = false) -> [ParsedPart] {
        var parser = ResponseParser()
        parser.expectResponse(to: method)
        var buffer = ByteBuffer(string: text)
        var parts: [ParsedPart] = []
        while let event = parser.next(&buffer) { parts.append(Self.summary(event)) }
        if closeAfter, let event = parser.connectionClosed() { parts.append(Self.summary(event)) }
        return parts
    }

    private static func summary(_ event: ResponseParser.Event) -> ParsedPart {
        switch event {
        case .head(let head): return .head("\(head.status) keepAlive=\(head.keepAlive) \(head.framing)")
        case .body(let body): return .body(String(buffer: body))
        case .end: return .end
        case .error(let detail): return .error(detail)
        }
    }

    private func framing(_ status: Int, _ fields: String, method: HTTPMethod = .GET) -> String? {
        guard case .head(let text) = parse("HTTP/1.1 \(status) X\r\n\(fields)\r\n", method: method).first else {
            return nil
        }
        return text
    }

    @Test("fixed length, chunked and close-delimited bodies")
    func bodies() {
        #expect(
            parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") == [
                .head("200 keepAlive=true contentLength(2)"), .body("ok"), .end,
            ])
        #expect(
            parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n") == [
                .head("200 keepAlive=true chunked"), .body("ok"), .end,
            ])
        #expect(
            parse("HTTP/1.1 200 OK\r\n\r\nuntil close", closeAfter: true) == [
                .head("200 keepAlive=false untilClose"), .body("until close"), .end,
            ])
    }

    @Test("responses without a body: HEAD, 204, 304, Content-Length 0")
    func noBody() {
        #expect(framing(200, "Content-Length: 10\r\n", method: .HEAD) == "200 keepAlive=true none")
        #expect(framing(200, "Transfer-Encoding: chunked\r\n", method: .HEAD) == "200 keepAlive=true none")
        #expect(framing(204, "Content-Length: 10\r\n") == "204 keepAlive=true none")
        #expect(framing(304, "Content-Length: 10\r\n") == "304 keepAlive=true none")
        #expect(framing(404, "Content-Length: 0\r\n") == "404 keepAlive=true none")
    }

    @Test("Transfer-Encoding: the final coding decides; not chunked, the body ends with the connection")
    func transferEncoding() {
        #expect(framing(200, "Transfer-Encoding: gzip, chunked\r\n") == "200 keepAlive=true chunked")
        #expect(
            framing(200, "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n") == "200 keepAlive=true chunked")
        #expect(framing(200, "Transfer-Encoding: gzip\r\n") == "200 keepAlive=false untilClose")
    }

    @Test("Content-Length: a list or repeated field of the same text is one length")
    func repeatedContentLength() {
        #expect(framing(200, "Content-Length: 2, 2\r\n") == "200 keepAlive=true contentLength(2)")
        #expect(framing(200, "Content-Length: 2\r\nContent-Length: 2,2\r\n") == "200 keepAlive=true contentLength(2)")
    }

    @Test("keep-alive: HTTP/1.1 unless close; HTTP/1.0 only with keep-alive")
    func keepAlive() {
        #expect(framing(200, "Connection: keep-alive, Close\r\nContent-Length: 0\r\n") == "200 keepAlive=false none")
        guard case .head(let old) = parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").first,
            case .head(let kept) = parse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n").first
        else {
            Issue.record("no heads")
            return
        }
        #expect(old == "200 keepAlive=false none")
        #expect(kept == "200 keepAlive=true none")
    }

    @Test(
        "an interim response that ends the connection is an error: llhttp refuses what follows it",
        arguments: [
            "HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.0 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        ]
    )
    func closingInterim(_ text: String) {
        #expect(parse(text).count == 1)
        guard case .error = parse(text).first else {
            Issue.record("accepted: \(text.debugDescription)")
            return
        }
    }

    @Test(
        "Proxy-Connection: close ends the connection too (llhttp reads the field as Connection); its keep-alive is not trusted"
    )
    func proxyConnection() {
        #expect(framing(200, "Proxy-Connection: close\r\nContent-Length: 0\r\n") == "200 keepAlive=false none")
        #expect(
            framing(200, "proxy-connection: keep-alive, Close\r\nContent-Length: 0\r\n") == "200 keepAlive=false none")
        #expect(framing(200, "Proxy-Connection: keep-alive\r\nContent-Length: 0\r\n") == "200 keepAlive=true none")
        guard
            case .head(let old) = parse("HTTP/1.0 200 OK\r\nProxy-Connection: keep-alive\r\nContent-Length: 0\r\n\r\n")
                .first
        else {
            Issue.record("no head")
            return
        }
        #expect(old == "200 keepAlive=false none")
        #expect(
            parse("HTTP/1.1 100 Continue\r\nProxy-Connection: close\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n").count == 1)
    }

    @Test("interim 1xx responses are skipped; 101 is an error")
    func interim() {
        #expect(
            parse(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx"
            ) == [
                .head("201 keepAlive=true contentLength(1)"), .body("x"), .end,
            ])
        #expect(parse("HTTP/1.1 101 Switching Protocols\r\n\r\n").count == 1)
        #expect(
            parse("HTTP/1.1 101 Switching Protocols\r\n\r\n").allSatisfy { if case .error = $0 { true } else { false } }
        )
    }

    @Test(
        "invalid responses are errors",
        arguments: [
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            // The same length written two ways, or an empty list element (llhttp refuses them).
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 01\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1, 01\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: ,1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1,\r\n\r\n",
            // Both framings named, in either order, even where the status allows no body
            // (RFC 9112 §6.3 "ought to be handled as an error"; llhttp refuses it).
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 10\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: gzip\r\n\r\n",
            "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n",
            // A Transfer-Encoding list with an empty element: llhttp reads "chunked," as not
            // chunked (the body then ends with the connection).
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,\r\n\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip,,chunked\r\n\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding:\r\n\r\n0\r\n\r\n",
            // A trailer naming a framing or connection field (llhttp refuses or acts on it).
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nConnection: close\r\n\r\n",
            "HTTP/1.1 20 OK\r\n\r\n",
            "HTTP/1.1 2000 OK\r\n\r\n",
            "HTTP/2 200 OK\r\n\r\n",
            "ICY 200 OK\r\n\r\n",
            "HTTP/1.1 200 OK\nContent-Length: 0\n\n",
            "HTTP/1.1 200 OK\r\nX : y\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n",
            "HTTP/1.1 200 O\u{0}K\r\nContent-Length: 0\r\n\r\n",
        ]
    )
    func invalid(_ text: String) {
        guard case .error = parse(text).last else {
            Issue.record("accepted: \(text.debugDescription)")
            return
        }
    }

    @Test("bytes when no request was sent are an error")
    func unsolicited() {
        var parser = ResponseParser()
        var buffer = ByteBuffer(string: "HTTP/1.1 200 OK\r\n\r\n")
        guard case .error = parser.next(&buffer) else {
            Issue.record("accepted")
            return
        }
    }

    @Test("a missing reason phrase is accepted; a body cut short by the close is not ended")
    func edges() {
        #expect(parse("HTTP/1.1 204\r\n\r\n") == [.head("204 keepAlive=true none"), .end])
        #expect(
            parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", closeAfter: true) == [
                .head("200 keepAlive=true contentLength(5)"), .body("ab"),
            ])
    }

    @Test("the NIO form of a head keeps every field, for the gateway's own calls")
    func httpResponseHead() {
        var parser = ResponseParser()
        parser.expectResponse(to: .GET)
        var buffer = ByteBuffer(
            string: "HTTP/1.1 404 Not Found\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n")
        guard case .head(let head) = parser.next(&buffer) else {
            Issue.record("no head")
            return
        }
        #expect(head.httpResponseHead.status == .notFound)
        #expect(head.httpResponseHead.headers["set-cookie"] == ["a=1", "b=2"])
    }
}
