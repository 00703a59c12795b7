import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Backend responses the echo backend does not produce: written byte for byte by a scripted
/// backend, read byte for byte by a raw client.
@Suite("Backend responses on the wire (raw sockets)", .awaitsCleanups)
struct UpstreamResponseTests {
    private func exchange(
        _ script: [ScriptedBackend.Step],
        request: (String) -> String = { "GET /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \($0)\r\n\r\n" }
    ) async throws -> (raw: RawConnection, gateway: GatewayFixture, backend: ScriptedBackend) {
        let backend = try await ScriptedBackend.start(script)
        let gateway = try await GatewayFixture.start { config in
            // The default response timeout (30 s): no test here waits for it, and a 5 s one
            // turned answers into 504s on a loaded 2-core machine.
            config["backends"] = ["api": ["urls": [.string(backend.baseURL)]]]
        }
        let raw = try await gateway.raw()
        try await raw.send(request(TestKeys.token()))
        return (raw, gateway, backend)
    }

    @Test func aResponseHeadReachesTheClientBeforeASlowBody() async throws {
        // The backend sends its body only once the client has the head.
        let body = Latch()
        let (raw, gateway, backend) = try await exchange([
            .send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Stream: 1\r\n\r\n"),
            .until(body),
            .send("5\r\nhello\r\n0\r\n\r\n"),
        ])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        #expect(await raw.waitFor { $0.contains("X-Stream: 1") }, "head not forwarded before the body")
        #expect(!raw.received.contains("hello"))
        body.open()
        #expect(await raw.waitFor { $0.hasSuffix("5\r\nhello\r\n0\r\n\r\n") })
        #expect(raw.received.contains("Transfer-Encoding: chunked\r\n"))
    }

    @Test func interimResponsesAreNotForwarded() async throws {
        let (raw, gateway, backend) = try await exchange([
            .send("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"),
            .send("HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"),
        ])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        #expect(await raw.waitFor { $0.hasSuffix("\r\n\r\nok") })
        #expect(raw.firstStatus == 201)
        #expect(!raw.received.contains("Continue") && !raw.received.contains("Early"))
    }

    @Test func aCloseDelimitedBodyIsChunkedForHTTP11AndCloseDelimitedForHTTP10() async throws {
        let script: [ScriptedBackend.Step] = [
            .send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"), .close,
        ]
        let (raw, gateway, backend) = try await exchange(script)
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        #expect(await raw.waitFor { $0.hasSuffix("0\r\n\r\n") })
        #expect(raw.received.contains("Transfer-Encoding: chunked\r\n"))
        #expect(raw.received.contains("d\r\nuntil the end\r\n"))
        #expect(!raw.isClosed, "an HTTP/1.1 client keeps its connection")

        let (old, gateway10, backend10) = try await exchange(script) {
            "GET /x HTTP/1.0\r\nAuthorization: Bearer \($0)\r\n\r\n"
        }
        atTestEnd {
            await gateway10.stop(); await backend10.close()
        }
        #expect(await old.waitForClose())
        #expect(old.received.hasPrefix("HTTP/1.0 200 OK\r\n"))
        #expect(old.received.hasSuffix("\r\n\r\nuntil the end"))
        #expect(!old.received.contains("Transfer-Encoding"))
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
        "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
        "SSH-2.0-OpenSSH_9.2\r\n\r\n",
    ])
    func anInvalidResponseIs502(_ response: String) async throws {
        let (raw, gateway, backend) = try await exchange([.send(response)])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        #expect(await raw.waitFor { $0.contains("\r\n\r\n{") })
        #expect(raw.firstStatus == 502)
        #expect(raw.received.contains("upstream.protocol_error"))
    }

    @Test func aCutShortBodyClosesTheClientConnection() async throws {
        let (raw, gateway, backend) = try await exchange([
            .send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), .close,
        ])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        #expect(await raw.waitForClose())
        #expect(raw.firstStatus == 200)
        #expect(raw.received.hasSuffix("\r\n\r\nabc"), "no more than the backend sent")
    }
}

