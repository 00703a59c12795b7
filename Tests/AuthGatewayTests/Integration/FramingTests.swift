import Foundation
import NIOCore
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Ambiguous or malformed framing gets 400 and a closed connection, and reaches no backend
/// (docs/forwarding.md) — the request-smuggling surface.
@Suite("Malformed framing (raw sockets)", .awaitsCleanups)
struct FramingTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        /// Header lines after the request line and Host (each ending in CRLF), then the rest.
        let request: String
        var testDescription: String { self.name }
    }

    static let token = TestKeys.token()
    static let cases: [Case] = [
        Case(
            name: "Content-Length with Transfer-Encoding",
            request:
                "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        ),
        Case(
            name: "two different Content-Lengths",
            request: "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
        Case(
            name: "Transfer-Encoding gzip", request: "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc"
        ),
        Case(
            name: "Transfer-Encoding not ending in chunked",
            request: "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n"),
        Case(
            name: "Transfer-Encoding twice",
            request:
                "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
        Case(name: "obs-fold", request: "GET /a HTTP/1.1\r\nHost: x\r\nX-Folded: one\r\n two\r\n\r\n"),
        Case(
            name: "invalid chunk size",
            request: "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
        Case(
            name: "overflowing chunk size",
            request:
                "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n"
        ),
        Case(name: "NUL in a header name", request: "GET /a HTTP/1.1\r\nHost: x\r\nX-Fo\u{0}o: a\r\n\r\n"),
        Case(name: "whitespace before the colon", request: "GET /a HTTP/1.1\r\nHost: x\r\nX-Foo : a\r\n\r\n"),
        Case(name: "missing Host in HTTP/1.1", request: "GET /a HTTP/1.1\r\nX-Foo: a\r\n\r\n"),
        Case(name: "two Host headers", request: "GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        Case(name: "invalid Content-Length", request: "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5x\r\n\r\nhello"),
        Case(name: "garbage request line", request: "HELLO THERE\r\n\r\n"),
    ]

    @Test(arguments: Self.cases)
    func refusedWith400AndClosed(_ testCase: Case) async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let raw = try await gateway.raw()
        // Authorized, so the framing alone decides.
        let request = testCase.request.replacingOccurrences(
            of: "Host: x\r\n", with: "Host: x\r\nAuthorization: Bearer \(Self.token)\r\n")
        try await raw.send(request)
        #expect(await raw.waitForClose(), "the connection must be closed")
        #expect(raw.firstStatus == 400, "got: \(raw.received.prefix(80))")
        #expect(raw.received.contains("application/problem+json"))
        #expect(gateway.backend.requestCount == 0)
    }

    @Test func oversizedHeadersGet431() async throws {
        let gateway = try await GatewayFixture.start { config in config.set("limits.maxHeaderBytes", 4096) }
        atTestEnd { await gateway.stop() }
        let raw = try await gateway.raw()
        try await raw.send(
            "GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(TestKeys.token())\r\nX-Big: \(String(repeating: "a", count: 5000))\r\n\r\n"
        )
        #expect(await raw.waitForClose())
        #expect(raw.firstStatus == 431)
        #expect(gateway.backend.requestCount == 0)
        // Just under the limit is fine.
        let ok = try await gateway.send(
            .get("/a", token: TestKeys.token(), headers: [("X-Big", String(repeating: "a", count: 2000))]))
        #expect(ok.status == 200)
    }

    @Test func oversizedBodiesGet413() async throws {
        let gateway = try await GatewayFixture.start { config in config.set("limits.maxRequestBodyBytes", 1000) }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        // Declared too large: refused before any byte of body is read.
        let declared = try await gateway.raw()
        try await declared.send(
            "POST /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: 5000\r\n\r\n")
        #expect(await declared.waitForClose())
        #expect(declared.firstStatus == 413)
        // Chunked, turning out too large while waiting for the decision or streaming.
        let chunked = try await gateway.raw()
        let chunk = String(repeating: "b", count: 800)
        try await chunked.send(
            "POST /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n\(chunk)\r\n320\r\n\(chunk)\r\n0\r\n\r\n"
        )
        #expect(await chunked.waitForClose())
        #expect(chunked.firstStatus == 413)
        // Exactly at the limit passes.
        let ok = try await gateway.send(
            TestRequest(
                .POST, "/a", headers: [("Authorization", "Bearer \(token)")], body: String(repeating: "c", count: 1000))
        )
        #expect(ok.status == 200)
        #expect(ok.json?["body"]?["bytes"]?.numberValue?.exactInt == 1000)
    }

    @Test func connectionsOverTheLimitAreTurnedAway() async throws {
        let gateway = try await GatewayFixture.start { config in config.set("limits.maxConnections", 2) }
        atTestEnd { await gateway.stop() }
        let first = try await gateway.connect()
        let second = try await gateway.connect()
        #expect(try await first.send(.get("/1", token: TestKeys.token())).status == 200)
        #expect(try await second.send(.get("/2", token: TestKeys.token())).status == 200)
        let third = try await gateway.raw()
        #expect(await third.waitForClose())
        #expect(third.firstStatus == 503)
        // Closing one makes room again, once the gateway has seen the close: polled for by
        // connecting until one is served (each turned-away attempt is closed by the gateway).
        await first.close()
        var fourth: TestConnection?
        let admitted = try await eventually {
            let attempt = try await gateway.connect()
            if (try? await attempt.send(.get("/4", token: TestKeys.token())))?.status == 200 {
                fourth = attempt
                return true
            }
            await attempt.close()
            return false
        }
        #expect(admitted)
        await second.close()
        await fourth?.close()
    }
}
