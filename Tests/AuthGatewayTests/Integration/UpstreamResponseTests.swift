import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import AuthGateway

/// Backend responses the echo backend does not produce: written byte for byte by a scripted
/// backend, read byte for byte by a raw client.
@Suite("Backend responses on the wire (raw sockets)")
struct UpstreamResponseTests {
    private func exchange(
        _ script: [ScriptedBackend.Step],
        request: (String) -> String = { "GET /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \($0)\r\n\r\n" }
    ) async throws -> (raw: RawConnection, gateway: GatewayFixture, backend: ScriptedBackend) {
        let backend = try await ScriptedBackend.start(script)
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = ["api": ["urls": [.string(backend.baseURL)], "responseTimeoutMilliseconds": 2000]]
        }
        let raw = try await gateway.raw()
        try await raw.send(request(TestKeys.token()))
        return (raw, gateway, backend)
    }

    @Test func aResponseHeadReachesTheClientBeforeASlowBody() async throws {
        let (raw, gateway, backend) = try await exchange([
            .send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Stream: 1\r\n\r\n"),
            .wait(milliseconds: 600),
            .send("5\r\nhello\r\n0\r\n\r\n"),
        ])
        defer { Task { await gateway.stop(); await backend.close() } }
        #expect(await raw.waitFor(timeout: .milliseconds(400)) { $0.contains("X-Stream: 1") }, "head not forwarded before the body")
        #expect(!raw.received.contains("hello"))
        #expect(await raw.waitFor { $0.hasSuffix("5\r\nhello\r\n0\r\n\r\n") })
        #expect(raw.received.contains("Transfer-Encoding: chunked\r\n"))
    }

    @Test func interimResponsesAreNotForwarded() async throws {
        let (raw, gateway, backend) = try await exchange([
            .send("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"),
            .send("HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"),
        ])
        defer { Task { await gateway.stop(); await backend.close() } }
        #expect(await raw.waitFor { $0.hasSuffix("\r\n\r\nok") })
        #expect(raw.firstStatus == 201)
        #expect(!raw.received.contains("Continue") && !raw.received.contains("Early"))
    }

    @Test func aCloseDelimitedBodyIsChunkedForHTTP11AndCloseDelimitedForHTTP10() async throws {
        let script: [ScriptedBackend.Step] = [.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"), .close]
        let (raw, gateway, backend) = try await exchange(script)
        defer { Task { await gateway.stop(); await backend.close() } }
        #expect(await raw.waitFor { $0.hasSuffix("0\r\n\r\n") })
        #expect(raw.received.contains("Transfer-Encoding: chunked\r\n"))
        #expect(raw.received.contains("d\r\nuntil the end\r\n"))
        #expect(!raw.isClosed, "an HTTP/1.1 client keeps its connection")

        let (old, gateway10, backend10) = try await exchange(script) { "GET /x HTTP/1.0\r\nAuthorization: Bearer \($0)\r\n\r\n" }
        defer { Task { await gateway10.stop(); await backend10.close() } }
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
        defer { Task { await gateway.stop(); await backend.close() } }
        #expect(await raw.waitFor { $0.contains("\r\n\r\n{") })
        #expect(raw.firstStatus == 502)
        #expect(raw.received.contains("upstream.protocol_error"))
    }

    @Test func aCutShortBodyClosesTheClientConnection() async throws {
        let (raw, gateway, backend) = try await exchange([.send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), .close])
        defer { Task { await gateway.stop(); await backend.close() } }
        #expect(await raw.waitForClose())
        #expect(raw.firstStatus == 200)
        #expect(raw.received.hasSuffix("\r\n\r\nabc"), "no more than the backend sent")
    }
}

/// A backend that answers every request head with a script of raw writes, waits and closes.
final class ScriptedBackend: Sendable {
    enum Step: Sendable {
        case send(String)
        case wait(milliseconds: Int64)
        case close
    }

    private let server: Channel

    private init(server: Channel) { self.server = server }

    var baseURL: String { "http://127.0.0.1:\(self.server.localAddress?.port ?? 0)" }

    static func start(_ script: [Step]) async throws -> ScriptedBackend {
        let server = try await ServerBootstrap(group: TestGroup.shared)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Handler(script: script)) }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ScriptedBackend(server: server)
    }

    func close() async { try? await self.server.close() }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let script: [Step]
        var received = ""

        init(script: [Step]) { self.script = script }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            self.received += String(buffer: self.unwrapInboundIn(data))
            guard self.received.contains("\r\n\r\n") else { return }
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
                context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(milliseconds)) { self.play(rest, context: context) }
            case .close:
                context.close(promise: nil)
            }
        }
    }
}
