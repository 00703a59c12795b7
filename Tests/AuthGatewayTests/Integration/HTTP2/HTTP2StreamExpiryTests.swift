import Foundation
import NIOCore
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// Long-lived HTTP/2 streams held to their credential (docs/streams.md), with real peers: gRPC
/// calls (Python grpcio on both sides) end with UNAUTHENTICATED at the token's expiry while a
/// call on the same connection with another token goes on; a server-sent-event stream (Python
/// h2 client) is reset while its neighbour on the same connection goes on.
@Suite("HTTP/2 streams and their credential (grpcio, h2)", .serialized, .timeLimit(.minutes(3)), .awaitsCleanups)
struct HTTP2StreamExpiryTests {
    static let sseScript = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/h2/sse_streams.py"
    ).path

    @Test func grpcServerStreamingAndBidirectionalCallsEndUnauthenticatedAtExpiryAndOthersGoOn() async throws {
        try await GRPCTests.withGatewayAndPeer(configure: { config in
            config["routes"] = [
                [
                    "name": "grpc", "pathPrefix": "/test.Echo/", "backend": "grpc",
                    "streams": ["closeAtExpiry": true, "leewaySeconds": 0],
                ]
            ]
        }) { gateway, peer in
            let long = TestKeys.token(subject: "long", expiresIn: 300)
            let (report, expiry) = try await ShortLivedToken.attempt(subject: "short") { short, expiry in
                var arguments = [GRPCTests.peer, "client", "127.0.0.1:\(gateway.port)", "expiry", "--timeout", "60"]
                arguments += ["--token", short, "--other-token", long]
                let result = try await ExternalTool.run(try GRPCTests.python(), arguments)
                let report = try #require(try? JSONValue(parsing: result.stdout), "\(result.stdout) \(result.stderr)")
                // Refused at once: the token expired before the calls were decided (a loaded machine).
                let started = ["stream", "bidi"].allSatisfy { (report[$0]?["count"]?.numberValue?.double ?? 0) > 0 }
                return started ? (report, expiry) : nil
            }
            for name in ["stream", "bidi"] {
                #expect(report[name]?["code"]?.stringValue == "UNAUTHENTICATED", "\(name): \(report)")
                #expect((report[name]?["count"]?.numberValue?.double ?? 0) > 0, "\(name) streamed before: \(report)")
                let at = try #require(report[name]?["at"]?.numberValue?.double)
                // Never before expiry; within ten seconds after it on a loaded 2-core machine
                // (the stream is endless: a close in that window is the expiry's).
                #expect(at >= expiry - 0.05 && at <= expiry + 10, "\(name) ended \(at - expiry) s after exp")
            }
            #expect(report["stream"]?["details"]?.stringValue == "credential expired")
            #expect(report["other_after"]?.numberValue?.exactInt == 5, "the other call went on: \(report)")
            #expect(report["other_code"]?.stringValue == "OK")
            // The backend's side (RST_STREAM(CANCEL)): grpcio saw the short call cancelled, at
            // expiry, not only when the client went away at the end.
            func ended(_ subject: String) -> [Double] {
                peer.lines.compactMap { try? JSONValue(parsing: $0) }
                    .filter { $0["ended"] == "Forever" && $0["subject"]?.stringValue == subject }
                    .compactMap { $0["at"]?.numberValue?.double }
            }
            try await poll { !ended("short").isEmpty }
            let cancelled = try #require(ended("short").last)
            #expect(
                cancelled >= expiry - 0.05 && cancelled <= expiry + 10, "cancelled \(cancelled - expiry) s after exp")
            let clientEnd = try #require(report["stream"]?["at"]?.numberValue?.double)
            #expect(cancelled <= clientEnd + 5, "the backend's call ended with the client's, not later")
        }
    }

    @Test func anSSEStreamIsResetAtExpiryAndItsNeighbourOnTheConnectionGoesOn() async throws {
        let python = try GRPCTests.python()
        let backend = try await EchoBackend.start(group: TestGroup.shared, http2: true)
        atTestEnd { await backend.close() }
        let gateway = try await GatewayFixture.start(backend: backend) { config in
            config["backends"] = ["api": ["urls": [.string(backend.baseURL)], "protocol": "h2c"]]
            config["routes"] = [
                [
                    "name": "events", "pathPrefix": "/", "backend": "api",
                    "streams": ["closeAtExpiry": true, "leewaySeconds": 0],
                ]
            ]
        }
        atTestEnd { await gateway.stop() }
        let long = TestKeys.token(subject: "long", expiresIn: 300)
        let (report, expiry) = try await ShortLivedToken.attempt(subject: "short") { short, expiry in
            let result = try await ExternalTool.run(
                python, [Self.sseScript, "127.0.0.1:\(gateway.port)", "/ticks/100", short, long, "--timeout", "60"])
            if result.stderr.contains("No module named 'h2'") {
                Issue.record("Python h2 is not installed: pip install h2 (or run .ci/run, which installs it)")
            }
            let report = try #require(try? JSONValue(parsing: result.stdout), "\(result.stdout) \(result.stderr)")
            // Refused: the token expired before the stream was decided (a loaded machine).
            return (report["short"]?["events"]?.numberValue?.double ?? 0) > 0 ? (report, expiry) : nil
        }
        #expect(report["short"]?["status"]?.numberValue?.exactInt == 200)
        #expect(report["short"]?["reset"]?.numberValue?.exactInt == 8, "RST_STREAM(CANCEL): \(report)")
        let at = try #require(report["short"]?["at"]?.numberValue?.double)
        // Never before expiry; within ten seconds after it on a loaded 2-core machine.
        #expect(at >= expiry - 0.05 && at <= expiry + 10, "reset \(at - expiry) s after exp")
        #expect(report["long"]?["after"]?.numberValue?.exactInt == 5, "the neighbour went on: \(report)")
        #expect(report["long"]?["reset"] == .null)
    }
}
