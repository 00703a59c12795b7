import NIOCore
import NIOHTTP1
import Testing

@testable import AuthGateway

@Suite("UpstreamRequestHead")
struct UpstreamRequestHeadTests {
    /// A forwarded request's head as the planner leaves it: the client's fields and a rewrite.
    private static func forwarded(
        _ fields: [(String, String)], connection: ClientConnectionInfo? = nil, framing: BodyFraming = .none,
        tokenEdits: [TokenEdit] = [], trace: [(name: String, value: String)] = [], host: String? = nil,
        upgrade: String? = nil
    ) -> UpstreamRequestHead {
        UpstreamRequestHead(
            method: .GET, uri: "/api/x?y=1", clientFields: HTTPHeaders(fields),
            rewrite: HeaderRewrite(
                framing: framing, policy: HeaderRewriterTests.policy,
                connection: connection
                    ?? ClientConnectionInfo(peerIP: "203.0.113.7", peerIsTrustedProxy: false, isTLS: false),
                requestID: "req-1", identity: [("X-User-Subject", "user-42")], tokenEdits: tokenEdits,
                traceContext: trace, stripDPoPProof: true, host: host,
                // As the planner gives it: the canonical host of the client's `Host`.
                forwardedHost: fields.first { $0.0 == "Host" }.flatMap { try? CanonicalHost.make($0.1[...]).name },
                upgrade: upgrade))
    }

    @Test("a forwarded head is written in one pass, field for field what its header list says")
    func forwardedHeadInOnePass() {
        let token = String(repeating: "t", count: 700)
        let client: [(String, String)] = [
            ("Host", "api.example.com"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"),
            ("Authorization", "Bearer \(token)"), ("X-User-Subject", "forged"), ("DPoP", "proof"),
            ("X-Forwarded-For", "198.51.100.1"), ("Cookie", "theme=dark; gateway-session=abc"),
            ("traceparent", "00-client"), ("Accept", "*/*"),
        ]
        let heads = [
            Self.forwarded(client),
            Self.forwarded(
                client, connection: ClientConnectionInfo(peerIP: "10.1.2.3", peerIsTrustedProxy: true, isTLS: true),
                framing: .chunked,
                tokenEdits: [TokenEdit(location: .header(name: "Authorization", bearer: true), replacement: "fresh")],
                trace: [("traceparent", "00-gateway")], host: "routed.example", upgrade: "websocket"),
            Self.forwarded(
                client,
                tokenEdits: [
                    TokenEdit(
                        location: .session(TokenDigest(of: "abc"[...])),
                        replacement: "Bearer \(String(repeating: "s", count: 900))")
                ]),
            UpstreamRequestHead(HTTPRequestHead(version: .http1_0, method: .DELETE, uri: "*", headers: [:])),
        ]
        for head in heads {
            var onePass = ByteBuffer()
            HTTPWriter.requestHead(head, into: &onePass)
            // The same head through NIO's type (an HTTP/2 backend's route), written as it is.
            var viaList = ByteBuffer()
            HTTPWriter.requestHead(UpstreamRequestHead(head.httpRequestHead), into: &viaList)
            #expect(String(buffer: onePass) == String(buffer: viaList))
            // Sized once: the estimate covers the head (a longer one would only grow its buffer).
            #expect(head.estimatedBytes >= onePass.readableBytes)
        }
        var buffer = ByteBuffer()
        HTTPWriter.requestHead(heads[1], into: &buffer)
        #expect(
            String(buffer: buffer)
                == "GET /api/x?y=1 HTTP/1.1\r\nAuthorization: Bearer fresh\r\nCookie: theme=dark; gateway-session=abc\r\nAccept: */*\r\n"
                + "X-Forwarded-For: 198.51.100.1, 10.1.2.3\r\nX-Forwarded-Proto: https\r\n"
                + "X-Forwarded-Host: api.example.com\r\nX-Request-Id: req-1\r\nX-User-Subject: user-42\r\n"
                + "traceparent: 00-gateway\r\nTransfer-Encoding: chunked\r\nHost: routed.example\r\n"
                + "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n")
    }

    @Test("a head longer than its estimate is written whole, the same bytes, after what the buffer held")
    func headBeyondItsEstimate() {
        // The rewrite repeats a long `Host` as `X-Forwarded-Host`: more than the estimate foresees,
        // and more than the memory reserved from it (rounded up to a power of two).
        let host = String(repeating: "h", count: 3000)
        let head = Self.forwarded([("Host", host), ("Accept", "*/*")])
        var expected = ByteBuffer()
        for (name, value) in head.httpRequestHead.headers { expected.writeString("\(name): \(value)\r\n") }
        var beyond = ByteBuffer()
        beyond.writeString("previous|")
        HTTPWriter.requestHead(head, into: &beyond)
        let written = String(buffer: beyond)
        #expect(head.estimatedBytes < beyond.readableBytes - 9)
        #expect(written == "previous|GET /api/x?y=1 HTTP/1.1\r\n" + String(buffer: expected) + "\r\n")
        #expect(written.contains("X-Forwarded-Host: \(host)\r\n"))
        // A caller's estimate far too small: the same bytes again.
        var tiny = ByteBuffer()
        HTTPWriter.requestHead(head, estimatedBytes: 1, into: &tiny)
        #expect(String(buffer: tiny) == String(buffer: beyond).dropFirst(9))
    }
}
