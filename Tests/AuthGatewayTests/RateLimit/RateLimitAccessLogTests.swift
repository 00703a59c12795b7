import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// The access-log line of a refused request names the limit (docs/rate-limits.md): read from what a
/// real `auth-gateway serve` wrote on its standard output for a request it really refused.
@Suite("Access log: rate limits", .timeLimit(.minutes(2)), .awaitsCleanups)
struct RateLimitAccessLogTests {
    /// The access-log line (a JSON object) whose `requestId` is `id`, from `output`.
    static func line(_ id: String, in output: String) -> JSONValue? {
        output.split(separator: "\n").lazy
            .compactMap { try? JSONValue(parsing: String($0)) }
            .first { $0["requestId"]?.stringValue == id }
    }

    @Test func aRefusedRequestsLineNamesTheLimit() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        var configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1)
        // One request per 100 s: the second is refused however slowly the two are sent.
        configuration["rateLimits"] = [
            [
                "name": "per-user", "key": "claims.sub",
                "requestsPerSecond": .number(JSONNumber(text: "0.01", double: 0.01)),
                "burst": 1,
            ]
        ]
        let gateway = try RunningGateway(configuration: configuration)
        atTestEnd {
            gateway.kill()
            _ = try? await gateway.waitForExit(timeout: .seconds(10))
        }
        let port = try await gateway.waitForPort()
        let token = TestKeys.token(subject: "logged-user")
        var statuses: [Int] = []
        for id in ["rl-admitted", "rl-refused"] {
            let client = try await TestConnection.connect(port: port)
            let response = try await withCleanup({ await client.close() }) {
                try await client.send(.get("/limited", token: token, headers: [("X-Request-Id", id)]))
            }
            statuses.append(response.status)
        }
        #expect(statuses == [200, 429])
        // The access log is flushed at least every second.
        #expect(
            try await gateway.waitForOutput { output in
                Self.line("rl-admitted", in: output) != nil && Self.line("rl-refused", in: output) != nil
            })
        let refused = try #require(Self.line("rl-refused", in: gateway.standardOutput))
        #expect(refused["rateLimit"]?.stringValue == "per-user")
        #expect(refused["error"]?.stringValue == "rate_limited")
        #expect(refused["status"]?.numberValue?.exactInt == 429)
        #expect(refused["route"]?.stringValue == "default")
        #expect(refused["backend"] == nil, "a refused request reached no backend")
        let admitted = try #require(Self.line("rl-admitted", in: gateway.standardOutput))
        #expect(admitted["status"]?.numberValue?.exactInt == 200)
        #expect(admitted["sub"]?.stringValue == "logged-user")
        #expect(admitted["rateLimit"] == nil)
        #expect(admitted["error"] == nil)
    }

    @Test func theErrorMapsToTheSpecAnswer() {
        let error = GatewayError.rateLimited("per-user", retryAfterSeconds: 7)
        #expect(error.status.code == 429)
        #expect(error.retryAfterSeconds == 7)
        #expect(error.rateLimitName == "per-user")
        #expect(GatewayError.overloaded.rateLimitName == nil)
        #expect(GRPCStatus.code(forHTTPStatus: 429) == 8)
        let problem = try? JSONValue(parsing: error.problemJSON(requestID: "r-1"))
        #expect(problem?["error"]?.stringValue == "rate_limited")
    }
}
