import Crypto
import Foundation
import NIOCore
import NIOPosix
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Bodies stream through the gateway in both directions with backpressure: 64 MiB pass
/// intact while the gateway's memory grows by far less than the body (docs/forwarding.md). The
/// memory is that of a `serve` subprocess (its `/proc/<pid>/status` VmRSS), so the test's own
/// client, backend and other tests running beside it do not count.
@Suite("Streaming bodies (real sockets)", .serialized, .timeLimit(.minutes(5)), .awaitsCleanups)
struct StreamingTests {
    static let size = 64 * 1024 * 1024
    /// Allowed growth of the gateway process's resident memory while 64 MiB pass through it.
    static let memoryBudget = 16 * 1024 * 1024

    /// Measures the gateway process's peak resident memory while `work` runs; returns the
    /// work's result and the peak's growth over the baseline taken just before. The peak is
    /// the kernel's own high-water mark (`VmHWM`, reset at the baseline), which no spike can
    /// slip past, and also `VmRSS` sampled every 10 ms (all there is where the kernel does not
    /// let the mark be reset). Fails when the memory cannot be read.
    static func measuringMemory<T: Sendable>(
        of gateway: RunningGateway, _ work: @Sendable () async throws -> T
    ) async throws -> (T, Int) {
        let baseline = try gateway.residentMemoryBytes()
        let markReset = (try? gateway.resetPeakResidentMemory()) != nil
        let sampler = Task { () throws -> Int in
            var peak = baseline
            while !Task.isCancelled {
                peak = max(peak, try gateway.residentMemoryBytes())
                try? await Task.sleep(for: .milliseconds(10))
            }
            return peak
        }
        let result: T
        do {
            result = try await work()
        } catch {
            sampler.cancel()
            throw error
        }
        sampler.cancel()
        var peak = max(try await sampler.value, try gateway.residentMemoryBytes())
        if markReset { peak = max(peak, try gateway.peakResidentMemoryBytes()) }
        return (result, peak - baseline)
    }

