import Foundation
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// A browser session's WebSocket tunnels end with the session, on every instance
    /// (docs/streams.md, "Revocation"): two gateways on one PostgreSQL database, a tunnel
    /// opened with the session cookie through instance B (a real `websockets` client and
    /// backend), the session ended on instance A — by a sign-out, a back-channel logout from
    /// the provider, or a Shared Signals `session-revoked` from a test transmitter (`joserfc`).
    @Suite(
        "Streams revoked with their session across instances (PostgreSQL)", .serialized, .timeLimit(.minutes(3)),
        .awaitsCleanups)
    struct StreamRevocationTests {
        static let transmitter = ProcessTests.packageRoot.appendingPathComponent(
            "Tests/AuthGatewayTests/Fixtures/signals/set_transmitter.py"
        ).path
        static let transmitterIssuer = "https://transmitter.test"

        /// The transmitter's key (made once per run): its folder and public PEM. Made by a child
        /// process waited for off the cooperative pool (`ExternalTool.run`): a blocking wait
        /// there stalls every other test of the run while Python starts.
        static let transmitterKeyMaking = Task { () throws -> (directory: String, pem: String) in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "set-transmitter-\(UUID().uuidString)"
            ).path
            let result = try await ExternalTool.run(
                try ExternalTool.require("python3", package: "python3"), [Self.transmitter, "keygen", directory],
                timeout: .seconds(60))
            guard result.status == 0 else { throw KeygenFailed(standardError: result.stderr) }
            return (directory, result.stdout)
        }

        struct KeygenFailed: Error { let standardError: String }

        static var transmitterKey: (directory: String, pem: String) {
            get async throws { try await Self.transmitterKeyMaking.value }
        }

        /// Two instances with the WebSocket backend on route `live` (before the app's routes),
        /// and the signals receiver on both.
        static func instances(_ backend: WebSocketPeers.Backend) async throws -> (a: SignInFixture, b: SignInFixture) {
            let cluster = try await PostgresCluster.shared()
            let database = try await cluster.createDatabase()
            let key = try await Self.transmitterKey
            let fixtures = try await SignInFixture.start(
                instances: 2,
                sharedState: [
                    "postgres": ["url": .string(cluster.gatewayURL(database: database)), "tls": "disable"],
                    "encryptionKeyBase64": "${STATE_KEY}",
                ],
                environment: cluster.environment.merging(["STATE_KEY": SharedStateTesting.keyBase64]) { $1 }
            ) { document in
                if case .object(var backends)? = document["backends"] {
                    backends["ws"] = ["urls": [.string(backend.url)]]
                    document["backends"] = .object(backends)
                }
                if case .array(let routes)? = document["routes"] {
                    document["routes"] = .array([["name": "live", "pathPrefix": "/live/", "backend": "ws"]] + routes)
                }
                if case .object(var tokens)? = document["tokens"], case .array(var issuers)? = tokens["issuers"] {
                    issuers.append([
                        "issuer": .string(Self.transmitterIssuer),
                        "keys": [["kid": "transmitter", "algorithm": "RS256", "publicKeyPEM": .string(key.pem)]],
                    ])
                    tokens["issuers"] = .array(issuers)
                    document["tokens"] = .object(tokens)
                }
                document["signals"] = ["issuer": .string(Self.transmitterIssuer), "audience": "gateway"]
            }
            for fixture in fixtures {
                try await SharedStateTesting.eventually("the instance keeps sessions in the database") {
                    let sessions = try SharedSessionsTests.sessions(fixture)
                    return sessions.isInUse
                        && fixture.gateway.application.shared.sharedState?.wakeups.isListening == true
                }
            }
            atTestEnd {
                await fixtures[1].stop(); await fixtures[0].stop()
            }
            return (fixtures[0], fixtures[1])
        }

        /// A browser signed in on `a`, whose session tunnel through `b` is open; the tunnel's
        /// report, once it closes.
        static func openTunnel(
            _ a: SignInFixture, _ b: SignInFixture, _ backend: WebSocketPeers.Backend
        ) async throws -> (ScriptedBrowser, Task<JSONValue, Error>) {
            var browser = ScriptedBrowser()
            _ = try await a.signIn(&browser, to: "/")
            let cookie = try #require(browser.cookieHeader.first?.1)
            let opened = backend.opened.count
            let port = b.gateway.port
            let tunnel = Task {
                try await WebSocketPeers.client(port: port, path: "/live/feed", cookie: cookie, timeout: 30)
            }
            try await poll { backend.opened.count == opened + 1 }
            return (browser, tunnel)
        }

        /// The transmitter's SET for `arguments`.
        static func set(_ arguments: [String]) async throws -> String {
            let key = try await Self.transmitterKey
            let result = try await ExternalTool.run(
                try WebSocketPeers.python(),
                [Self.transmitter, "sign", key.directory, "--iss", Self.transmitterIssuer] + arguments)
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        static func deliver(_ set: String, to fixture: SignInFixture) async throws -> TestResponse {
            try await fixture.gateway.send(
                TestRequest(
                    .POST, "/.gateway/signals",
                    headers: [("Content-Type", "application/secevent+jwt"), ("Accept", "application/json")], body: set))
        }

        /// `tunnel` ended as the session did, on the instance that was notified: within a second on
        /// an idle machine (docs/streams.md), 5 s allowed for a loaded 2-core one. Without the
        /// notification the tunnel would stay open until the client's own timeout.
        static func expectClosed(
            _ tunnel: Task<JSONValue, Error>, since: Double, reason: String, backend: WebSocketPeers.Backend, count: Int
        ) async throws {
            let report = try await tunnel.value
            #expect(report["code"]?.numberValue?.exactInt == 1008, "\(report)")
            #expect(report["reason"]?.stringValue == "session ended")
            let took = (report["at"]?.numberValue?.double ?? .infinity) - since
            #expect(took <= 5, "the tunnel on the other instance closed \(took) s after the \(reason)")
            try await poll { backend.closed.count == count }
            #expect(backend.closed.last?["code"]?.numberValue?.exactInt == 1008)
        }

        @Test func aSignOutOnOneInstanceClosesTheSessionsTunnelOnTheOther() async throws {
            let backend = try await WebSocketPeers.backend()
            let (a, b) = try await Self.instances(backend)
            var (browser, tunnel) = try await Self.openTunnel(a, b, backend)
            let signedOut = Date().timeIntervalSince1970
            let out = try await browser.send(
                a.gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
            #expect(out.status == 302)
            try await Self.expectClosed(tunnel, since: signedOut, reason: "sign-out", backend: backend, count: 1)
            let metrics = try await b.metrics()
            #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"sign_out\"} 1"), "\(metrics)")
        }

        @Test func aBackChannelLogoutClosesTheSessionsTunnelOnTheOtherInstance() async throws {
            let backend = try await WebSocketPeers.backend()
            let (a, b) = try await Self.instances(backend)
            let (browser, tunnel) = try await Self.openTunnel(a, b, backend)
            let record = try #require(try SharedSessionsTests.held(b, browser))
            let loggedOut = Date().timeIntervalSince1970
            try await SharedSessionsTests.logOut(sid: record.providerSessionID, sub: nil, on: a)
            try await Self.expectClosed(
                tunnel, since: loggedOut, reason: "back-channel logout", backend: backend, count: 1)
            let metrics = try await b.metrics()
            #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"backchannel\"} 1"), "\(metrics)")
        }

        @Test func aSessionRevokedSignalEndsTheSessionAndItsTunnelAndIsRefusedWhenReplayedOrWrong() async throws {
            let backend = try await WebSocketPeers.backend()
            let (a, b) = try await Self.instances(backend)
            let (browser, tunnel) = try await Self.openTunnel(a, b, backend)
            let record = try #require(try SharedSessionsTests.held(b, browser))
            let sid = try #require(record.providerSessionID)

            // Refused, and nothing ended: a wrong audience, an unknown key, an unsigned SET, a
            // stale one, one from the future.
            let refusals: [([String], String)] = [
                (["--aud", "someone-else"], "invalid_audience"),
                (["--aud", "gateway", "--kid", "unknown"], "invalid_key"),
                (["--aud", "gateway", "--unsigned"], "authentication_failed"),
                (["--aud", "gateway", "--iat-offset", "-3600"], "invalid_request"),
                (["--aud", "gateway", "--iat-offset", "3600"], "invalid_request"),
            ]
            for (arguments, code) in refusals {
                let set = try await Self.set(arguments + ["--event", "session-revoked", "--sid", sid])
                let answer = try await Self.deliver(set, to: a)
                #expect(answer.status == 400, "\(arguments): \(answer.status) \(answer.text)")
                let document = try JSONValue(parsing: answer.text)
                #expect(document["err"]?.stringValue == code, "\(arguments): \(answer.text)")
            }
            var probe = browser
            #expect(try await probe.get(b.gateway, "/api/x", headers: SharedSessionsTests.json).status == 200)
            #expect(backend.closed.isEmpty)

            let set = try await Self.set([
                "--aud", "gateway", "--event", "session-revoked", "--sid", sid, "--jti", "j-1",
            ])
            let revoked = Date().timeIntervalSince1970
            #expect(try await Self.deliver(set, to: a).status == 202)
            try await Self.expectClosed(tunnel, since: revoked, reason: "signal", backend: backend, count: 1)
            #expect(try await probe.get(b.gateway, "/api/x", headers: SharedSessionsTests.json).status == 401)

            // The same jti again, on either instance: refused (the replay cache is shared).
            for fixture in [a, b] {
                let replay = try await Self.deliver(set, to: fixture)
                #expect(replay.status == 400, "\(replay.text)")
                #expect(try JSONValue(parsing: replay.text)["err"]?.stringValue == "invalid_request")
            }
            let metrics = try await b.metrics()
            #expect(metrics.contains("auth_gateway_streams_closed_total{reason=\"signal\"} 1"), "\(metrics)")
        }
    }
}
