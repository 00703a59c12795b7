import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// `HTTP2ServerConnection` driven frame by frame (swift-nio-http2's own tests are the model):
/// a real NIOHTTP2 client on one embedded channel, the gateway's pipeline on another, bytes
/// moved between them in memory; the backends are embedded HTTP/1.1 connections.
@Suite("HTTP/2 connection handler (frames, embedded channels)")
struct HTTP2ServerConnectionTests {
    static func configuration() -> String {
        """
        {"listener":{"host":"127.0.0.1","port":0},"eventLoopThreads":1,
         "tokens":{"issuers":[{"issuer":"\(TestKeys.issuer)","audiences":["\(TestKeys.audience)"],"leewaySeconds":0,
           "keys":[{"kid":"test-rs","algorithm":"RS256","publicKeyPEM":\(JSONValue.string(TestKeys.rsa.publicKeyPEM).jsonText)}]}]},
         "backends":{"api":{"urls":["http://10.0.0.1:8001"]},
                     "slow":{"urls":["http://10.0.0.2:8002"],"responseTimeoutMilliseconds":1000}},
         "routes":[{"name":"slow","pathPrefix":"/slow","backend":"slow"},{"name":"all","pathPrefix":"/","backend":"api"}],
         "logging":{"accessLog":false}}
        """
    }

    static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    /// A client connection: a NIOHTTP2 client handler whose frames are recorded.
    final class Peer {
        let gateway: EmbeddedGateway
        let client = EmbeddedChannel()
        let server: EmbeddedChannel
        let recorder = FrameRecorder()
        let token = TestKeys.token()

        init() throws {
            self.gateway = try EmbeddedGateway(
                configuration: HTTP2ServerConnectionTests.configuration(), clock: { Date().timeIntervalSince1970 })
            self.server = try self.gateway.connectClient()
            let client = EmbeddedChannel(loop: self.gateway.loop)
            // A client that sends what it is told, malformed or not: the gateway's side validates.
            try client.pipeline.syncOperations.addHandler(
                NIOHTTP2Handler(mode: .client, headerBlockValidation: .disabled, contentLengthValidation: .disabled))
            try client.pipeline.syncOperations.addHandler(self.recorder)
            try client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            self.clientChannel = client
            try self.interact()
        }

        private var clientChannel: EmbeddedChannel?
        private var clientSide: EmbeddedChannel { self.clientChannel! }

        /// The gateway's connection handler.
        var handler: HTTP2ServerConnection {
            get throws { try self.server.pipeline.syncOperations.handler(type: HTTP2ServerConnection.self) }
        }

        /// Moves bytes both ways until neither side has more to say.
        func interact() throws {
            var moved = true
            while moved {
                moved = false
                // Tasks the handlers queued (the flush at the end of a tick).
                self.gateway.loop.run()
                while let data = try self.clientSide.readOutbound(as: IOData.self) {
                    guard case .byteBuffer(let bytes) = data else { continue }
                    moved = true
                    try self.server.writeInbound(bytes)
                }
                while let data = try self.server.readOutbound(as: IOData.self) {
                    guard case .byteBuffer(let bytes) = data else { continue }
                    moved = true
                    try self.clientSide.writeInbound(bytes)
                }
            }
        }

        func send(_ stream: Int, _ payload: HTTP2Frame.FramePayload) throws {
            self.clientSide.writeAndFlush(HTTP2Frame(streamID: HTTP2StreamID(stream), payload: payload), promise: nil)
            try self.interact()
        }

        func request(
            _ stream: Int, _ method: String = "GET", _ path: String, extra: [(String, String)] = [],
            endStream: Bool = true
        ) throws {
            var headers = HPACKHeaders([
                (":method", method), (":path", path), (":scheme", "http"), (":authority", "gw"),
                ("authorization", "Bearer \(self.token)"),
            ])
            headers.add(contentsOf: extra)
            try self.send(stream, .headers(.init(headers: headers, endStream: endStream)))
        }

        /// What the backend connection `index` was sent, as text.
        func upstreamText(_ index: Int) throws -> String {
            var text = ""
            while let part = try self.gateway.upstreams[index].readOutbound(as: ByteBuffer.self) {
                text += String(buffer: part)
            }
            return text
        }

        func answer(_ index: Int, _ response: String = HTTP2ServerConnectionTests.ok) throws {
            try self.gateway.upstreams[index].writeInbound(ByteBuffer(string: response))
            try self.interact()
        }

        func frames(on stream: Int) -> [HTTP2Frame.FramePayload] {
            self.recorder.frames.filter { $0.streamID == HTTP2StreamID(stream) }.map(\.payload)
        }

        func status(on stream: Int) -> String? {
            for case .headers(let headers) in self.frames(on: stream) {
                if let status = headers.headers.first(name: ":status") { return status }
            }
            return nil
        }

