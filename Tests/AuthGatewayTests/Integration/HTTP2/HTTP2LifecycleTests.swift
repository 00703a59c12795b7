import Foundation
import NIOCore
import NIOHTTP2
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// HTTP/2 connections through drain and under a slow reader.
@Suite("HTTP/2 drain and backpressure (real sockets)", .awaitsCleanups)
struct HTTP2LifecycleTests {
    /// SIGTERM's drain: an HTTP/2 client gets GOAWAY, its stream in flight finishes, then the
    /// connection closes.
    @Test func drainSendsGoAwayAndLetsTheStreamInFlightFinish() async throws {
        let gateway = try await GatewayFixture.start { config in config.set("timeouts.drainSeconds", 30) }
        atTestEnd { await gateway.stop() }
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        let token = TestKeys.token()
        async let slow = client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(path: "/delay/600", fields: [("authorization", "Bearer \(token)")]),
                    endStream: true))
        ])
        try await poll { gateway.backend.requestCount == 1 }
        async let drained: Void = gateway.application.drain()
        try await poll { client.goAwayReceived }
        let result = try await slow
        #expect(result.status == 200, "\(result.frames) \(client.connectionLevelFrames)")
        #expect(result.body.readableBytes > 0)
        await drained
        try await poll { !client.isActive }
    }

    /// A client that reads slowly holds the backend back by HTTP/2 flow control: a 64 MiB
    /// download through a gateway whose client window is exhausted does not grow the gateway.
    /// What counts is the worst moment, not the end: the gateway's peak resident memory during
    /// the download (its `VmHWM`, reset just before) against the memory it had before.
    @Test func aSlowHTTP2ReaderDoesNotGrowTheGateway() async throws {
        let (gateway, backend, port) = try await StreamingTests.serve()
        atTestEnd {
            gateway.kill()
            _ = try? await gateway.waitForExit(timeout: .seconds(10))
            await backend.close()
        }
        let token = TestKeys.token()
        @Sendable func download(_ bytes: Int, rate: [String]) async throws -> ExternalTool.Result {
            try await HTTP2ClientTests.curl(
                ["--http2-prior-knowledge"] + rate + [
                    "-o", "/dev/null", "-w", "%{size_download}", "-H", "Authorization: Bearer \(token)",
                    "http://127.0.0.1:\(port)/bytes/\(bytes)",
                ])
        }
        // A first HTTP/2 exchange sets up what every later one reuses (connection state, the
        // upstream pool, allocator pools), so that the baseline is fair.
        let warmUp = try await download(1 << 20, rate: [])
        #expect(warmUp.stdout == "1048576", "\(warmUp.stderr)")
        // curl at 16 MiB/s: the 64 MiB body takes ~4 s while the backend could send it at once.
        let (result, growth) = try await StreamingTests.measuringMemory(of: gateway) {
            try await download(67_108_864, rate: ["--limit-rate", "16M"])
        }
        #expect(result.stdout == "67108864", "\(result.stderr)")
        #expect(growth < StreamingTests.memoryBudget, "the peak grew by \(growth >> 10) KiB")
    }
}
