import Foundation
import Testing

@testable import AuthGateway

/// The access-log line of a refused request names the limit (SPEC §4.12).
@Suite("Access log: rate limits")
struct RateLimitAccessLogTests {
    func line(_ error: GatewayError?) throws -> JSONValue {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        defer { close(descriptors[0]) }
        let log = AccessLog(enabled: true, fileDescriptor: descriptors[1])
        log.record(
            AccessLog.Entry(
                requestID: "r-1", method: "GET", path: "/a", wireProtocol: .http1, route: "default",
                status: Int(error?.status.code ?? 200), durationSeconds: 0.001,
                client: "192.0.2.1", backend: nil, subject: nil, errorType: error?.errorType, bytesIn: 0, bytesOut: 0,
                rateLimit: error?.rateLimitName
            ),
            timestamp: 1_700_000_000
        )
        log.flush()
        close(descriptors[1])
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = read(descriptors[0], &bytes, bytes.count)
        return try JSONValue(parsing: String(decoding: bytes.prefix(max(0, count)), as: UTF8.self))
    }

    @Test func aRefusedRequestsLineNamesTheLimit() throws {
        let refused = try self.line(.rateLimited("per-user", retryAfterSeconds: 3))
        #expect(refused["rateLimit"]?.stringValue == "per-user")
        #expect(refused["error"]?.stringValue == "rate_limited")
        #expect(refused["status"]?.numberValue?.exactInt == 429)
        let admitted = try self.line(nil)
        #expect(admitted["rateLimit"] == nil)
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
