import Foundation
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

@Suite("Forwarding (real sockets)", .awaitsCleanups)
struct ForwardingTests {
    @Test func authorizedRequestIsForwardedWithRewrittenHeaders() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Email": "claims.email"]
            config["stripInboundHeaderPrefixes"] = ["X-Auth-"]
        }
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token(subject: "alice")
        let response = try await gateway.send(
            .get(
                "/orders/42?expand=items&x=%41",
                token: token,
                headers: [
                    ("X-User-Subject", "forged"), ("X-Auth-Role", "admin"), ("X-Forwarded-For", "6.6.6.6"),
                    ("Connection", "keep-alive, X-Hop"), ("X-Hop", "secret"), ("X-Request-Id", "req-123.abc:9"),
                ]
            )
        )
        #expect(response.status == 200)
        #expect(response.json?["uri"]?.stringValue == "/orders/42?expand=items&x=%41")
        #expect(response.echoedHeader("x-user-subject") == ["alice"])
        #expect(response.echoedHeader("x-user-email") == ["alice@example.com"])
        #expect(response.echoedHeader("x-auth-role").isEmpty)
        #expect(response.echoedHeader("x-hop").isEmpty)
        #expect(response.echoedHeader("connection").isEmpty)
        #expect(response.echoedHeader("x-forwarded-for") == ["127.0.0.1"])
        #expect(response.echoedHeader("x-forwarded-proto") == ["http"])
        #expect(response.echoedHeader("x-forwarded-host") == ["127.0.0.1"])
        #expect(response.echoedHeader("x-request-id") == ["req-123.abc:9"])
        #expect(response.header("x-request-id") == "req-123.abc:9")
        #expect(response.echoedHeader("authorization") == ["Bearer \(token)"])
    }

    /// RFC 9112 §3.2.2: an absolute-form target is routed by its authority, and the backend
    /// gets that authority as Host. A client's `Host` naming another host is refused, not
    /// guessed (docs/forwarding.md, "The canonical host").
    @Test func anAbsoluteFormTargetsAuthorityReplacesHost() async throws {
        let open = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await open.close() }
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = [
                "api": ["urls": [.string(config.backendURL)]], "open": ["urls": [.string(open.baseURL)]],
            ]
            config["routes"] = [
                ["name": "public", "host": "public.example", "pathPrefix": "/", "backend": "open", "auth": "none"],
                ["name": "api", "pathPrefix": "/", "backend": "api"],
            ]
        }
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(
            TestRequest(.GET, "http://Public.Example./x", headers: [("Host", "public.example:80")]))
        #expect(response.status == 200)
        #expect(response.echoedHeader("host") == ["public.example"])
        #expect(open.requestCount == 1 && gateway.backend.requestCount == 0)
        let two = try await gateway.send(
            TestRequest(.GET, "http://public.example/x", headers: [("Host", "api.example")]))
        #expect(two.status == 400)
        #expect(two.json?["type"]?.stringValue == "urn:auth-gateway:problem:request.ambiguous_host")
        #expect(open.requestCount == 1 && gateway.backend.requestCount == 0)
    }

    @Test func malformedRequestIdIsReplaced() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let response = try await gateway.send(
            .get("/", token: TestKeys.token(), headers: [("X-Request-Id", "bad id with spaces")]))
        let generated = try #require(response.header("x-request-id"))
        #expect(generated != "bad id with spaces")
        #expect(RequestID.isWellFormed(generated))
        #expect(response.echoedHeader("x-request-id") == [generated])
    }

    @Test func keepAliveReusesOneUpstreamConnection() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        let token = TestKeys.token()
        for index in 0..<20 {
            let response = try await client.send(.get("/item/\(index)", token: token))
            #expect(response.status == 200)
            #expect(response.json?["uri"]?.stringValue == "/item/\(index)")
        }
        // A second client connection reuses the same idle upstream connection too.
        let other = try await gateway.connect()
        #expect(try await other.send(.get("/again", token: token)).status == 200)
        #expect(gateway.backend.requestCount == 21)
        #expect(gateway.backend.connectionCount == 1)
        await client.close()
        await other.close()
    }

    /// docs/forwarding.md: round robin per request. A keep-alive client (and a pool holding an idle
    /// connection to the first URL) still reaches every URL of the backend.
    @Test func roundRobinIsPerRequestOverKeepAliveConnections() async throws {
        let second = try await EchoBackend.start(group: TestGroup.shared)
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = ["api": ["urls": [.string(config.backendURL), .string(second.baseURL)]]]
        }
        atTestEnd {
            await gateway.stop(); await second.close()
        }
        let client = try await gateway.connect()
        let token = TestKeys.token()
        for index in 0..<10 {
            #expect(try await client.send(.get("/rr/\(index)", token: token)).status == 200)
        }
        #expect(gateway.backend.requestCount == 5)
        #expect(second.requestCount == 5)
        // Each URL is reached over one kept-alive upstream connection.
        #expect(gateway.backend.connectionCount == 1)
        #expect(second.connectionCount == 1)
        await client.close()
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        let token = TestKeys.token()
        let requests = (0..<8).map {
            TestRequest.get($0 == 3 ? "/delay/100" : "/p/\($0)", token: $0 == 5 ? nil : token)
        }
        let responses = try await client.sendPipelined(requests)
        #expect(responses.map(\.status) == [200, 200, 200, 200, 200, 401, 200, 200])
        #expect(responses[0].json?["uri"]?.stringValue == "/p/0")
        #expect(responses[3].json?["uri"]?.stringValue == "/delay/100")
        #expect(responses[7].json?["uri"]?.stringValue == "/p/7")
        await client.close()
    }

    @Test func chunkedRequestAndChunkedResponseAreRelayed() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let raw = try await gateway.raw()
        let token = TestKeys.token()
        try await raw.send(
            "POST /upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )
        #expect(await raw.waitFor { $0.contains("\"sha256\"") })
        // sha256("hello world")
        #expect(raw.received.contains("\"bytes\":11"))
        #expect(raw.received.contains("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"))
        await raw.close()

        let client = try await gateway.connect()
        let response = try await client.send(.get("/bytes/100000?chunked=1", token: token))
        #expect(response.status == 200)
        #expect(response.body.readableBytes == 100_000)
        #expect(response.header("transfer-encoding") == "chunked")
        await client.close()
    }

    @Test func headAndBodylessStatusesCarryNoBody() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        let token = TestKeys.token()
        let head = try await client.send(TestRequest(.HEAD, "/thing", headers: [("Authorization", "Bearer \(token)")]))
        #expect(head.status == 200)
        #expect(head.body.readableBytes == 0)
        let noContent = try await client.send(.get("/status/204", token: token))
        #expect(noContent.status == 204)
        #expect(noContent.body.readableBytes == 0)
        let notModified = try await client.send(.get("/status/304", token: token))
        #expect(notModified.status == 304)
        // The connection is still usable after bodiless responses.
        #expect(try await client.send(.get("/after", token: token)).status == 200)
        await client.close()
    }

    @Test func expectContinueGetsContinueAfterAuthorization() async throws {
        let gateway = try await GatewayFixture.start()
        atTestEnd { await gateway.stop() }
        let raw = try await gateway.raw()
        try await raw.send(
            "POST /form HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(TestKeys.token())\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"
        )
        #expect(await raw.waitFor { $0.hasPrefix("HTTP/1.1 100 Continue\r\n") })
        try await raw.send("ping")
        #expect(await raw.waitFor { $0.contains("\"bytes\":4") })
        // The backend did not see the Expect header: the gateway answered it.
        #expect(!raw.received.lowercased().contains("\"expect\""))
        await raw.close()

        // Unauthorized: a final 401 instead of 100, and the body is never read.
        let refused = try await gateway.raw()
        try await refused.send("POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        #expect(await refused.waitFor { $0.contains("\r\n\r\n") })
        #expect(refused.firstStatus == 401)
        #expect(await refused.waitForClose())
        #expect(gateway.backend.requestCount == 1)
    }

    @Test func routingByHostPathAndMethodWithFirstMatchWinning() async throws {
        let second = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await second.close() }
        let gateway = try await GatewayFixture.start { config in
            config["backends"] = [
                "api": ["urls": [.string(config.backendURL)]], "other": ["urls": [.string(second.baseURL)]],
            ]
            config["routes"] = [
                ["name": "exact", "path": "/exact", "backend": "other", "auth": "none"],
                ["name": "host", "host": "Admin.Example.com", "pathPrefix": "/", "backend": "other", "auth": "none"],
                [
                    "name": "writes", "pathPrefix": "/w/", "methods": ["POST"], "backend": "other", "auth": "none",
                    "stripPathPrefix": true,
                ],
                ["name": "api", "pathPrefix": "/api/", "backend": "api", "auth": "none"],
            ]
        }
        atTestEnd { await gateway.stop() }
        let client = try await gateway.connect()
        #expect(try await client.send(.get("/exact")).status == 200)
        #expect(try await client.send(.get("/exact/more")).status == 404)
        #expect(try await client.send(.get("/x", headers: [("Host", "admin.example.com:8443")])).status == 200)
        let stripped = try await client.send(TestRequest(.POST, "/w/items?q=1", body: "x"))
        #expect(stripped.json?["uri"]?.stringValue == "/items?q=1")
        // GET does not match the POST-only route; matching goes on and finds nothing: 404.
        let notFound = try await client.send(.get("/w/items"))
        #expect(notFound.status == 404)
        #expect(notFound.header("content-type") == "application/problem+json")
        #expect(try await client.send(.get("/api/%2e%2e/exact")).json?["uri"]?.stringValue == "/exact")
        #expect(try await client.send(.get("/api/../../etc")).status == 400)
        #expect(second.requestCount == 4)
        #expect(gateway.backend.requestCount == 0)
        await client.close()
    }
}

extension JSONObject {
    /// The first backend URL of the base configuration (for tests that rebuild `backends`).
    var backendURL: String {
        self["backends"]?["api"]?["urls"]?.arrayValue?.first?.stringValue ?? ""
    }
}
