import Foundation
import NIOCore
import NIOEmbedded
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// `HTTP1ServerConnection` running its actions, with embedded channels on both sides (the shape of
/// AsyncHTTPClient's `HTTP1ClientChannelHandlerTests`): every byte the client and the backend
/// see is checked, no sockets.
@Suite("HTTP1ServerConnection (embedded channels)")
struct HTTP1ServerConnectionTests {
    static func configuration(urls: [String] = ["http://10.0.0.1:8001"], routes: String? = nil) -> String {
        """
        {"listener":{"host":"127.0.0.1","port":0},"eventLoopThreads":1,
         "tokens":{"issuers":[{"issuer":"\(TestKeys.issuer)","audiences":["\(TestKeys.audience)"],"leewaySeconds":0,
           "keys":[{"kid":"test-rs","algorithm":"RS256","publicKeyPEM":\(JSONValue.string(TestKeys.rsa.publicKeyPEM).jsonText)}]}]},
         "backends":{"api":{"urls":\(JSONValue.array(urls.map { .string($0) }).jsonText)}},
         "routes":\(routes ?? #"[{"name":"all","pathPrefix":"/","backend":"api"}]"#),
         "logging":{"accessLog":false}}
        """
    }

    let token = TestKeys.token()

    private func get(_ path: String, version: String = "HTTP/1.1", extra: String = "") -> String {
        "GET \(path) \(version)\r\nHost: gw\r\nAuthorization: Bearer \(self.token)\r\n\(extra)\r\n"
    }