/// A backend that answers every request head with a script of raw writes, waits and closes,
/// or turns into an echo server (a WebSocket peer that repeats every byte).
final class ScriptedBackend: Sendable {
    enum Step: Sendable {
        case send(String)
        case wait(milliseconds: Int64)
        /// Goes on once the test opens the latch.
        case until(Latch)
        case close
        /// From now on, every byte received is sent back.
        case echo
    }

    private let server: Channel
    private let heads: NIOLockedValueBox<[String]>

    private init(server: Channel, heads: NIOLockedValueBox<[String]>) {
        self.server = server
        self.heads = heads
    }

    var baseURL: String { "http://127.0.0.1:\(self.server.localAddress?.port ?? 0)" }

    /// The request heads received, as text.
    var requestHeads: [String] { self.heads.withLockedValue { $0 } }

    static func start(_ script: [Step]) async throws -> ScriptedBackend {
        let heads = NIOLockedValueBox<[String]>([])
        let server = try await ServerBootstrap(group: TestGroup.shared)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(script: script, heads: heads))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ScriptedBackend(server: server, heads: heads)
    }

    func close() async { try? await self.server.close() }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let script: [Step]
        let heads: NIOLockedValueBox<[String]>
        var received = ""
        var echoing = false

        init(script: [Step], heads: NIOLockedValueBox<[String]>) {
            self.script = script
            self.heads = heads
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = self.unwrapInboundIn(data)
            if self.echoing {
                context.writeAndFlush(self.wrapOutboundOut(bytes), promise: nil)
                return
            }
            self.received += String(buffer: bytes)
            guard let end = self.received.range(of: "\r\n\r\n") else { return }
            let head = String(self.received[..<end.upperBound])
            self.heads.withLockedValue { $0.append(head) }
            self.received = ""
            self.play(self.script[...], context: context)
        }

        private func play(_ steps: ArraySlice<Step>, context: ChannelHandlerContext) {
            guard let step = steps.first else { return }
            let rest = steps.dropFirst()
            switch step {
            case .send(let text):
                context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: text)), promise: nil)
                self.play(rest, context: context)
            case .wait(let milliseconds):
                context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(milliseconds)) {
                    self.play(rest, context: context)
                }
            case .until(let latch):
                latch.future(on: context.eventLoop).assumeIsolated().whenSuccess { self.play(rest, context: context) }
            case .close:
                context.close(promise: nil)
            case .echo:
                self.echoing = true
            }
        }
    }
}

@Suite("WebSocket upgrades (raw sockets)", .awaitsCleanups)
struct WebSocketTests {
    static let switching =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"

