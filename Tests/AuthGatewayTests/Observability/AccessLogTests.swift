import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// The access log of the real `serve` process (one JSON line per request on standard output):
/// over HTTP/2 it names every request as over HTTP/1.1 and never holds a token (docs/errors.md,
/// docs/http2.md); with tracing it carries the request's `traceId` (docs/operations.md).
@Suite("Access log of auth-gateway serve: HTTP/2 and trace ids", .serialized, .timeLimit(.minutes(5)), .awaitsCleanups)
struct AccessLogTests {
    /// The access log lines on `output`, by request id.
    static func lines(_ output: String) -> [String: JSONValue] {
        var found: [String: JSONValue] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("{") {
            guard let value = try? JSONValue(parsing: String(line)), let id = value["requestId"]?.stringValue else {
                continue
            }
            found[id] = value
        }
        return found
    }

    /// The token values a `set-cookie` list sets (`name=value; …`).
    static func cookieValues(_ setCookies: [String]) -> [String] {
        setCookies.compactMap { cookie in
            cookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).dropFirst().first.map(String.init)
        }.filter { !$0.isEmpty }
    }

    @Test func overHTTP2EveryRequestIsLoggedByNameAndNoTokenIs() async throws {
        let auth = try await TokenLoggingTests.RecordingAuthService.start()
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await backend.close()
            await auth.service.stop()
        }
        let gateway = try RunningGateway(configuration: TokenLoggingTests.configuration(backend: backend, auth: auth))
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let client = try await H2TestClient.connect(port: port)
        atTestEnd { await client.close() }

        let valid = TestKeys.token(subject: "alice", extra: ["nonce": "h2-valid"])
        let validInCookie = TestKeys.token(subject: "alice", extra: ["nonce": "h2-cookie"])
        let validInQuery = TestKeys.token(subject: "alice", extra: ["nonce": "h2-query"])
        let expiredForHeader = TestKeys.token(subject: "alice", expiresIn: -60, extra: ["nonce": "h2-expired-header"])
        let expiredForCookie = TestKeys.token(subject: "alice", expiresIn: -60, extra: ["nonce": "h2-expired-cookie"])
        let expiredRefused = TestKeys.token(subject: "alice", expiresIn: -60, extra: ["nonce": "h2-expired-refused"])
        let forged = TestKeys.token(signer: TestKeys.otherRSA, subject: "alice", extra: ["nonce": "h2-forged"])
        let refreshHeader = "rt-h2-header-" + UUID().uuidString.lowercased()
        let refreshCookie = "rt-h2-cookie-" + UUID().uuidString.lowercased()

        struct Sent {
            let id: String
            let path: String
            let fields: [(String, String)]
            let status: Int
        }
        let sent: [Sent] = [
            Sent(id: "h2-log-bearer", path: "/a", fields: [("authorization", "Bearer \(valid)")], status: 200),
            Sent(
                id: "h2-log-cookie", path: "/b",
                fields: [("cookie", "theme=dark"), ("cookie", "access_token=\(validInCookie)")], status: 200),
            Sent(
                id: "h2-log-query", path: "/c?access_token=\(validInQuery)",
                fields: [("authorization", "Bearer \(valid)")], status: 200),
            Sent(
                id: "h2-log-refresh-header", path: "/d",
                fields: [("authorization", "Bearer \(expiredForHeader)"), ("x-refresh-token", refreshHeader)],
                status: 200),
            Sent(
                id: "h2-log-refresh-cookie", path: "/e",
                fields: [("cookie", "access_token=\(expiredForCookie); refresh_token=\(refreshCookie)")], status: 200),
            Sent(
                id: "h2-log-refused", path: "/f",
                fields: [
                    ("authorization", "Bearer \(expiredRefused)"),
                    ("x-refresh-token", TokenLoggingTests.RecordingAuthService.refused),
                ],
                status: 401
            ),
            Sent(id: "h2-log-forged", path: "/g", fields: [("authorization", "Bearer \(forged)")], status: 401),
        ]
        var answers: [HPACKHeaders] = []
        for item in sent {
            let result = try await client.exchange(
                [
                    .headers(
                        .init(
                            headers: H2TestClient.request(
                                path: item.path, fields: item.fields + [("x-request-id", item.id)]), endStream: true))
                ], timeout: .seconds(30)
            )
            #expect(result.status == item.status, "\(item.id): \(result.frames)")
            answers.append(result.headers ?? HPACKHeaders())
        }
        // The refreshes reached the client: new tokens in headers, and in cookies for the
        // cookie pair.
        #expect(answers[3].first(name: "x-access-token") != nil)
        #expect(answers[4]["set-cookie"].count == 2, "\(answers[4])")

        let output = try await TokenLoggingTests.stopAfterLogging(gateway, ids: sent.map(\.id))
        let stdout = output.stdout

        // Each request named: its id, method, path (without the query), protocol, route, status.
        let logged = Self.lines(stdout)
        for item in sent {
            let line = try #require(logged[item.id], "no access log line for \(item.id)")
            #expect(line["method"]?.stringValue == "GET", "\(item.id)")
            #expect(line["path"]?.stringValue == String(item.path.prefix { $0 != "?" }), "\(item.id): \(line)")
            #expect(line["protocol"]?.stringValue == "h2", "\(item.id): \(line)")
            #expect(line["route"]?.stringValue == "default", "\(item.id): \(line)")
            #expect(line["status"]?.numberValue?.exactInt == item.status, "\(item.id): \(line)")
        }
        #expect(logged["h2-log-refresh-cookie"]?["sub"]?.stringValue == "alice")

        var secrets = [
            valid, validInCookie, validInQuery, expiredForHeader, expiredForCookie, expiredRefused, forged,
            refreshHeader, refreshCookie,
        ]
        .flatMap(TokenLoggingTests.secrets(of:))
        secrets += [TokenLoggingTests.RecordingAuthService.refused].flatMap(TokenLoggingTests.secrets(of:))
        secrets += auth.issuedTokens.flatMap(TokenLoggingTests.secrets(of:))
        for answer in answers {
            let setCookies: [String] = answer["set-cookie"].map { String($0) }
            let tokens =
                [answer.first(name: "x-access-token"), answer.first(name: "x-refresh-token")].compactMap { $0 }
                + Self.cookieValues(setCookies)
            secrets += tokens.flatMap(TokenLoggingTests.secrets(of:))
        }
        #expect(auth.issuedTokens.count == 4, "two refreshes, each a new access and refresh token")
        TokenLoggingTests.expectNone(of: secrets, in: output)
    }

    /// With tracing on, the access log line carries the trace id of its request: the trace the
    /// gateway started for a request without `traceparent` (the one the backend was handed)
    /// and the client's own trace when it sent one. Over HTTP/1.1 and HTTP/2 alike.
    @Test func theAccessLogCarriesTheTraceID() async throws {
        let collector = try await TracingTests.collector()
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd {
            await backend.close()
            await collector.stop()
        }
        var configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1)
        configuration["tracing"] = [
            "otlpEndpoint": .string(collector.baseURL), "otlpProtocol": "http/json", "sampleRatio": 1,
        ]
        let gateway = try RunningGateway(configuration: configuration)
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()

        let started = try await TestConnection.connect(port: port).send(
            .get("/new-trace", token: TestKeys.token(), headers: [("X-Request-Id", "trace-log-new")]),
            timeout: .seconds(30))
        #expect(started.status == 200)
        let header = try #require(started.echoedHeader("traceparent").first, "the backend got no traceparent")
        let forwarded = try #require(W3CTraceparent(header), "not a W3C traceparent: \(header)")

        let clientTrace = "0af7651916cd43dd8448eb211c80319c"
        let continued = try await TestConnection.connect(port: port).send(
            .get(
                "/continued", token: TestKeys.token(),
                headers: [
                    ("X-Request-Id", "trace-log-continued"), ("traceparent", "00-\(clientTrace)-b7ad6b7169203331-01"),
                ]),
            timeout: .seconds(30)
        )
        #expect(continued.status == 200)

        let client = try await H2TestClient.connect(port: port)
        atTestEnd { await client.close() }
        let overH2 = try await client.exchange(
            [
                .headers(
                    .init(
                        headers: H2TestClient.request(
                            path: "/h2-trace",
                            fields: [("authorization", "Bearer \(TestKeys.token())"), ("x-request-id", "trace-log-h2")]),
                        endStream: true))
            ],
            timeout: .seconds(30)
        )
        #expect(overH2.status == 200)
        let h2Header = try #require(
            (try? JSONValue(parsing: String(buffer: overH2.body)))?["headers"]?["traceparent"]?.arrayValue?.first?
                .stringValue)
        let h2Forwarded = try #require(W3CTraceparent(h2Header), "not a W3C traceparent: \(h2Header)")

        let ids = ["trace-log-new", "trace-log-continued", "trace-log-h2"]
        #expect(
            try await gateway.waitForOutput(timeout: .seconds(30)) { output in
                ids.allSatisfy { output.contains("\"requestId\":\"\($0)\"") }
            })
        let logged = Self.lines(gateway.standardOutput)
        #expect(
            logged["trace-log-new"]?["traceId"]?.stringValue == forwarded.traceID,
            "\(logged["trace-log-new"].map(\.jsonText) ?? "no line")")
        #expect(logged["trace-log-continued"]?["traceId"]?.stringValue == clientTrace)
        #expect(logged["trace-log-h2"]?["traceId"]?.stringValue == h2Forwarded.traceID)
        #expect(
            forwarded.traceID != clientTrace && h2Forwarded.traceID != forwarded.traceID,
            "each new request starts its own trace")
        // The exported server span of the new trace is the same trace.
        try await poll { TracingTests.spans(collector).contains { $0.kind == 2 && $0.traceID == forwarded.traceID } }
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(30)) == 0)
    }
}
