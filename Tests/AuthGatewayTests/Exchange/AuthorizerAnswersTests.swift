import Foundation
import NIOHTTP1
import Testing

@testable import AuthGateway

/// The HTTP contracts' answers and how they are labelled (docs/authorizer.md), without I/O.
@Suite("AuthorizerEndpoints: answers and mode=\"authorizer\"")
struct AuthorizerAnswersTests {
    @Test func nginxGetsOnly401Or403() {
        let missing = AuthorizerEndpoints.forNginx(.problem(.tokenMissing, requestID: "r"))
        #expect(missing.status == .unauthorized)
        #expect(missing.headers.first(name: "X-Auth-Gateway-Status") == nil)

        let redirect = AuthorizerEndpoints.forNginx(
            .redirect(to: "https://idp/authorize", headers: [("Set-Cookie", "flow=1")]))
        #expect(redirect.status == .unauthorized)
        #expect(redirect.headers.first(name: "Location") == "https://idp/authorize")
        #expect(redirect.headers.first(name: "Set-Cookie") == "flow=1")

        let limited = AuthorizerEndpoints.forNginx(
            .problem(.rateLimited("per-user", retryAfterSeconds: 7), requestID: "r"))
        #expect(limited.status == .forbidden)
        #expect(limited.headers.first(name: "X-Auth-Gateway-Status") == "429")
        #expect(limited.headers.first(name: "Retry-After") == "7")
        // The real error stays the request's error (metrics, access log).
        #expect(limited.error?.errorType == "rate_limited")

        let down = AuthorizerEndpoints.forNginx(.problem(.authServiceUnavailable, requestID: "r"))
        #expect(down.status == .forbidden)
        #expect(down.headers.first(name: "X-Auth-Gateway-Status") == "503")
    }

    @Test func theBackendsTokenWhenItIsNotTheClients() {
        let edits = [
            TokenEdit(location: .header(name: "X-Refresh-Token", bearer: false), replacement: nil),
            TokenEdit(location: .header(name: "Authorization", bearer: true), replacement: "new"),
            TokenEdit(location: .cookie(name: "access_token"), replacement: "c"),
        ]
        #expect(
            AuthorizerEndpoints.upstreamTokenHeaders(edits).map { "\($0.name): \($0.value)" } == [
                "Authorization: Bearer new"
            ])
    }

    @Test func metricsLabelOnlyAuthorizerAnswers() {
        var snapshot = MetricsSnapshot()
        snapshot.requests[.init(route: "api", statusClass: 2, wireProtocol: .http1)] = 3
        snapshot.requests[.init(route: "api", statusClass: 2, wireProtocol: .http1, authorizer: true)] = 2
        let text = PrometheusText.render(snapshot)
        #expect(
            text.contains("auth_gateway_requests_total{route=\"api\",status_class=\"2xx\",protocol=\"http/1.1\"} 3\n"))
        #expect(
            text.contains(
                "auth_gateway_requests_total{route=\"api\",status_class=\"2xx\",protocol=\"http/1.1\",mode=\"authorizer\"} 2\n"
            ))
    }

    @Test func theAccessLogLineSaysSo() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("access-\(UUID().uuidString)").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(descriptor >= 0)
        defer {
            close(descriptor)
            try? FileManager.default.removeItem(atPath: path)
        }
        let log = AccessLog(enabled: true, fileDescriptor: descriptor)
        var entry = AccessLog.Entry(
            requestID: "a", method: "GET", path: "/.gateway/authz/auth-request", wireProtocol: .http1, route: "api",
            status: 200, durationSeconds: 0.001, client: "127.0.0.1", backend: nil, subject: "alice", errorType: nil,
            bytesIn: 0, bytesOut: 0)
        entry.authorizer = true
        log.record(entry, timestamp: 1)
        entry.authorizer = false
        entry.requestID = "b"
        log.record(entry, timestamp: 1)
        log.flush()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasSuffix(",\"mode\":\"authorizer\"}"))
        #expect(!lines[1].contains("mode"))
    }
}
