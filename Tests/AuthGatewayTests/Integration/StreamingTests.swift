import Crypto
import Foundation
import NIOCore
import Testing

import AuthGatewayDemo
@testable import AuthGateway

/// Bodies stream through the gateway in both directions with backpressure: 64 MiB pass
/// intact while memory grows by far less than the body (SPEC §4.5).
@Suite("Streaming bodies (real sockets)", .serialized)
struct StreamingTests {
    static let size = 64 * 1024 * 1024
    /// Allowed growth of this process's resident memory while 64 MiB pass through it (gateway,
    /// backend and client all live in the test process).
    static let memoryBudget = 24 * 1024 * 1024

    /// Samples resident memory while `work` runs; returns the work's result and the peak growth.
    static func measuringMemory<T: Sendable>(_ work: @Sendable () async throws -> T) async throws -> (T, Int) {
        let baseline = residentMemoryBytes()
        let sampler = Task {
            var peak = baseline
            while !Task.isCancelled {
                peak = max(peak, residentMemoryBytes())
                try? await Task.sleep(for: .milliseconds(20))
            }
            return peak
        }
        let result = try await work()
        sampler.cancel()
        let peak = max(await sampler.value, residentMemoryBytes())
        return (result, peak - baseline)
    }

    static func expectedSHA256(bytes: Int) -> String {
        var hasher = SHA256()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var offset = 0
        while offset < bytes {
            let size = min(chunk.count, bytes - offset)
            for index in 0..<size { chunk[index] = EchoBackend.patternByte(at: offset + index) }
            hasher.update(data: chunk[0..<size])
            offset += size
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    @Test func uploadOf64MiBStreamsIntact() async throws {
        let gateway = try await GatewayFixture.start()
        defer { Task { await gateway.stop() } }
        let expected = Self.expectedSHA256(bytes: Self.size)
        let client = try await gateway.connect()
        // Warm up allocator pools so the baseline is fair.
        _ = try await client.upload("/warmup", totalBytes: 1 << 20, headers: [("Authorization", "Bearer \(TestKeys.token())")])
        let (response, growth) = try await Self.measuringMemory {
            try await client.upload("/upload", totalBytes: Self.size, headers: [("Authorization", "Bearer \(TestKeys.token())")])
        }
        #expect(response.status == 200)
        #expect(response.json?["body"]?["bytes"]?.numberValue?.exactInt == Self.size)
        #expect(response.json?["body"]?["sha256"]?.stringValue == expected)
        #expect(growth < Self.memoryBudget, "resident memory grew by \(growth / 1024) KiB")
        await client.close()
    }

    /// A backend that answers an upload before reading it (nginx's `return`): the client gets
    /// the answer, the rest of the body still goes to the backend, and both connections stay
    /// usable (HAProxy's behaviour; resetting the client would break its upload).
    @Test func earlyResponseToAnUploadKeepsBothConnections() async throws {
        let gateway = try await GatewayFixture.start()
        defer { Task { await gateway.stop() } }
        let client = try await gateway.connect()
        let headers = [("Authorization", "Bearer \(TestKeys.token())")]
        for _ in 0..<3 {
            let early = try await client.upload("/early", totalBytes: 4 * 1024 * 1024, headers: headers)
            #expect(early.status == 200)
            #expect(early.text == "early\n")
        }
        let after = try await client.send(TestRequest(.POST, "/echo", headers: headers, body: "after"))
        #expect(after.status == 200)
        #expect(after.json?["body"]?["bytes"]?.numberValue?.exactInt == 5)
        #expect(gateway.backend.connectionCount == 1)
        await client.close()
    }

    @Test func downloadOf64MiBStreamsIntact() async throws {
        let gateway = try await GatewayFixture.start()
        defer { Task { await gateway.stop() } }
        let client = try await gateway.connect(countOnly: true)
        _ = try await client.send(.get("/bytes/1048576", token: TestKeys.token()))
        for chunked in [false, true] {
            let (response, growth) = try await Self.measuringMemory {
                try await client.send(.get("/bytes/\(Self.size)\(chunked ? "?chunked=1" : "")", token: TestKeys.token()), timeout: .seconds(120))
            }
            #expect(response.status == 200)
            #expect(response.bodyBytes == Self.size)
            #expect(response.patternMatched)
            #expect(growth < Self.memoryBudget, "resident memory grew by \(growth / 1024) KiB (chunked: \(chunked))")
        }
        await client.close()
    }
}
