import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// API keys over real sockets (docs/policies.md, "API keys"): a key's claims reach the
/// requirements and the identity headers, the key never reaches the backend or the log, bad
/// keys are 401 and a key with a token 400, and a reload (SIGHUP) reads the keys file again.
@Suite("API keys (real sockets)", .serialized, .timeLimit(.minutes(5)), .awaitsCleanups)
struct APIKeyTests {
    static let key = APIKeyEntry.new(id: "ci-bot")
    static let other = APIKeyEntry.new(id: "next-bot")
    static let reader = APIKeyEntry.new(id: "reader-bot")

    /// A keys file (absolute path, in a folder of its own) holding `keys`, each with the
    /// claims `{"sub": id, "scope": "deploy"}`.
    static func writeKeysFile(_ keys: [APIKeyEntry], to path: String) throws {
        let entries: [JSONValue] = keys.map { key in
            var entry = key
            entry.claims = ["sub": .string(key.id), "scope": "deploy read"]
            return entry.json
        }
        try JSONValue.array(entries).jsonText.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func keysFolder() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apikeys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A gateway reading `key` from a keys file in a folder of its own; both go when the test ends.
    static func gatewayWithKeysFile() async throws -> (gateway: GatewayFixture, keysFile: String) {
        let folder = try Self.keysFolder()
        atTestEnd { try? FileManager.default.removeItem(at: folder) }
        let keysFile = folder.appendingPathComponent("keys.json").path
        try Self.writeKeysFile([Self.key.entry], to: keysFile)
        let gateway = try await GatewayFixture.start { Self.configure(&$0, keysFile: keysFile) }
        atTestEnd { await gateway.stop() }
        return (gateway, keysFile)
    }

    static func configure(_ config: inout JSONObject, keysFile: String) {
        config.set("tokens.apiKeys", ["keysFile": .string(keysFile)])
        config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Scope": "claims.scope"]
        config["routes"] = [
            ["name": "deploy", "pathPrefix": "/deploy/", "backend": "api", "require": ["claims.scope": "deploy"]],
            ["name": "default", "pathPrefix": "/", "backend": "api"],
        ]
    }

    @Test("a key is accepted, its claims reach the identity headers, and the key header is not forwarded")
    func accepted() async throws {
        let gateway = try await Self.gatewayWithKeysFile().gateway

        let served = try await gateway.send(TestRequest(.GET, "/deploy/run", headers: [("X-API-Key", Self.key.key)]))
        #expect(served.status == 200, "\(served.text)")
        #expect(served.echoedHeader("x-user-subject") == ["ci-bot"])
        #expect(served.echoedHeader("x-user-scope") == ["deploy read"])
        #expect(served.echoedHeader("x-api-key").isEmpty, "the key never reaches the backend")
        #expect(!served.text.contains(Self.key.key))
        // The same request over HTTP/2 would run the same planner; a JWT still works beside keys.
        let jwt = try await gateway.send(.get("/other", token: TestKeys.token(subject: "alice")))
        #expect(jwt.status == 200)
        #expect(jwt.echoedHeader("x-user-subject") == ["alice"])
        #expect(gateway.backend.requestCount == 2)
    }

    @Test("unknown, hostile and expired keys are 401 apikey.invalid; a key with a bearer token is 400")
    func refusals() async throws {
        let folder = try Self.keysFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let keysFile = folder.appendingPathComponent("keys.json").path
        var expired = Self.other.entry
        expired.claims = ["sub": "old"]
        expired.expiresAt = 1_000_000_000
        var reader = Self.reader.entry
        reader.claims = ["sub": "reader-bot", "scope": "read"]
        try JSONValue.array([Self.key.entry.json, expired.json, reader.json]).jsonText.write(
            toFile: keysFile, atomically: true, encoding: .utf8)
        let gateway = try await GatewayFixture.start { Self.configure(&$0, keysFile: keysFile) }
        atTestEnd { await gateway.stop() }

        for bad in [
            "agk_unknown", Self.key.key + "x", String(Self.key.key.dropLast()), Self.other.key,
            String(repeating: "k", count: 4000),
        ] {
            let response = try await gateway.send(TestRequest(.GET, "/deploy/run", headers: [("X-API-Key", bad)]))
            #expect(response.status == 401, "\(bad.prefix(12))")
            #expect(response.json?["type"]?.stringValue == "urn:auth-gateway:problem:apikey.invalid")
            // RFC 9110 §15.5.2: every 401 is challenged (docs/errors.md); a key is no bearer
            // token, so no error attribute (RFC 6750 §3.1).
            #expect(response.headers["WWW-Authenticate"] == [#"Bearer realm="auth-gateway""#], "\(bad.prefix(12))")
        }
        let both = try await gateway.send(
            TestRequest(
                .GET, "/deploy/run",
                headers: [("X-API-Key", Self.key.key), ("Authorization", "Bearer \(TestKeys.token())")]))
        #expect(both.status == 400)
        #expect(both.json?["type"]?.stringValue == "urn:auth-gateway:problem:apikey.ambiguous")
        // A key without the scope a route requires is 403 like a token would be.
        let forbidden = try await gateway.send(
            TestRequest(.GET, "/deploy/run", headers: [("X-API-Key", Self.reader.key)]))
        #expect(forbidden.status == 403, "\(forbidden.text)")
        #expect(forbidden.json?["type"]?.stringValue == "urn:auth-gateway:problem:access.forbidden")
        #expect(
            forbidden.json?["detail"]?.stringValue
                == "The request does not satisfy the route requirement routes[0].require[\"claims.scope\"]")
        #expect(!forbidden.text.contains(Self.reader.key))
        // The same key where its claims suffice: accepted, so the 403 was the requirement's.
        let allowed = try await gateway.send(TestRequest(.GET, "/other", headers: [("X-API-Key", Self.reader.key)]))
        #expect(allowed.status == 200)
        #expect(allowed.echoedHeader("x-user-subject") == ["reader-bot"])
        #expect(gateway.backend.requestCount == 1)
    }

