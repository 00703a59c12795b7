import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// What happens around a refused request target on a real `auth-gateway serve`
/// (docs/forwarding.md, "Request targets"): the 400 leaves the keep-alive connection open for
/// the client's next request, the access log names the refusal and the request id — never the
/// raw target, which is the attacker's text — and `auth_gateway_request_target_refusals_total`
/// counts it by problem type.
@Suite(
    "Refused request targets: the connection and the access log (auth-gateway serve)", .awaitsCleanups,
    .timeLimit(.minutes(2)))
struct TargetRefusalLogTests {
    /// The first whole response in `bytes`, and the bytes after it (nil until it is whole).
    static func firstResponse(_ bytes: [UInt8]) -> (RawResponse, rest: [UInt8])? {
        guard let response = RawExchange.parse(bytes, closed: false),
            let headEnd = bytes.indices.first(where: { bytes[$0...].starts(with: [13, 10, 13, 10]) })
        else { return nil }
        let used = headEnd + 4 + response.body.count
        return (response, Array(bytes[used...]))
    }

    @Test func aRefusedTargetKeepsTheConnectionAndIsLoggedWithoutIt() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        let gateway = try RunningGateway(
            configuration: RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1, admin: true))
        atTestEnd {
            gateway.kill()
            _ = try? await gateway.waitForExit(timeout: .seconds(10))
        }
        let port = try await gateway.waitForPort()
        let token = TestKeys.token(subject: "target-user")
        let marker = "x7Qz"  // in the refused target only: found in the log, it would be the raw target

        // Refused, then a good request on the same connection: both answered, nothing closed.
        let connection = try await RawConnection.connect(port: port)
        atTestEnd { await connection.close() }
        try await connection.send(
            "GET /public/..%2Fadmin/\(marker) HTTP/1.1\r\nHost: gw.example\r\nX-Request-Id: refused-path\r\n"
                + "Authorization: Bearer \(token)\r\n\r\n")
        try await poll { Self.firstResponse(connection.receivedBytes) != nil || connection.isClosed }
        let received = connection.receivedBytes
        let (refused, rest) = try #require(Self.firstResponse(received), "\(connection.received)")
        // Counted now: the next response may start arriving as soon as the next request is sent.
        let consumed = received.count - rest.count
        #expect(refused.status == 400)
        #expect(refused.problem == "request.ambiguous_path", "\(refused.text)")
        #expect(refused.header("connection")?.lowercased() != "close")
        #expect(rest.isEmpty)
        try await connection.send(
            "GET /after HTTP/1.1\r\nHost: gw.example\r\nX-Request-Id: after-refusal\r\n"
                + "Authorization: Bearer \(token)\r\n\r\n")
        try await poll {
            Self.firstResponse(Array(connection.receivedBytes.dropFirst(consumed))) != nil || connection.isClosed
        }
        let next = try #require(Self.firstResponse(Array(connection.receivedBytes.dropFirst(consumed)))?.0)
        #expect(next.status == 200, "the next request on the connection: \(next.status) \(next.text)")
        #expect(!connection.isClosed)
        #expect(backend.requestCount == 1, "only the good request reached the backend")

        // Two Host fields: refused as ambiguous.
        let twoHosts = try await RawExchange.send(
            port: port,
            Array(
                "GET /\(marker) HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nX-Request-Id: refused-host\r\n\r\n"
                    .utf8))
        #expect(twoHosts.status == 400 && twoHosts.problem == "request.ambiguous_host", "\(twoHosts.text)")

        // The access log is flushed at least every second.
        #expect(
            try await gateway.waitForOutput { output in
                ["refused-path", "after-refusal", "refused-host"].allSatisfy {
                    RateLimitAccessLogTests.line($0, in: output) != nil
                }
            })
        let output = gateway.standardOutput
        let path = try #require(RateLimitAccessLogTests.line("refused-path", in: output))
        #expect(path["status"]?.numberValue?.exactInt == 400)
        #expect(path["error"]?.stringValue == "request.ambiguous_path", "\(path)")
        #expect(path["backend"] == nil)
        let host = try #require(RateLimitAccessLogTests.line("refused-host", in: output))
        #expect(host["error"]?.stringValue == "request.ambiguous_host", "\(host)")
        #expect(!output.contains(marker), "the raw target reached the log")
        let after = try #require(RateLimitAccessLogTests.line("after-refusal", in: output))
        #expect(after["status"]?.numberValue?.exactInt == 200)

        // Counted by problem type, as well as in auth_gateway_requests_total's 4xx.
        let admin = try await gateway.waitForAdminPort()
        let metrics = try await TestConnection.connect(port: admin).send(.get("/metrics")).text
        #expect(
            metrics.contains(
                "auth_gateway_request_target_refusals_total{error=\"request.ambiguous_path\"} 1"), "\(metrics)")
        #expect(metrics.contains("auth_gateway_request_target_refusals_total{error=\"request.ambiguous_host\"} 1"))
        #expect(!metrics.contains(marker))
    }
}
