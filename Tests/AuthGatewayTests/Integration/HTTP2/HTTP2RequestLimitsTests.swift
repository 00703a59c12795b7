import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// HTTP/2 on the main listener (docs/http2.md), on real sockets: `listener.http2: false`, the
/// body limit and cookies as an HTTP/2 client sends them.
@Suite("HTTP/2 listener switch, body limit and cookies (real sockets)", .awaitsCleanups)
struct HTTP2RequestLimitsTests {
    /// `listener.http2: false`: a client speaking HTTP/2 with prior knowledge gets no HTTP/2
    /// (no SETTINGS frame); its preface is read as what it is to an HTTP/1.1 server, a request
    /// line with version `HTTP/2.0`, and refused with an HTTP/1.1 error, the connection
    /// closed, nothing forwarded. HTTP/1.1 on the same port is served.
    @Test func withHTTP2OffAPriorKnowledgeClientIsRefusedAndHTTP1StillWorks() async throws {
        let gateway = try await GatewayFixture.start { config in config.set("listener.http2", false) }
        atTestEnd { await gateway.stop() }
        let raw = try await gateway.raw()
        atTestEnd { await raw.close() }
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var block = ByteBuffer()
        try encoder.encode(
            headers: H2TestClient.request(path: "/h2", fields: [("authorization", "Bearer \(TestKeys.token())")]),
            to: &block)
        try await raw.send(
            bytes: HTTP2AbuseTests.preface
                + HTTP2AbuseTests.frame(type: 0x1, flags: 0x5, stream: 1, payload: Array(block.readableBytesView)))
        #expect(await raw.waitForClose(timeout: .seconds(10)), "the connection stayed open")
        #expect(raw.received.hasPrefix("HTTP/1.1 "), "not an HTTP/1.1 answer: \(raw.received.prefix(40))")
        let status = try #require(raw.firstStatus)
        #expect(status == 400 || status == 505, "status \(status)")
        #expect(raw.received.lowercased().contains("content-type: application/problem+json"))
        #expect(gateway.backend.requestCount == 0)

        // The same refusal seen by a real HTTP/2 client library (NIOHTTP2): no SETTINGS, no
        // answer. The gateway may close the connection before the client has even set up
        // (then connecting fails: a refusal too).
        if let client = try? await H2TestClient.connect(port: gateway.port) {
            atTestEnd { await client.close() }
            let result = try? await client.exchange(
                [.headers(.init(headers: H2TestClient.request(path: "/h2"), endStream: true))], timeout: .seconds(10))
            #expect(result?.status == nil)
            #expect(
                !client.connectionLevelFrames.contains { if case .settings = $0 { return true } else { return false } })
        }

        let http1 = try await gateway.send(.get("/http1", token: TestKeys.token()))
        #expect(http1.status == 200)
        #expect(gateway.backend.requestCount == 1)
    }

    /// `limits.maxRequestBodyBytes` over HTTP/2: a declared `content-length` over it is
    /// refused with 413 before anything is forwarded; a body without one that grows past it
    /// is refused with 413 too; exactly the limit passes.
    @Test func bodiesOverTheLimitGet413OverHTTP2() async throws {
        let gateway = try await GatewayFixture.start { config in config.set("limits.maxRequestBodyBytes", 1000) }
        atTestEnd { await gateway.stop() }
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        let authorization = ("authorization", "Bearer \(TestKeys.token())")

        let declared = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(
                        "POST", path: "/declared", fields: [authorization, ("content-length", "5000")]),
                    endStream: false)),
            .data(.init(data: .byteBuffer(ByteBuffer(repeating: UInt8(ascii: "a"), count: 5000)), endStream: true)),
        ])
        #expect(declared.status == 413, "\(declared.frames)")
        #expect(declared.headers?.first(name: "content-type") == "application/problem+json")
        #expect(gateway.backend.requestCount == 0, "a declared oversized body was forwarded")

        let streamed = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request("POST", path: "/streamed", fields: [authorization]), endStream: false)
            ),
            .data(.init(data: .byteBuffer(ByteBuffer(repeating: UInt8(ascii: "b"), count: 800)), endStream: false)),
            .data(.init(data: .byteBuffer(ByteBuffer(repeating: UInt8(ascii: "b"), count: 800)), endStream: true)),
        ])
        #expect(streamed.status == 413, "\(streamed.frames)")

        let atLimit = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(
                        "POST", path: "/at-limit", fields: [authorization, ("content-length", "1000")]),
                    endStream: false)),
            .data(.init(data: .byteBuffer(ByteBuffer(repeating: UInt8(ascii: "c"), count: 1000)), endStream: true)),
        ])
        #expect(atLimit.status == 200)
        #expect(
            (try? JSONValue(parsing: String(buffer: atLimit.body)))?["body"]?["bytes"]?.numberValue?.exactInt == 1000)
    }

    /// Cookies over HTTP/2 (RFC 9113 §8.2.3): a client may split the cookie header into one
    /// field per cookie. The access token in one of them authenticates the request, and the
    /// HTTP/1.1 backend gets one `Cookie` header joined with "; ".
    @Test func anAccessTokenInASplitCookieFieldAuthenticates() async throws {
        let gateway = try await GatewayFixture.start { config in
            config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
        }
        atTestEnd { await gateway.stop() }
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }
        let token = TestKeys.token(subject: "cookie-h2")
        let result = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(
                        path: "/cookies", fields: [("cookie", "theme=dark"), ("cookie", "access_token=\(token)")]),
                    endStream: true))
        ])
        #expect(result.status == 200)
        let echoed = try #require(try? JSONValue(parsing: String(buffer: result.body)))
        #expect(echoed["headers"]?["x-user-subject"]?.arrayValue?.compactMap(\.stringValue) == ["cookie-h2"])
        #expect(
            echoed["headers"]?["cookie"]?.arrayValue?.compactMap(\.stringValue) == ["theme=dark; access_token=\(token)"]
        )

        // A forged token in a cookie field is refused like on HTTP/1.1.
        let forged = TestKeys.token(signer: TestKeys.otherRSA, subject: "cookie-h2")
        let refused = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(path: "/cookies", fields: [("cookie", "access_token=\(forged)")]),
                    endStream: true))
        ])
        #expect(refused.status == 401)
        #expect(gateway.backend.requestCount == 1)
    }
}