    static func upgrade(token: String?, protocolName: String = "websocket") -> String {
        let authorization = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        return
            "GET /chat HTTP/1.1\r\nHost: x\r\n\(authorization)Upgrade: \(protocolName)\r\nConnection: keep-alive, Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    }

    /// 3 s was seen to turn an immediate 101 into a 504 on a loaded 2-core machine.
    static let responseTimeoutMilliseconds = 8000

    private func start(_ script: [ScriptedBackend.Step]) async throws -> (GatewayFixture, ScriptedBackend) {
        let backend = try await ScriptedBackend.start(script)
        let gateway = try await GatewayFixture.start { config in
            // Long enough that a busy machine does not turn the 101 into a 504; the tunnel test
            // outlives it on purpose.
            config["backends"] = [
                "api": [
                    "urls": [.string(backend.baseURL)],
                    "responseTimeoutMilliseconds": .number(JSONNumber(Self.responseTimeoutMilliseconds)),
                ]
            ]
        }
        return (gateway, backend)
    }

    @Test func anAuthorizedUpgradeBecomesATunnelBothWays() async throws {
        let (gateway, backend) = try await start([.send(Self.switching), .echo])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        let raw = try await gateway.raw()
        try await raw.send(Self.upgrade(token: TestKeys.token()))
        #expect(await raw.waitFor { $0.contains("\r\n\r\n") })
        #expect(raw.firstStatus == 101)
        #expect(raw.received.contains("Upgrade: websocket\r\n") && raw.received.contains("Connection: upgrade\r\n"))
        #expect(raw.received.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        let head = try #require(backend.requestHeads.first)
        #expect(head.contains("Upgrade: websocket\r\n") && head.contains("Connection: upgrade\r\n"))
        #expect(head.contains("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"))
        // Bytes now flow unparsed, longer than the response timeout and in both directions.
        try await raw.send("\u{81}\u{05}frame one")
        #expect(await raw.waitFor { $0.hasSuffix("\u{81}\u{05}frame one") })
        try await Task.sleep(for: .milliseconds(Self.responseTimeoutMilliseconds + 100))
        try await raw.send("GET / HTTP/1.1\r\n\r\n")
        #expect(await raw.waitFor { $0.hasSuffix("GET / HTTP/1.1\r\n\r\n") }, "tunnel bytes are never parsed as HTTP")
        #expect(!raw.isClosed)
        await raw.close()
    }

    @Test func theBackendClosingTheTunnelClosesTheClientAfterItsLastBytes() async throws {
        let (gateway, backend) = try await start([.send(Self.switching + "last words"), .close])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        let raw = try await gateway.raw()
        try await raw.send(Self.upgrade(token: TestKeys.token()))
        #expect(await raw.waitForClose())
        #expect(raw.firstStatus == 101)
        #expect(raw.received.hasSuffix("\r\n\r\nlast words"))
    }

    @Test func anUpgradeWithoutAValidTokenIs401AndNeverReachesTheBackend() async throws {
        let (gateway, backend) = try await start([.send(Self.switching), .echo])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        let raw = try await gateway.raw()
        try await raw.send(Self.upgrade(token: nil))
        #expect(await raw.waitFor { $0.contains("\r\n\r\n{") })
        #expect(raw.firstStatus == 401)
        #expect(backend.requestHeads.isEmpty)
    }

    /// Any other upgrade (h2c) is ignored (docs/http2.md): an ordinary request, its `Upgrade`
    /// never forwarded, the connection kept.
    @Test func otherUpgradesAreIgnoredAndNotForwarded() async throws {
        let (gateway, backend) = try await start([.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        let raw = try await gateway.raw()
        try await raw.send(Self.upgrade(token: TestKeys.token(), protocolName: "h2c"))
        #expect(await raw.waitFor { $0.hasSuffix("\r\n\r\nok") })
        #expect(raw.firstStatus == 200)
        #expect(!raw.isClosed)
        // Field by field: the bearer token (random base64url) can hold "h2c" anywhere.
        let fields = try #require(backend.requestHeads.first).lowercased().split(separator: "\r\n").dropFirst()
        #expect(fields.count > 3)
        #expect(!fields.contains { $0.hasPrefix("upgrade:") })
        #expect(!fields.contains { $0.hasPrefix("connection:") && $0.contains("upgrade") })
        #expect(!fields.contains { $0.hasSuffix(" h2c") })
    }

    @Test func aRefusedUpgradeIsAnOrdinaryResponse() async throws {
        let (gateway, backend) = try await start([.send("HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno")])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        let raw = try await gateway.raw()
        try await raw.send(Self.upgrade(token: TestKeys.token()))
        #expect(await raw.waitFor { $0.hasSuffix("\r\n\r\nno") })
        #expect(raw.firstStatus == 403)
        #expect(!raw.received.contains("Upgrade:"))
        #expect(!raw.isClosed)
    }

    @Test func aBackendThatSwitchesProtocolsUnaskedIs502() async throws {
        let (gateway, backend) = try await start([.send(Self.switching)])
        atTestEnd {
            await gateway.stop(); await backend.close()
        }
        let raw = try await gateway.raw()
        try await raw.send("GET /plain HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(TestKeys.token())\r\n\r\n")
        #expect(await raw.waitFor { $0.contains("\r\n\r\n{") })
        #expect(raw.firstStatus == 502)
    }
}
