import Foundation
import NIOCore
import NIOEmbedded
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `ProfileCache` (docs/authentication.md) in one embedded worker: the profile endpoint and the
/// backend are embedded channels, the clock is the test's, so freshness, staleness and refusal are
/// checked byte by byte without sockets or waiting.
@Suite("ProfileCache (embedded channels)")
struct ProfileCacheTests {
    static let authService = "10.0.0.9:9000"
    static let backend = "10.0.0.1:8001"

    static func configuration(ttl: Int, stale: Int) -> String {
        """
        {"listener":{"host":"127.0.0.1","port":0},"eventLoopThreads":1,
         "tokens":{"issuers":[{"issuer":"\(TestKeys.issuer)","audiences":["\(TestKeys.audience)"],"leewaySeconds":0,
           "keys":[{"kid":"test-rs","algorithm":"RS256","publicKeyPEM":\(JSONValue.string(TestKeys.rsa.publicKeyPEM).jsonText)}]}]},
         "authService":{"url":"http://\(authService)","profile":{"path":"/v1/user","authorization":"bearer","ttlSeconds":\(ttl),"staleSeconds":\(stale)}},
         "identityHeaders":{"X-User-Id":"profile.user_id"},
         "backends":{"api":{"urls":["http://\(backend)"]}},
         "routes":[{"name":"all","pathPrefix":"/","backend":"api"}],
         "logging":{"accessLog":false}}
        """
    }

    /// A gateway whose clock the test moves, and one client connection to it.
    struct Rig {
        let gateway: EmbeddedGateway
        let clock: TestClock
        let client: EmbeddedChannel
        let token: String

        init(ttl: Int = 60, stale: Int = 60) throws {
            let clock = TestClock(fixed: Date().timeIntervalSince1970)
            self.clock = clock
            self.gateway = try EmbeddedGateway(
                configuration: ProfileCacheTests.configuration(ttl: ttl, stale: stale), clock: clock.function)
            self.client = try self.gateway.connectClient()
            self.token = TestKeys.token(subject: "ana", now: clock.now, expiresIn: 3600)
        }

        func send(_ path: String) throws {
            try self.client.writeInbound(
                ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer \(self.token)\r\n\r\n"))
            self.gateway.loop.run()
        }

        /// The connections to `target` opened so far.
        func upstreams(to target: String) -> [EmbeddedChannel] {
            zip(self.gateway.upstreams, self.gateway.upstreamTargets).filter { $0.1 == target }.map(\.0)
        }

        /// What was written to `target` since the last call, over all its connections.
        func sent(to target: String) throws -> String {
            try self.upstreams(to: target).map(ProfileCacheTests.written).joined()
        }

        func answer(_ target: String, _ response: String) throws {
            let channel = try #require(self.upstreams(to: target).last)
            try channel.writeInbound(ByteBuffer(string: response))
            self.gateway.loop.run()
        }

        func answerProfile(_ json: String, status: String = "200 OK") throws {
            try self.answer(
                ProfileCacheTests.authService,
                "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
            )
        }
    }

    static func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let part = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: part) }
        return text
    }

    static let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    @Test func aMissFetchesOnceWithTheTokenAndLaterRequestsAreServedFromTheCache() throws {
        let rig = try Rig()
        try rig.send("/first")

        let fetch = try rig.sent(to: Self.authService)
        #expect(fetch.hasPrefix("GET /v1/user HTTP/1.1\r\n"))
        #expect(fetch.contains("Authorization: Bearer \(rig.token)\r\n"))
        // The request waits for the profile: nothing reached the backend yet.
        #expect(try rig.sent(to: Self.backend).isEmpty)

        try rig.answerProfile(#"{"user_id":"id-ana"}"#)
        let forwarded = try rig.sent(to: Self.backend)
        #expect(forwarded.hasPrefix("GET /first HTTP/1.1\r\n"))
        #expect(forwarded.contains("X-User-Id: id-ana\r\n"))
        try rig.answer(Self.backend, Self.ok)
        #expect(try Self.written(rig.client).hasPrefix("HTTP/1.1 200 OK\r\n"))

        // Within the TTL: no second fetch.
        rig.clock.advance(by: 59)
        try rig.send("/second")
        #expect(try rig.sent(to: Self.authService).isEmpty)
        #expect(try rig.sent(to: Self.backend).contains("X-User-Id: id-ana\r\n"))
    }

    @Test func aStaleProfileIsServedAtOnceWhileOneFetchRefreshesIt() throws {
        let rig = try Rig(ttl: 60, stale: 60)
        try rig.send("/first")
        try rig.answerProfile(#"{"user_id":"id-ana"}"#)
        _ = try rig.sent(to: Self.backend)
        try rig.answer(Self.backend, Self.ok)
        _ = try Self.written(rig.client)

        rig.clock.advance(by: 90)
        try rig.send("/stale")
        // Served with the stale profile without waiting…
        #expect(try rig.sent(to: Self.backend).contains("X-User-Id: id-ana\r\n"))
        // …while a refresh is under way.
        #expect(try rig.sent(to: Self.authService).hasPrefix("GET /v1/user HTTP/1.1\r\n"))
        try rig.answer(Self.backend, Self.ok)
        _ = try Self.written(rig.client)
        try rig.answerProfile(#"{"user_id":"id-ana-2"}"#)

        try rig.send("/fresh")
        #expect(try rig.sent(to: Self.authService).isEmpty)
        #expect(try rig.sent(to: Self.backend).contains("X-User-Id: id-ana-2\r\n"))
    }

    @Test func aRefusedProfileRefusesTheRequestAndIsNotRemembered() throws {
        let rig = try Rig()
        try rig.send("/x")
        try rig.answerProfile(#"{"error":"invalid_token"}"#, status: "401 Unauthorized")

        let answer = try Self.written(rig.client)
        #expect(answer.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"))
        #expect(try rig.sent(to: Self.backend).isEmpty)
        // The next request asks again.
        try rig.send("/y")
        #expect(try rig.sent(to: Self.authService).hasPrefix("GET /v1/user HTTP/1.1\r\n"))
    }
}
