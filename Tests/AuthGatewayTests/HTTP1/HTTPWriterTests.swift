import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("HTTPWriter")
struct HTTPWriterTests {
    private func clientHead(
        _ backend: String,
        clientVersion: HTTPVersion = .http1_1,
        extra: [(name: String, value: String)] = [],
        chunked: Bool = false,
        connection: String? = nil
    ) -> String {
        var parser = ResponseParser()
        parser.expectResponse(to: .GET)
        var input = ByteBuffer(string: backend)
        guard case .head(let head) = parser.next(&input) else { return "no head" }
        var output = ByteBuffer()
        HTTPWriter.clientResponseHead(
            .http1(head), clientVersion: clientVersion, requestID: "gw-1", extra: extra, chunked: chunked,
            connection: connection, into: &output
        )
        return String(buffer: output)
    }

    @Test(
        "hop-by-hop fields, those named by Connection, and the backend's X-Request-Id are dropped; the rest is copied as sent"
    )
    func responseHead() {
        let output = clientHead(
            "HTTP/1.1 200 Fine Thanks\r\nContent-Type: application/json\r\nConnection: close, X-Backend-Hop\r\nKeep-Alive: timeout=5\r\n"
                + "x-backend-hop: 1\r\nTransfer-Encoding: chunked\r\nX-Request-Id: backend-id\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n"
                + "Upgrade: h2c\r\nTrailer: X\r\nProxy-Authenticate: Basic\r\n\r\n",
            extra: [("X-Access-Token", "new")],
            chunked: true
        )
        #expect(
            output
                == "HTTP/1.1 200 Fine Thanks\r\nContent-Type: application/json\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n"
                + "X-Request-Id: gw-1\r\nX-Access-Token: new\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
    }

    @Test(
        "the worst case of the sized copy: every field bare-colon (one byte longer when written), a short reason, all extras"
    )
    func sizedCopyWorstCase() {
        let fields = (0..<200).map { "a\($0):v\r\n" }.joined()
        var parser = ResponseParser()
        parser.expectResponse(to: .GET, upgrade: true)
        var input = ByteBuffer(string: "HTTP/1.1 101 \r\n" + fields + "\r\n")
        guard case .head(let head) = parser.next(&input) else {
            Issue.record("no head")
            return
        }
        var output = ByteBuffer()
        HTTPWriter.clientResponseHead(
            .http1(head), clientVersion: .http1_0, requestID: String(repeating: "r", count: 64),
            extra: [("X-Access-Token", String(repeating: "t", count: 900))],
            chunked: true, connection: "upgrade", upgrade: "websocket", into: &output
        )
        let text = String(buffer: output)
        #expect(text.hasPrefix("HTTP/1.0 101 \r\na0: v\r\na1: v\r\n"))
        #expect(text.contains("a199: v\r\nX-Request-Id: " + String(repeating: "r", count: 64) + "\r\nX-Access-Token: "))
        #expect(text.hasSuffix("\r\nTransfer-Encoding: chunked\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"))
    }

    @Test("Content-Length is kept for a fixed-length body and dropped whenever the body is re-framed as chunked")
    func contentLength() {
        #expect(
            clientHead("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
                == "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Request-Id: gw-1\r\n\r\n")
        #expect(
            clientHead("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", chunked: true)
                == "HTTP/1.1 200 OK\r\nX-Request-Id: gw-1\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        // A backend's head naming both framings never gets this far: the parser refuses it.
        #expect(
            clientHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 10\r\n\r\n", chunked: true)
                == "no head")
    }

    @Test("the status line speaks the client's version; Connection is the gateway's")
    func versionAndConnection() {
        #expect(
            clientHead(
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", clientVersion: .http1_0, connection: "keep-alive"
            )
                == "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nX-Request-Id: gw-1\r\nConnection: keep-alive\r\n\r\n"
        )
        #expect(
            clientHead("HTTP/1.0 204\r\n\r\n", connection: "close")
                == "HTTP/1.1 204 \r\nX-Request-Id: gw-1\r\nConnection: close\r\n\r\n")
    }

    @Test("request heads and chunks")
    func requestHeadAndChunks() {
        var buffer = ByteBuffer()
        HTTPWriter.requestHead(
            UpstreamRequestHead(
                HTTPRequestHead(version: .http1_1, method: .PATCH, uri: "/a?b", headers: ["Host": "h", "X": "1"])),
            into: &buffer)
        #expect(String(buffer: buffer) == "PATCH /a?b HTTP/1.1\r\nHost: h\r\nX: 1\r\n\r\n")
        let chunk = HTTPWriter.chunk(
            ByteBuffer(string: String(repeating: "z", count: 26)), allocator: ByteBufferAllocator())
        #expect(String(buffer: chunk) == "1a\r\n\(String(repeating: "z", count: 26))\r\n")
    }

    @Test("a local response head")
    func localHead() {
        var buffer = ByteBuffer()
        HTTPWriter.responseHead(
            version: .http1_1, status: .unauthorized, headers: ["WWW-Authenticate": "Bearer"], into: &buffer)
        #expect(String(buffer: buffer) == "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n\r\n")
    }
}
