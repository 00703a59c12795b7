import Foundation
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// Secrets never enter an HPACK dynamic table (RFC 7541 §7.1.3, docs/http2.md, "HPACK and
/// secrets"), checked by an independent HPACK implementation on both sides (Python `h2` and
/// `hpack`: `Fixtures/h2/hpack_peer.py`), which reports each field's representation.
@Suite("HPACK: secrets are never indexed (Python h2 peers, real sockets)", .serialized, .timeLimit(.minutes(3)))
struct HPACKSecretsTests {
    static let peer = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/h2/hpack_peer.py"
    ).path

    /// A field as the peer decoded it.
    struct Field: Equatable, CustomStringConvertible {
        var name: String
        var value: String
        var neverIndexed: Bool
        var description: String { "\(self.name)=\(self.value)\(self.neverIndexed ? " (never indexed)" : "")" }
    }

    static func python() throws -> String {
        let python = try ExternalTool.require("python3", package: "python3")
        guard FileManager.default.fileExists(atPath: Self.peer) else { throw ExternalTool.Missing(name: Self.peer) }
        return python
    }

    static func fields(_ value: JSONValue?) -> [Field] {
        (value?.arrayValue ?? []).compactMap { entry in
            guard let parts = entry.arrayValue, parts.count == 3, let name = parts[0].stringValue,
                let value = parts[1].stringValue,
                case .bool(let neverIndexed) = parts[2]
            else { return nil }
            return Field(name: name, value: value, neverIndexed: neverIndexed)
        }
    }

    static func field(_ name: String, in fields: [Field]) -> Field? {
        fields.first { $0.name == name }
    }

    /// One h2c GET by the Python client: the response's status, its fields, its body.
    static func get(
        port: Int, path: String, headers: [(String, String)] = [], secrets: [(String, String)] = []
    ) async throws -> (
        status: Int, fields: [Field], body: String
    ) {
        var arguments = [Self.peer, "client", "127.0.0.1:\(port)", path]
        for (name, value) in headers { arguments += ["--header", "\(name)=\(value)"] }
        for (name, value) in secrets { arguments += ["--secret", "\(name)=\(value)"] }
        let result = try await ExternalTool.run(try Self.python(), arguments)
        if result.stderr.contains("No module named 'h2'") {
            Issue.record("Python h2 is not installed: pip install h2 (or run .ci/run, which installs it)")
        }
        let report = try JSONValue(parsing: result.stdout)
        return (
            report["status"]?.numberValue?.exactInt ?? 0, Self.fields(report["fields"]),
            report["body"]?.stringValue ?? ""
        )
    }

    /// The Python h2c backend for the duration of `body`, behind a gateway (`protocol: h2c`).
    static func withH2Backend(_ body: (GatewayFixture) async throws -> Void) async throws {
        let server = try BackgroundTool(try Self.python(), [Self.peer, "server"])
        try await withCleanup({ await server.stop() }) {
            let ready = try await server.firstLine()
            let port = try #require(
                ready.hasPrefix("READY ") ? Int(ready.dropFirst(6)) : nil, "hpack_peer.py printed \(ready)")
            let gateway = try await GatewayFixture.start { config in
                config["backends"] = ["api": ["urls": [.string("http://127.0.0.1:\(port)")], "protocol": "h2c"]]
            }
            try await withCleanup({ await gateway.stop() }) { try await body(gateway) }
        }
    }

    /// An HTTP/1.1 client has no say in HPACK: the gateway itself must encode its token and
    /// cookie never-indexed on the shared backend connection; ordinary fields stay indexable.
    @Test func anHTTP1ClientsTokenAndCookieReachAnH2BackendNeverIndexed() async throws {
        try await Self.withH2Backend { gateway in
            let token = TestKeys.token(subject: "hpack-user")
            let response = try await gateway.send(
                TestRequest(
                    .GET, "/secrets",
                    headers: [("Authorization", "Bearer \(token)"), ("Cookie", "session=abc"), ("X-Plain", "p")])
            )
            #expect(response.status == 200)
            let seen = Self.fields(try JSONValue(parsing: response.text)["fields"])
            #expect(
                Self.field("authorization", in: seen)
                    == Field(name: "authorization", value: "Bearer \(token)", neverIndexed: true), "\(seen)")
            #expect(
                Self.field("cookie", in: seen) == Field(name: "cookie", value: "session=abc", neverIndexed: true),
                "\(seen)")
            #expect(Self.field("x-plain", in: seen)?.neverIndexed == false, "\(seen)")
            #expect(Self.field("x-request-id", in: seen)?.neverIndexed == false, "\(seen)")
        }
    }

    /// HTTP/2 on both sides: what a peer sent never-indexed stays never-indexed on the next
    /// hop, both ways, and `set-cookie` is never indexed towards the client.
    @Test func neverIndexedFieldsStaySoAcrossTheGatewayBothWays() async throws {
        try await Self.withH2Backend { gateway in
            let token = TestKeys.token()
            let response = try await Self.get(
                port: gateway.port, path: "/both-ways",
                headers: [("authorization", "Bearer \(token)"), ("x-client-plain", "p")],
                secrets: [("x-client-secret", "client-s3cret")]
            )
            #expect(response.status == 200, "\(response.body)")
            let atBackend = Self.fields(try JSONValue(parsing: response.body)["fields"])
            #expect(
                Self.field("x-client-secret", in: atBackend)
                    == Field(name: "x-client-secret", value: "client-s3cret", neverIndexed: true), "\(atBackend)")
            #expect(Self.field("x-client-plain", in: atBackend)?.neverIndexed == false, "\(atBackend)")
            #expect(Self.field("authorization", in: atBackend)?.neverIndexed == true, "\(atBackend)")

            let atClient = response.fields
            #expect(
                Self.field("x-backend-secret", in: atClient)
                    == Field(name: "x-backend-secret", value: "backend-s3cret", neverIndexed: true), "\(atClient)")
            #expect(Self.field("set-cookie", in: atClient)?.neverIndexed == true, "\(atClient)")
            #expect(Self.field("x-backend-plain", in: atClient)?.neverIndexed == false, "\(atClient)")
        }
    }

    /// The gateway's own secrets towards an HTTP/2 client: the new tokens of a transparent
    /// refresh, and the session cookies it sets.
    @Test func newTokensAndSessionCookiesReachAnH2ClientNeverIndexed() async throws {
        let rainmaker = try await RotatingRainMaker.start()
        try await withCleanup({ await rainmaker.service.stop() }) {
            let gateway = try await RefreshTests.gateway(authService: rainmaker.service.baseURL)
            try await withCleanup({ await gateway.stop() }) {
                let expired = TestKeys.token(subject: "alice", expiresIn: -60)
                let byHeader = try await Self.get(
                    port: gateway.port, path: "/refresh",
                    headers: [
                        ("authorization", "Bearer \(expired)"), ("x-refresh-token", rainmaker.issueRefreshToken()),
                    ]
                )
                #expect(byHeader.status == 200, "\(byHeader.body)")
                let accessToken = try #require(Self.field("x-access-token", in: byHeader.fields), "\(byHeader.fields)")
                #expect(accessToken.neverIndexed)
                #expect(Self.field("x-refresh-token", in: byHeader.fields)?.neverIndexed == true, "\(byHeader.fields)")
                #expect(Self.field("x-request-id", in: byHeader.fields)?.neverIndexed == false, "\(byHeader.fields)")

                let byCookie = try await Self.get(
                    port: gateway.port, path: "/refresh",
                    headers: [("cookie", "access_token=\(expired); refresh_token=\(rainmaker.issueRefreshToken())")]
                )
                #expect(byCookie.status == 200, "\(byCookie.body)")
                let cookies = byCookie.fields.filter { $0.name == "set-cookie" }
                #expect(cookies.count == 2, "\(byCookie.fields)")
                #expect(cookies.allSatisfy { $0.neverIndexed }, "\(cookies)")
            }
        }
    }
}
