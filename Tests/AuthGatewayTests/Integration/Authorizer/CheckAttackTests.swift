import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Hostile calls of Envoy's gRPC `Check` with a real gRPC client (Python grpcio:
/// `Fixtures/authz/check_attacks.py`; docs/authorizer.md): a message over the size limit,
/// truncated and garbage protobuf, an empty message — each refused with its gRPC status, nothing
/// decided, the connection still serving — and a caller outside `trustedPeers`, denied without a
/// decision.
@Suite("Authorizer: hostile gRPC Check calls (grpcio, real sockets)", .awaitsCleanups, .timeLimit(.minutes(3)))
struct CheckAttackTests {
    static let script = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/authz/check_attacks.py"
    ).path

    static func run(_ mode: String, port: Int) async throws -> JSONValue {
        let python = try ExternalTool.require("python3", package: "python3")
        let run = try await ExternalTool.run(
            python, [Self.script, mode, String(port), TestKeys.token()], timeout: .seconds(90))
        try #require(run.status == 0, "check_attacks.py exited \(run.status): \(run.stderr)")
        return try JSONValue(parsing: run.stdout)
    }

    /// The authorizer decisions counted so far under a route of `AuthorizerHTTPTests.start`.
    static func decisions(_ gateway: GatewayFixture) async throws -> [Substring] {
        let metrics = try await TestConnection.connect(port: gateway.adminPort).send(.get("/metrics")).text
        let routes = ["api", "admin", "limited", "public"].map { "route=\"\($0)\"" }
        return metrics.split(separator: "\n").filter { line in
            line.contains(#"mode="authorizer""#) && !line.hasPrefix("#") && routes.contains { line.contains($0) }
        }
    }

    @Test func oversizedTruncatedGarbageAndEmptyMessagesAreRefusedAndTheConnectionServes() async throws {
        let gateway = try await AuthorizerHTTPTests.start()
        atTestEnd { await gateway.stop() }
        let results = try await Self.run("attacks", port: gateway.port)
        #expect(results["oversized"]?["grpc"]?.stringValue == "RESOURCE_EXHAUSTED", "\(results)")
        for name in ["truncated", "garbage", "wiretype"] {
            #expect(results[name]?["grpc"]?.stringValue == "INVALID_ARGUMENT", "\(name): \(results)")
            #expect(results[name]?["details"]?.stringValue == "The message is not a CheckRequest", "\(name)")
        }
        // An empty message is a CheckRequest naming nothing: refused for what it lacks.
        #expect(results["empty"]?["grpc"]?.stringValue == "INVALID_ARGUMENT", "\(results)")
        #expect(results["empty"]?["details"]?.stringValue?.contains("attributes.request.http.method") == true)
        #expect(results["after"]?["which"]?.stringValue == "ok_response", "\(results)")
        // Only the last call was decided.
        let decisions = try await Self.decisions(gateway)
        #expect(decisions.count == 1, "\(decisions)")
        #expect(decisions.first?.hasSuffix(" 1") == true, "\(decisions)")
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func aCallerOutsideTrustedPeersIsDeniedAndNothingIsDecided() async throws {
        let gateway = try await AuthorizerHTTPTests.start { config in
            config["authorizer"] = ["trustedPeers": ["10.0.0.0/8", "::2/128"]]
        }
        atTestEnd { await gateway.stop() }
        let results = try await Self.run("untrusted", port: gateway.port)
        // The 403 (authorizer.untrusted_peer) reaches a gRPC client as PERMISSION_DENIED.
        #expect(results["allowed"]?["grpc"]?.stringValue == "PERMISSION_DENIED", "\(results)")
        #expect(try await Self.decisions(gateway).isEmpty, "an untrusted call was decided")
        // The HTTP contracts too: 403, not decided.
        let nginx = try await gateway.send(AuthorizerHTTPTests.nginx("GET", "/api/x", token: TestKeys.token()))
        #expect(nginx.status == 403)
        #expect(nginx.json?["type"]?.stringValue == "urn:auth-gateway:problem:authorizer.untrusted_peer")
        #expect(nginx.header("x-user-subject") == nil)
        #expect(try await Self.decisions(gateway).isEmpty)
        #expect(gateway.backend.requestCount == 0)
    }
}