        func body(on stream: Int) -> String {
            var body = ""
            for case .data(let data) in self.frames(on: stream) {
                if case .byteBuffer(let bytes) = data.data { body += String(buffer: bytes) }
            }
            return body
        }

        func ended(_ stream: Int) -> Bool {
            self.frames(on: stream).contains { payload in
                switch payload {
                case .headers(let headers): return headers.endStream
                case .data(let data): return data.endStream
                case .rstStream: return true
                default: return false
                }
            }
        }

        func windowUpdates(on stream: Int) -> [Int] {
            self.recorder.frames.compactMap { frame in
                guard frame.streamID == HTTP2StreamID(stream), case .windowUpdate(let increment) = frame.payload else {
                    return nil
                }
                return increment
            }
        }
    }

    final class FrameRecorder: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        var frames: [HTTP2Frame] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            self.frames.append(self.unwrapInboundIn(data))
        }
    }

    @Test func aStreamCarriesOneRequestAndLeavesNothingBehind() throws {
        let peer = try Peer()
        try peer.request(1, "GET", "/a?x=1")
        #expect(try peer.handler.openStreamCount == 1)
        let sent = try peer.upstreamText(0)
        #expect(sent.hasPrefix("GET /a?x=1 HTTP/1.1\r\n"), "\(sent)")
        #expect(sent.contains("X-Request-Id: "))
        try peer.answer(0)
        #expect(peer.status(on: 1) == "200")
        #expect(peer.body(on: 1) == "ok")
        #expect(peer.ended(1))
        #expect(try peer.handler.openStreamCount == 0, "the stream table forgets a finished stream")
    }

    /// The handler holds its own flush task (no weak reference: docs/benchmarks.md), so it must
    /// let go of it when it leaves the pipeline, or every connection would leak.
    @Test func aClosedConnectionsHandlerIsFreed() throws {
        weak var handler: HTTP2ServerConnection?
        do {
            let peer = try Peer()
            try peer.request(1, "GET", "/a")
            try peer.answer(0)
            #expect(peer.ended(1))
            handler = try peer.handler
            #expect(handler != nil)
            try peer.server.close().wait()
            peer.gateway.loop.run()
        }
        #expect(handler == nil, "nothing holds a closed connection's handler")
    }

    @Test func aBodyReadInOneGoIsOneDataFrameThatEndsTheStream() throws {
        let peer = try Peer()
        try peer.request(1, "GET", "/a")
        try peer.answer(0)
        let frames = peer.frames(on: 1)
        #expect(frames.count == 2, "HEADERS and one DATA, no empty DATA to end the stream: \(frames)")
        guard frames.count == 2, case .headers(let headers) = frames[0], case .data(let data) = frames[1] else {
            return
        }
        #expect(!headers.endStream)
        #expect(data.endStream)
        #expect(peer.body(on: 1) == "ok")
    }

    @Test func aStreamedBodyGoesOutAtTheEndOfEachBackendRead() throws {
        let peer = try Peer()
        try peer.request(1, "GET", "/stream")
        try peer.answer(0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        // The part is not held back for an end that has not come.
        #expect(peer.body(on: 1) == "hello")
        #expect(!peer.ended(1))
        try peer.answer(0, "6\r\n world\r\n")
        #expect(peer.body(on: 1) == "hello world")
        #expect(!peer.ended(1))
        try peer.answer(0, "0\r\n\r\n")
        #expect(peer.ended(1))
        #expect(peer.body(on: 1) == "hello world")
        #expect(try peer.handler.openStreamCount == 0)
    }

    @Test func streamsAreAnsweredInTheOrderTheirBackendsAnswer() throws {
        let peer = try Peer()
        try peer.request(1, "GET", "/first")
        try peer.request(3, "GET", "/second")
        #expect(peer.gateway.upstreams.count == 2)
        #expect(try peer.upstreamText(0).hasPrefix("GET /first "))
        #expect(try peer.upstreamText(1).hasPrefix("GET /second "))
        try peer.answer(1, "HTTP/1.1 201 Created\r\nContent-Length: 6\r\n\r\nsecond")
        #expect(peer.status(on: 3) == "201")
        #expect(peer.body(on: 3) == "second")
        #expect(peer.frames(on: 1).isEmpty, "the first stream still waits for its backend")
        try peer.answer(0)
        #expect(peer.body(on: 1) == "ok")
        #expect(try peer.handler.openStreamCount == 0)
    }

    @Test func aResetStreamDropsItsBackendConnectionAndNothingElse() throws {
        let peer = try Peer()
        try peer.request(1, "GET", "/first")
        try peer.request(3, "GET", "/second")
        try peer.send(1, .rstStream(.cancel))
        #expect(!peer.gateway.upstreams[0].isActive, "the abandoned request's backend connection is closed")
        #expect(peer.gateway.upstreams[1].isActive)
        #expect(try peer.handler.openStreamCount == 1)
        try peer.answer(1)
        #expect(peer.body(on: 3) == "ok")
        #expect(peer.frames(on: 1).isEmpty, "nothing is written on a reset stream")
    }

    @Test func anUploadsWindowIsWithheldWhileTheBackendCannotTakeMore() throws {
        let peer = try Peer()
        try peer.request(1, "POST", "/upload", extra: [("content-length", "200000")], endStream: false)
        let chunk = ByteBuffer(repeating: 0x61, count: 16_384)
        try peer.send(1, .data(.init(data: .byteBuffer(chunk))))
        #expect(peer.windowUpdates(on: 1).isEmpty, "under half the window: nothing given back yet")
        try peer.send(1, .data(.init(data: .byteBuffer(chunk))))
        #expect(peer.windowUpdates(on: 1) == [32_768], "half the window consumed: given back at once")
        #expect(peer.windowUpdates(on: 0) == [32_768], "the connection's window too")

        // The backend stops taking the body: the stream's window is no longer given back…
        let upstream = peer.gateway.upstreams[0]
        upstream.isWritable = false
        upstream.pipeline.fireChannelWritabilityChanged()
        try peer.send(1, .data(.init(data: .byteBuffer(chunk))))
        try peer.send(1, .data(.init(data: .byteBuffer(chunk))))
        #expect(peer.windowUpdates(on: 1) == [32_768], "withheld: the client may send one window more, then must wait")
        #expect(peer.windowUpdates(on: 0) == [32_768, 32_768], "the connection's window never waits for one stream")

        // …until it takes more again.
        upstream.isWritable = true
        upstream.pipeline.fireChannelWritabilityChanged()
        try peer.interact()
        #expect(peer.windowUpdates(on: 1) == [32_768, 32_768])
        let sent = try peer.upstreamText(0)
        #expect(sent.hasPrefix("POST /upload HTTP/1.1\r\n"))
        #expect(sent.hasSuffix(String(repeating: "a", count: 1000)), "the body went upstream")
    }

    @Test func requestTrailersEndAChunkedUploadToAnHTTP1Backend() throws {
        let peer = try Peer()
        try peer.request(1, "POST", "/t", endStream: false)
        try peer.send(1, .data(.init(data: .byteBuffer(ByteBuffer(string: "abc")))))
        try peer.send(1, .headers(.init(headers: HPACKHeaders([("x-checksum", "1")]), endStream: true)))
        let sent = try peer.upstreamText(0)
        #expect(sent.contains("Transfer-Encoding: chunked"), "\(sent)")
        #expect(sent.hasSuffix("\r\n\r\n3\r\nabc\r\n0\r\n\r\n"), "\(sent)")
        #expect(!sent.contains("x-checksum"), "an HTTP/1.1 backend gets no trailers")
    }

    @Test func aResponseTimeoutAnswers504OnThatStreamAlone() throws {
        let peer = try Peer()
        try peer.request(1, "GET", "/slow")
        try peer.request(3, "GET", "/fast")
        peer.gateway.loop.advanceTime(by: .milliseconds(999))
        try peer.interact()
        #expect(peer.frames(on: 1).isEmpty, "not yet: the slow backend has 1 s")
        peer.gateway.loop.advanceTime(by: .milliseconds(2))
        try peer.interact()
        #expect(peer.status(on: 1) == "504")
        #expect(peer.ended(1))
        #expect(!peer.gateway.upstreams[0].isActive, "the timed-out backend connection is dropped")
        #expect(peer.frames(on: 3).isEmpty, "the other stream's backend has 30 s")
        try peer.answer(1)
        #expect(peer.status(on: 3) == "200")
        #expect(try peer.handler.openStreamCount == 0)
    }

    @Test func aConnectionWithoutStreamsForIdleSecondsIsClosedWithGoAway() throws {
        let peer = try Peer()
        try peer.request(1, "GET", "/a")
        // Not idle while a stream is open, however long its backend takes (under 30 s).
        peer.gateway.loop.advanceTime(by: .seconds(29))
        try peer.interact()
        #expect(peer.server.isActive)
        try peer.answer(0)
        #expect(peer.status(on: 1) == "200")
        // Idle from the last stream's end: closed 60 s (idleSeconds) later, not before.
        peer.gateway.loop.advanceTime(by: .seconds(59))
        try peer.interact()
        #expect(peer.server.isActive)
        peer.gateway.loop.advanceTime(by: .seconds(2))
        try peer.interact()
        let goAway = peer.recorder.frames.compactMap { frame -> HTTP2StreamID? in
            if case .goAway(let last, .noError, _) = frame.payload { return last } else { return nil }
        }
        #expect(goAway == [HTTP2StreamID(1)], "GOAWAY names the last stream served")
        #expect(!peer.server.isActive)
    }

    @Test func drainingSendsGoAwayAndFinishesTheStreamInFlight() throws {
        let peer = try Peer()
        try peer.request(1, "GET", "/a")
        peer.server.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        try peer.interact()
        let goAways = peer.recorder.frames.filter { if case .goAway = $0.payload { return true } else { return false } }
        #expect(!goAways.isEmpty, "the client is told to open no more streams")
        #expect(peer.server.isActive, "the stream in flight keeps the connection open")
        try peer.answer(0)
        #expect(peer.status(on: 1) == "200")
        #expect(peer.body(on: 1) == "ok")
    }

    @Test func aMalformedRequestIsRefusedOnItsStreamAndTheConnectionGoesOn() throws {
        let peer = try Peer()
        // No :path: NIOHTTP2's header validation resets the stream; the gateway never sees it.
        try peer.send(
            1,
            .headers(
                .init(
                    headers: HPACKHeaders([(":method", "GET"), (":scheme", "http"), (":authority", "gw")]),
                    endStream: true)))
        #expect(peer.frames(on: 1).contains { if case .rstStream = $0 { return true } else { return false } })
        #expect(try peer.handler.openStreamCount == 0)
        try peer.request(3, "GET", "/after")
        try peer.answer(0)
        #expect(peer.status(on: 3) == "200")
    }

    /// An answer to an upload still under way, the gateway's own or a backend's early one: the
    /// whole answer, then RST_STREAM NO_ERROR (RFC 9113 §8.1). The reset waits until the
    /// answer's last frame has been written: NIOHTTP2 drops the DATA it still holds for a
    /// stream that closes.
    @Test func anAnswerToAnUnfinishedUploadIsWholeBeforeTheReset() throws {
        let peer = try Peer()
        // No token: the gateway's own 401 and its problem document.
        try peer.send(
            1,
            .headers(
                .init(
                    headers: HPACKHeaders([
                        (":method", "POST"), (":path", "/upload"), (":scheme", "http"), (":authority", "gw"),
                        ("content-length", "100"),
                    ]),
                    endStream: false)))
        // A backend's answer before the upload's end.
        try peer.request(3, "POST", "/early", extra: [("content-length", "100")], endStream: false)
        try peer.send(3, .data(.init(data: .byteBuffer(ByteBuffer(string: "first")), endStream: false)))
        try peer.answer(0)
        for stream in [1, 3] {
            let frames = peer.frames(on: stream)
            #expect(frames.count == 3, "HEADERS, DATA with END_STREAM, RST_STREAM: \(frames)")
            guard frames.count == 3, case .headers(let headers) = frames[0], case .data(let data) = frames[1],
                case .rstStream(let code) = frames[2]
            else { continue }
            #expect(!headers.endStream)
            #expect(data.endStream)
            #expect(code == .noError)
        }
        #expect(peer.status(on: 1) == "401")
        #expect(peer.body(on: 1).contains("token.missing"), "\(peer.body(on: 1))")
        #expect(peer.status(on: 3) == "200")
        #expect(peer.body(on: 3) == "ok")
        #expect(try peer.handler.openStreamCount == 0)
    }

    @Test func aBodyThatOverrunsItsContentLengthIsRefused() throws {
        let peer = try Peer()
        try peer.request(1, "POST", "/p", extra: [("content-length", "2")], endStream: false)
        try peer.send(1, .data(.init(data: .byteBuffer(ByteBuffer(string: "abc")), endStream: true)))
        #expect(peer.ended(1))
        #expect(peer.status(on: 1) != "200")
        #expect(try peer.handler.openStreamCount == 0)
    }
}

@Suite("Benchmark harness: a whole HTTP/2 stream")
struct WholeHTTP2StreamTests {
    /// The micro benchmark's harness keeps working stream after stream (more than a 64 KiB
    /// connection window of responses), so its numbers measure served streams: each run gets
    /// the response's HEADERS (9-byte frame header and a block) and its 100 body bytes.
    @Test func theHarnessServesStreamAfterStream() throws {
        let configuration = HTTP2ServerConnectionTests.configuration()
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + String(repeating: "x", count: 100)
        let harness = try GatewayBenchmarkSupport.WholeHTTP2Stream(
            configuration: configuration, token: TestKeys.token(), response: response, now: Date().timeIntervalSince1970
        )
        var sizes: [Int] = []
        for _ in 0..<1_000 { sizes.append(try harness.run()) }
        // HEADERS (9 + block), DATA (9 + 100), the empty DATA with END_STREAM (9).
        #expect(sizes.allSatisfy { $0 > 9 + 9 + 100 + 9 }, "\(Set(sizes))")
        #expect(sizes.allSatisfy { $0 < 400 }, "\(Set(sizes))")
    }
}