    /// The same refusal over HTTP/2 and to a gRPC call (a Trailers-Only answer, docs/http2.md):
    /// the challenge travels with it.
    @Test("a refused key is challenged over HTTP/2 and gRPC too")
    func refusalOverHTTP2AndGRPC() async throws {
        let gateway = try await Self.gatewayWithKeysFile().gateway
        let client = try await H2TestClient.connect(port: gateway.port)
        atTestEnd { await client.close() }

        let plain = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(path: "/deploy/run", fields: [("x-api-key", "agk_unknown")]),
                    endStream: true))
        ])
        #expect(plain.status == 401)
        #expect(plain.headers?["www-authenticate"] == [#"Bearer realm="auth-gateway""#])

        var message = ByteBuffer(bytes: [0, 0, 0, 0, 2])
        message.writeString("hi")
        let call = try await client.exchange([
            .headers(
                .init(
                    headers: H2TestClient.request(
                        "POST", path: "/deploy/test.Echo/Unary",
                        fields: [
                            ("content-type", "application/grpc"), ("te", "trailers"), ("x-api-key", "agk_unknown"),
                        ]
                    ))),
            .data(.init(data: .byteBuffer(message), endStream: true)),
        ])
        let trailers = try #require(call.finalHeaders)
        #expect(trailers.first(name: ":status") == "200")
        #expect(trailers.first(name: "grpc-status") == "16")
        #expect(trailers["www-authenticate"] == [#"Bearer realm="auth-gateway""#])
        #expect(gateway.backend.requestCount == 0)
    }

    @Test("a reload reads the keys file again: a new key works, a removed one is refused")
    func reloadReadsTheKeysFile() async throws {
        let (gateway, keysFile) = try await Self.gatewayWithKeysFile()
        func status(_ key: String) async throws -> Int {
            try await gateway.send(TestRequest(.GET, "/deploy/run", headers: [("X-API-Key", key)])).status
        }
        #expect(try await status(Self.key.key) == 200)
        #expect(try await status(Self.other.key) == 401)
        try Self.writeKeysFile([Self.other.entry], to: keysFile)
        try gateway.reload { Self.configure(&$0, keysFile: keysFile) }
        #expect(await eventually { (try? await status(Self.other.key)) == 200 }, "the new key applies")
        #expect(try await status(Self.key.key) == 401)
    }

    /// The real `serve` process: SIGHUP reloads the keys file, and the access log names the
    /// key by its id, never by its value.
    @Test("serve: SIGHUP reloads the keys file; the access log has the key's id, never the key")
    func sighupAndAccessLog() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        let folder = try Self.keysFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let keysFile = folder.appendingPathComponent("keys.json").path
        try Self.writeKeysFile([Self.key.entry], to: keysFile)
        var configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1)
        Self.configure(&configuration, keysFile: keysFile)
        let gateway = try RunningGateway(configuration: configuration)
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        func send(_ key: String, id: String) async throws -> Int {
            try await TestConnection.connect(port: port).send(
                TestRequest(.GET, "/deploy/run", headers: [("X-API-Key", key), ("X-Request-Id", id)])
            ).status
        }
        #expect(try await send(Self.key.key, id: "apikey-log-1") == 200)
        #expect(try await send(Self.other.key, id: "apikey-log-2") == 401)

        try Self.writeKeysFile([Self.other.entry], to: keysFile)
        gateway.signal(SIGHUP)
        #expect(try await gateway.waitForOutput { $0.contains("config.reloaded") })
        #expect(try await send(Self.other.key, id: "apikey-log-3") == 200)
        #expect(try await send(Self.key.key, id: "apikey-log-4") == 401)

        #expect(try await gateway.waitForOutput { $0.contains("apikey-log-4") })
        let lines = AccessLogTests.lines(gateway.standardOutput)
        #expect(lines["apikey-log-1"]?["apiKey"]?.stringValue == "ci-bot")
        #expect(lines["apikey-log-1"]?["sub"]?.stringValue == "ci-bot")
        #expect(lines["apikey-log-2"]?["error"]?.stringValue == "apikey.invalid")
        #expect(lines["apikey-log-3"]?["apiKey"]?.stringValue == "next-bot")
        #expect(!gateway.output.contains(Self.key.key) && !gateway.output.contains(Self.other.key))
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(30)) == 0)
    }

    @Test("the executable: apikey new prints a usable entry; check --request exits 0 allowed, 3 refused, 1 invalid")
    func executable() async throws {
        let made = try await ProcessTests.run(["apikey", "new", "--id", "ci-bot"])
        #expect(made.status == 0, "\(made.output)")
        let lines = made.output.split(separator: "\n").map(String.init)
        let key = try #require(lines.first { $0.hasPrefix("agk_") }, "\(made.output)")
        let entry = try #require(lines.first { $0.hasPrefix("{") }, "\(made.output)")
        let folder = try Self.keysFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("gateway.json").path
        try """
        {"listener": {}, "backends": {"api": {"urls": ["http://127.0.0.1:9100"]}},
         "tokens": {"apiKeys": {"keys": [\(entry)]}},
         "identityHeaders": {"X-User-Subject": "claims.sub"},
         "routes": [{"name": "all", "pathPrefix": "/", "backend": "api", "require": {"claims.sub": "ci-bot"}}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let allowed = try await ProcessTests.run([
            "check", "--config", path, "--request", "GET https://api.example.com/x", "--header", "X-API-Key: \(key)",
        ])
        #expect(allowed.status == 0, "\(allowed.output)")
        #expect(allowed.output.contains("X-User-Subject: ci-bot"))
        let refused = try await ProcessTests.run([
            "check", "--config", path, "--request", "GET /x", "--header", "X-API-Key: agk_wrong",
        ])
        #expect(refused.status == 3, "\(refused.output)")
        #expect(refused.output.contains("apikey.invalid"))
        let plain = try await ProcessTests.run(["check", "--config", path])
        #expect(plain.status == 0)
        #expect(plain.output.contains("OK"))
        try "{}".write(toFile: path, atomically: true, encoding: .utf8)
        let invalid = try await ProcessTests.run(["check", "--config", path, "--request", "GET /x"])
        #expect(invalid.status == 1)
    }
}