    /// The backend and the clients of these tests: their own threads, so that making and
    /// checking 64 MiB of pattern bytes never holds up the event loops every other test shares.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    /// A `serve` process in front of a new echo backend.
    static func serve() async throws -> (RunningGateway, EchoBackend, port: Int) {
        let backend = try await EchoBackend.start(group: Self.group)
        var configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1)
        configuration["logging"] = ["accessLog": false]
        let gateway = try RunningGateway(configuration: configuration)
        do {
            return (gateway, backend, try await gateway.waitForPort())
        } catch {
            gateway.kill()
            await backend.close()
            throw error
        }
    }

    @Test func memoryIsReadFromTheSubprocess() async throws {
        let (gateway, backend, _) = try await Self.serve()
        atTestEnd {
            gateway.kill()
            _ = try? await gateway.waitForExit(timeout: .seconds(10))
            await backend.close()
        }
        let resident = try gateway.residentMemoryBytes()
        // A running Swift process: more than 1 MiB, less than 1 GiB.
        #expect(resident > 1 << 20 && resident < 1 << 30)
        #expect(throws: ProcessHarnessError.self) { try RunningGateway.residentMemoryBytes(pid: Int32.max) }
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
        let (gateway, backend, port) = try await Self.serve()
        atTestEnd {
            gateway.kill()
            _ = try? await gateway.waitForExit(timeout: .seconds(10))
            await backend.close()
        }
        let expected = Self.expectedSHA256(bytes: Self.size)
        let client = try await TestConnection.connect(port: port, group: Self.group)
        // Warm up allocator pools so the baseline is fair.
        _ = try await client.upload(
            "/warmup", totalBytes: 1 << 20, headers: [("Authorization", "Bearer \(TestKeys.token())")])
        let (response, growth) = try await Self.measuringMemory(of: gateway) {
            try await client.upload(
                "/upload", totalBytes: Self.size, headers: [("Authorization", "Bearer \(TestKeys.token())")])
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
        atTestEnd { await gateway.stop() }
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
        let (gateway, backend, port) = try await Self.serve()
        atTestEnd {
            gateway.kill()
            _ = try? await gateway.waitForExit(timeout: .seconds(10))
            await backend.close()
        }
        let client = try await TestConnection.connect(port: port, countOnly: true, group: Self.group)
        _ = try await client.send(.get("/bytes/1048576", token: TestKeys.token()))
        for chunked in [false, true] {
            let (response, growth) = try await Self.measuringMemory(of: gateway) {
                try await client.send(
                    .get("/bytes/\(Self.size)\(chunked ? "?chunked=1" : "")", token: TestKeys.token()),
                    timeout: .seconds(120))
            }
            #expect(response.status == 200)
            #expect(response.bodyBytes == Self.size)
            #expect(response.patternMatched)
            #expect(growth < Self.memoryBudget, "resident memory grew by \(growth / 1024) KiB (chunked: \(chunked))")
        }
        await client.close()
    }

    // MARK: Slow peers (HTTP/1.1)

    /// What may pile up between a peer that stopped and one that did not, through a gateway
    /// that withholds reads: the gateway's own buffers (a 64 KiB write high-water mark, a
    /// read or two) and its two sockets' kernel buffers (its receive buffer may auto-tune up to
    /// `net.ipv4.tcp_rmem`'s 32 MiB on this machine, its send buffer to `tcp_wmem`'s 4 MiB),
    /// plus the peers' pinned 128 KiB. A gateway that reads regardless holds the whole body
    /// (`slowBody`, four times the bound).
    static let inFlightBound = 64 * 1024 * 1024
    static let slowBody = 256 * 1024 * 1024

    /// A gateway in front of `backend` that lets a stalled exchange sit: long response and
    /// idle timeouts, and a body limit above `slowBody`.
    static func gateway(before backend: SlowBackend) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["backends"] = ["api": ["urls": [.string(backend.baseURL)], "responseTimeoutMilliseconds": 300_000]]
            config.set("limits.maxRequestBodyBytes", .number(JSONNumber(2 * Self.slowBody)))
            config.set("timeouts.idleSeconds", 300)
        }
    }

    /// A client that stops reading while a large response streams: the gateway stops reading
    /// from the backend, so the backend gets stuck with the body's bytes in flight bounded by
    /// buffers, not by the body's size; once the client reads again, the backend goes on.
    @Test func aClientThatStopsReadingHoldsTheBackendBack() async throws {
        let backend = try await SlowBackend.start(group: Self.group)
        atTestEnd { await backend.close() }
        let gateway = try await Self.gateway(before: backend)
        atTestEnd { await gateway.stop() }
        let client = try await SlowClient.connect(port: gateway.port, group: Self.group, reading: false)
        atTestEnd { await client.close() }
        try await client.send(
            "GET /stream/\(Self.slowBody) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(TestKeys.token())\r\n\r\n"
        )

        let stuck = await SlowPeers.stall({ backend.sent }, done: { backend.streamed })
        let sent = try #require(stuck, "the backend kept sending for 60 s")
        #expect(!backend.streamed, "the whole body left the backend while the client read nothing")
        #expect(client.received == 0)
        #expect(sent > 0, "nothing was streamed")
        #expect(sent <= Self.inFlightBound, "\(sent >> 20) MiB in flight to a client that reads nothing")

        // Reading again: the response flows from where it stood.
        client.startReading()
        #expect(await eventually { client.received > 1 << 20 && backend.sent > sent })
        #expect(client.firstBytes.hasPrefix("HTTP/1.1 200 "), "\(client.firstBytes.prefix(200))")
    }

    /// A backend that stops reading while a large upload streams: the gateway stops reading
    /// from the client, so the client's writes stall with the bytes in flight bounded; once
    /// the backend reads again, the whole body arrives and is answered.
    @Test func aBackendThatStopsReadingHoldsTheClientBack() async throws {
        let backend = try await SlowBackend.start(group: Self.group, paused: true)
        atTestEnd { await backend.close() }
        let gateway = try await Self.gateway(before: backend)
        atTestEnd { await gateway.stop() }
        let client = try await SlowClient.connect(port: gateway.port, group: Self.group, reading: true)
        atTestEnd { await client.close() }
        try await client.send(
            "POST /sink HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(TestKeys.token())\r\n"
                + "Content-Length: \(Self.slowBody)\r\n\r\n")
        client.upload(total: Self.slowBody)

        let stuck = await SlowPeers.stall({ client.sent }, done: { client.sent == Self.slowBody })
        let sent = try #require(stuck, "the client kept sending for 60 s")
        #expect(sent < Self.slowBody, "the whole upload left the client while the backend read nothing")
        #expect(sent > 0, "nothing was sent")
        let inFlight = sent - backend.received
        #expect(inFlight <= Self.inFlightBound, "\(inFlight >> 20) MiB in flight to a backend that reads nothing")

        // Reading again: every byte arrives, and the answer comes back.
        backend.resume()
        #expect(await eventually(timeout: .seconds(120)) { backend.received == Self.slowBody })
        #expect(await eventually { client.firstBytes.contains("received \(Self.slowBody)") })
        #expect(client.firstBytes.hasPrefix("HTTP/1.1 200 "), "\(client.firstBytes.prefix(200))")
    }
}
