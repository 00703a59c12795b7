import NIOCore
import NIOHPACK
import NIOHTTP1
import Testing

@testable import AuthGateway

/// An HTTP/2 backend's response HEADERS go to the client's writers as HPACK fields, with no
/// HTTP/1.1 text in between (`UpstreamResponseHead.http2`), and lose the same fields an
/// HTTP/1.1 backend's head loses.
@Suite("HTTP2ResponseHead")
struct HTTP2ResponseHeadTests {
    private func block(_ fields: [(String, String)], neverIndexed: Set<String> = []) -> HPACKHeaders {
        var headers = HPACKHeaders()
        for (name, value) in fields {
            headers.add(name: name, value: value, indexing: neverIndexed.contains(name) ? .neverIndexed : .indexable)
        }
        return headers
    }

    @Test func theFramingFollowsContentLengthTheMethodAndTheStatus() throws {
        let sized = try #require(
            HTTP2ResponseHead(self.block([(":status", "200"), ("content-length", "12")]), method: .GET))
        #expect(sized.status == 200)
        #expect(sized.framing == .contentLength(12))
        let unsized = try #require(HTTP2ResponseHead(self.block([(":status", "200")]), method: .GET))
        #expect(unsized.framing == .chunked, "a body that runs to END_STREAM")
        let head = try #require(
            HTTP2ResponseHead(self.block([(":status", "200"), ("content-length", "12")]), method: .HEAD))
        #expect(head.framing == .none)
        for status in ["204", "304"] {
            #expect(HTTP2ResponseHead(self.block([(":status", status)]), method: .GET)?.framing == BodyFraming.none)
        }
        #expect(
            HTTP2ResponseHead(self.block([(":status", "200"), ("content-length", "0")]), method: .GET)?.framing
                == BodyFraming.none)
    }

    @Test func aMissingOrInvalidStatusOrContentLengthIsRefused() {
        #expect(HTTP2ResponseHead(self.block([("content-type", "text/plain")]), method: .GET) == nil)
        #expect(HTTP2ResponseHead(self.block([(":status", "2000")]), method: .GET) == nil)
        #expect(HTTP2ResponseHead(self.block([(":status", "abc")]), method: .GET) == nil)
        #expect(HTTP2ResponseHead(self.block([(":status", "200"), ("content-length", "1x")]), method: .GET) == nil)
        #expect(HTTP2ResponseHead(self.block([(":status", "200"), ("content-length", "")]), method: .GET) == nil)
        #expect(
            HTTP2ResponseHead(
                self.block([(":status", "200"), ("content-length", "5"), ("content-length", "05")]), method: .GET)
                == nil)
        #expect(
            HTTP2ResponseHead(
                self.block([(":status", "200"), ("content-length", "5"), ("content-length", "5")]), method: .GET)?
                .framing == .contentLength(5))
        #expect(
            HTTP2ResponseHead(self.block([(":status", "200"), ("x-note", "a\u{01}b")]), method: .GET) == nil,
            "a control character")
        #expect(
            HTTP2ResponseHead(self.block([(":status", "200"), ("x-note", "a\tb")]), method: .GET) != nil,
            "a tab is fine")
    }

    @Test func pseudoFieldsConnectionFieldsAndTheBackendsRequestIDAreDropped() throws {
        let head = try #require(
            HTTP2ResponseHead(
                self.block([
                    (":status", "200"), ("content-type", "text/plain"), ("te", "trailers"), ("trailer", "x"),
                    ("connection", "close"),
                    ("x-request-id", "backend"), ("set-cookie", "a=1"), ("set-cookie", "b=2"),
                ]),
                method: .GET
            )
        )
        #expect(
            head.fields.map { "\($0.name): \($0.value)" } == [
                "content-type: text/plain", "set-cookie: a=1", "set-cookie: b=2",
            ])
    }

    @Test func anHTTP1ClientGetsTheFieldsAsTheyCameWithTheGatewaysOwn() throws {
        let head = try #require(
            HTTP2ResponseHead(
                self.block([
                    (":status", "201"), ("content-type", "text/plain"), ("content-length", "3"), ("x-request-id", "b"),
                ]), method: .GET)
        )
        var sized = ByteBuffer()
        HTTPWriter.clientResponseHead(
            .http2(head), clientVersion: .http1_1, requestID: "gw-1", extra: [("X-Access-Token", "new")],
            chunked: false, connection: nil, into: &sized
        )
        #expect(
            String(buffer: sized)
                == "HTTP/1.1 201 \r\ncontent-type: text/plain\r\ncontent-length: 3\r\nX-Request-Id: gw-1\r\nX-Access-Token: new\r\n\r\n"
        )
        var chunked = ByteBuffer()
        HTTPWriter.clientResponseHead(
            .http2(head), clientVersion: .http1_0, requestID: "gw-2", extra: [], chunked: true, connection: "close",
            into: &chunked)
        #expect(
            String(buffer: chunked)
                == "HTTP/1.0 201 \r\ncontent-type: text/plain\r\nX-Request-Id: gw-2\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            "re-framed: the backend's content-length is dropped"
        )
    }

    @Test func anHTTP2ClientGetsTheFieldsWithTheBackendsNeverIndexedMarksAndTheSecretsNeverIndexed() throws {
        let head = try #require(
            HTTP2ResponseHead(
                self.block(
                    [(":status", "200"), ("x-private", "p"), ("content-type", "text/plain"), ("set-cookie", "s=1")],
                    neverIndexed: ["x-private"]),
                method: .GET
            )
        )
        var texts = FieldTextCache()
        let headers = HTTP2Messages.responseHeaders(
            .http2(head), requestID: "gw-1", extra: [("X-Access-Token", "new")],
            secrets: SecretHeaderNames(configured: ["X-Access-Token"]), texts: &texts)
        let indexing = Dictionary(headers.map { ($0.name, $0.indexable) }, uniquingKeysWith: { first, _ in first })
        #expect(
            headers.map(\.name) == [
                ":status", "x-private", "content-type", "set-cookie", "x-request-id", "x-access-token",
            ])
        #expect(indexing["x-private"] == .neverIndexed, "the backend marked it")
        #expect(indexing["set-cookie"] == .neverIndexed, "a secret")
        #expect(indexing["x-access-token"] == .neverIndexed, "a secret")
        #expect(indexing["content-type"] == .indexable)
        #expect(indexing["x-request-id"] == .nonIndexable)
    }
}