    private static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    /// Everything the channel wrote so far, as text.
    private static func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let part = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: part) }
        return text
    }

    @Test("a GET is forwarded with the gateway's headers; the response comes back; the upstream connection is reused")
    func forwardAndReuse() throws {
        let gateway = try EmbeddedGateway(configuration: Self.configuration(), clock: { Date().timeIntervalSince1970 })
        let client = try gateway.connectClient(peer: "192.0.2.7")
        try client.writeInbound(ByteBuffer(string: self.get("/a?x=1")))
        let upstream = try #require(gateway.upstreams.first)
        let sent = try Self.written(upstream)
        #expect(sent.hasPrefix("GET /a?x=1 HTTP/1.1\r\n"))
        #expect(sent.contains("X-Forwarded-For: 192.0.2.7\r\n"))
        #expect(sent.contains("X-Request-Id: "))
        try upstream.writeInbound(ByteBuffer(string: Self.ok))
        let answer = try Self.written(client)
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(answer.hasSuffix("\r\n\r\nok"))
        #expect(answer.contains("X-Request-Id: "))

        try client.writeInbound(ByteBuffer(string: self.get("/b")))
        #expect(gateway.upstreams.count == 1)
        #expect(try Self.written(upstream).hasPrefix("GET /b HTTP/1.1\r\n"))
    }

    @Test("round robin per request: one keep-alive client alternates between the backend's URLs")
    func roundRobin() throws {
        let gateway = try EmbeddedGateway(
            configuration: Self.configuration(urls: ["http://10.0.0.1:8001", "http://10.0.0.2:8002"]),
            clock: { Date().timeIntervalSince1970 })
        let client = try gateway.connectClient()
        var reached: [String] = []
        for index in 0..<6 {
            try client.writeInbound(ByteBuffer(string: self.get("/\(index)")))
            let upstream = try #require(gateway.upstreams.first { (try? $0.readOutbound(as: ByteBuffer.self)) != nil })
            let position = try #require(gateway.upstreams.firstIndex { $0 === upstream })
            reached.append(gateway.upstreamTargets[position])
            try upstream.writeInbound(ByteBuffer(string: Self.ok))
            _ = try Self.written(client)
        }
        #expect(
            reached == [
                "10.0.0.1:8001", "10.0.0.2:8002", "10.0.0.1:8001", "10.0.0.2:8002", "10.0.0.1:8001", "10.0.0.2:8002",
            ])
        #expect(gateway.upstreams.count == 2)
    }

    @Test("a pipelined request waits until the response in flight has ended")
    func pipelining() throws {
        let gateway = try EmbeddedGateway(configuration: Self.configuration(), clock: { Date().timeIntervalSince1970 })
        let client = try gateway.connectClient()
        try client.writeInbound(ByteBuffer(string: self.get("/first") + self.get("/second")))
        let upstream = try #require(gateway.upstreams.first)
        let firstSent = try Self.written(upstream)
        #expect(firstSent.hasPrefix("GET /first "))
        #expect(!firstSent.contains("/second"))
        try upstream.writeInbound(ByteBuffer(string: Self.ok))
        #expect(try Self.written(upstream).hasPrefix("GET /second "))
        try upstream.writeInbound(ByteBuffer(string: Self.ok))
        let answers = try Self.written(client)
        #expect(answers.components(separatedBy: "HTTP/1.1 200 OK").count == 3)
    }

    @Test("a refused request is answered locally and opens no upstream connection")
    func refusedLocally() throws {
        let gateway = try EmbeddedGateway(configuration: Self.configuration(), clock: { Date().timeIntervalSince1970 })
        let client = try gateway.connectClient()
        try client.writeInbound(ByteBuffer(string: "GET /x HTTP/1.1\r\nHost: gw\r\n\r\n"))
        let answer = try Self.written(client)
        #expect(answer.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"))
        #expect(answer.contains("WWW-Authenticate: Bearer realm=\"auth-gateway\""))
        #expect(gateway.upstreams.isEmpty)
        #expect(client.isActive)
    }

    @Test("ambiguous framing is refused with 400 and the connection closed, never forwarded")
    func ambiguousFraming() throws {
        let gateway = try EmbeddedGateway(configuration: Self.configuration(), clock: { Date().timeIntervalSince1970 })
        let client = try gateway.connectClient()
        let smuggle =
            "POST /x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer \(self.token)\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        try client.writeInbound(ByteBuffer(string: smuggle))
        #expect(try Self.written(client).hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(!client.isActive)
        #expect(gateway.upstreams.isEmpty)
    }

    @Test("the backend closing before its response is a 502 and closes the client")
    func upstreamDiesBeforeAnswering() throws {
        let gateway = try EmbeddedGateway(configuration: Self.configuration(), clock: { Date().timeIntervalSince1970 })
        let client = try gateway.connectClient()
        // A POST is not replayed on another connection.
        try client.writeInbound(
            ByteBuffer(
                string:
                    "POST /x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer \(self.token)\r\nContent-Length: 2\r\n\r\nhi"
            ))
        let upstream = try #require(gateway.upstreams.first)
        _ = try Self.written(upstream)
        upstream.pipeline.fireChannelInactive()
        #expect(try Self.written(client).hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(!client.isActive)
    }

    @Test("the client leaving mid-request closes the upstream connection instead of reusing it")
    func clientLeaves() throws {
        let gateway = try EmbeddedGateway(configuration: Self.configuration(), clock: { Date().timeIntervalSince1970 })
        let client = try gateway.connectClient()
        try client.writeInbound(ByteBuffer(string: self.get("/slow")))
        let upstream = try #require(gateway.upstreams.first)
        try client.close().wait()
        #expect(!upstream.isActive)
    }

    @Test("draining closes an idle connection, and makes the answer in flight the last")
    func drain() throws {
        let gateway = try EmbeddedGateway(configuration: Self.configuration(), clock: { Date().timeIntervalSince1970 })
        let idle = try gateway.connectClient()
        idle.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(!idle.isActive)

        let busy = try gateway.connectClient(port: 40001)
        try busy.writeInbound(ByteBuffer(string: self.get("/in-flight")))
        busy.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(busy.isActive)
        let upstream = try #require(gateway.upstreams.first)
        try upstream.writeInbound(ByteBuffer(string: Self.ok))
        let answer = try Self.written(busy)
        #expect(answer.contains("Connection: close\r\n"))
        #expect(!busy.isActive)
    }

    @Test("a chunked response goes to an HTTP/1.0 client delimited by the connection's close")
    func chunkedToHTTP10() throws {
        let gateway = try EmbeddedGateway(configuration: Self.configuration(), clock: { Date().timeIntervalSince1970 })
        let client = try gateway.connectClient()
        try client.writeInbound(
            ByteBuffer(string: self.get("/old", version: "HTTP/1.0", extra: "Connection: keep-alive\r\n")))
        let upstream = try #require(gateway.upstreams.first)
        try upstream.writeInbound(
            ByteBuffer(string: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"))
        let answer = try Self.written(client)
        #expect(answer.hasPrefix("HTTP/1.0 200 OK\r\n"))
        #expect(!answer.contains("Transfer-Encoding"))
        #expect(answer.contains("Connection: close\r\n"))
        #expect(answer.hasSuffix("\r\n\r\nhello"))
        #expect(!client.isActive)
    }
}
