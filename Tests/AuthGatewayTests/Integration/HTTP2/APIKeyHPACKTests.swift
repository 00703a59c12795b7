import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// An API key never enters an HPACK dynamic table, in either direction (docs/policies.md, "API
/// keys"; docs/http2.md), checked by Python `h2`/`hpack` on both sides of the gateway
/// (`Fixtures/h2/hpack_peer.py`): the key header is never forwarded to an HTTP/2 backend —
/// however the client encoded it, on a key route or an `auth: none` one — and a key header a
/// backend sends back reaches an HTTP/2 client never-indexed.
@Suite("HPACK: API keys (Python h2 peers, real sockets)", .serialized, .timeLimit(.minutes(3)), .awaitsCleanups)
struct APIKeyHPACKTests {
    static let key = APIKeyEntry.new(id: "h2-bot")

    /// The Python h2c backend behind a gateway that takes `key` in `X-API-Key`.
    static func withGateway(_ body: (GatewayFixture) async throws -> Void) async throws {
        let server = try BackgroundTool(try HPACKSecretsTests.python(), [HPACKSecretsTests.peer, "server"])
        try await withCleanup({ await server.stop() }) {
            let ready = try await server.firstLine()
            let port = try #require(
                ready.hasPrefix("READY ") ? Int(ready.dropFirst(6)) : nil, "hpack_peer.py printed \(ready)")
            var entry = Self.key.entry
            entry.claims = ["sub": "h2-bot"]
            let gateway = try await GatewayFixture.start { config in
                config["backends"] = ["api": ["urls": [.string("http://127.0.0.1:\(port)")], "protocol": "h2c"]]
                config.set("tokens.apiKeys", ["header": "X-API-Key", "keys": [entry.json]])
                config["identityHeaders"] = ["X-User-Subject": "claims.sub"]
                config["routes"] = [
                    ["name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "none"],
                    ["name": "default", "pathPrefix": "/", "backend": "api"],
                ]
            }
            try await withCleanup({ await gateway.stop() }) { try await body(gateway) }
        }
    }

    @Test func theKeyNeverReachesAnH2BackendHoweverTheClientEncodedIt() async throws {
        try await Self.withGateway { gateway in
            for path in ["/keyed/x", "/open/x"] {
                for neverIndexed in [false, true] {
                    let pair = [("x-api-key", Self.key.key)]
                    let response = try await HPACKSecretsTests.get(
                        port: gateway.port, path: path, headers: (neverIndexed ? [] : pair) + [("x-plain", "p")],
                        secrets: neverIndexed ? pair : [])
                    #expect(response.status == 200, "\(path): \(response.body)")
                    let atBackend = HPACKSecretsTests.fields(try JSONValue(parsing: response.body)["fields"])
                    #expect(HPACKSecretsTests.field("x-api-key", in: atBackend) == nil, "\(path): \(atBackend)")
                    #expect(!response.body.contains(Self.key.key), "\(path)")
                    #expect(HPACKSecretsTests.field("x-plain", in: atBackend)?.neverIndexed == false, "\(atBackend)")
                    if path == "/keyed/x" {
                        #expect(
                            HPACKSecretsTests.field("x-user-subject", in: atBackend)?.value == "h2-bot", "\(atBackend)")
                    }
                }
            }
            // An HTTP/1.1 client's key does not reach the HTTP/2 backend either.
            let http1 = try await gateway.send(TestRequest(.GET, "/keyed/y", headers: [("X-API-Key", Self.key.key)]))
            #expect(http1.status == 200)
            let seen = HPACKSecretsTests.fields(try JSONValue(parsing: http1.text)["fields"])
            #expect(HPACKSecretsTests.field("x-api-key", in: seen) == nil, "\(seen)")
        }
    }

    @Test func aKeyHeaderFromTheBackendReachesAnH2ClientNeverIndexed() async throws {
        try await Self.withGateway { gateway in
            let response = try await HPACKSecretsTests.get(
                port: gateway.port, path: "/open/echo", headers: [("x-respond-with", "x-api-key=agk_from-backend")])
            #expect(response.status == 200, "\(response.body)")
            let field = try #require(HPACKSecretsTests.field("x-api-key", in: response.fields), "\(response.fields)")
            #expect(field.value == "agk_from-backend")
            #expect(field.neverIndexed, "the backend sent it indexable; the gateway must not")
            #expect(HPACKSecretsTests.field("x-backend-plain", in: response.fields)?.neverIndexed == false)
        }
    }
}
