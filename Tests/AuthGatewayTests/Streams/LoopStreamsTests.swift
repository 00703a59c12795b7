import NIOHTTP1
import Testing

@testable import AuthGateway

/// One loop's registry of long-lived streams (docs/streams.md) with stand-in owners: what a
/// revocation and a reload end, what they leave, what is counted.
@Suite("LoopStreams")
struct LoopStreamsTests {
    final class Owner: StreamOwner {
        var ended: [StreamCloseReason] = []
        func endStream(_ reason: StreamCloseReason) { self.ended.append(reason) }
    }

    static func route(_ name: String, require: Requirement = .empty) -> RouteConfiguration {
        RouteConfiguration(
            name: name, host: nil, pathMatch: .prefix("/"), methods: nil, backend: "b", auth: .required,
            require: require, stripPathPrefix: false, forwardAccessToken: true)
    }

    static func stream(
        _ owner: Owner, session: TokenDigest? = nil, sid: String? = nil, subject: String? = "alice",
        route: String = "live"
    ) -> OpenStream {
        OpenStream(
            owner: owner, route: route,
            credential: StreamCredential(
                tokenExpiresAt: 100, session: session, providerSessionID: sid, subject: subject),
            settings: StreamsConfiguration(), identity: nil, request: nil)
    }

    @Test("a sign-out ends only its session's streams, once, counted; a subject's revocation all of its streams")
    func revokeSession() {
        let metrics = WorkerMetrics()
        let streams = LoopStreams(metrics: metrics)
        let session = TokenDigest(of: "handle"[...])
        let (mine, other, bearer) = (Owner(), Owner(), Owner())
        streams.opened(Self.stream(mine, session: session, sid: "s1"))
        streams.opened(Self.stream(other, session: TokenDigest(of: "other"[...]), sid: "s2"))
        streams.opened(Self.stream(bearer))
        #expect(metrics.values.gauges[.openStreams(route: "live")] == 3)
        streams.revoke(.session(session), reason: .signOut)
        streams.revoke(.session(session), reason: .signOut)
        #expect(mine.ended == [.signOut] && other.ended.isEmpty && bearer.ended.isEmpty)
        #expect(metrics.values.counters[.streamsClosed(.signOut)] == 1)
        let bob = Owner()
        streams.opened(Self.stream(bob, subject: "bob"))
        streams.revoke(.sessions(providerSessionID: nil, subject: "alice"), reason: .backchannel)
        #expect(other.ended == [.backchannel] && bearer.ended == [.backchannel] && bob.ended.isEmpty)
        streams.closed(bob)
        #expect(streams.count == 0 && streams.indexKeyCount == 0)
        #expect(metrics.values.gauges[.openStreams(route: "live")] == 0)
    }

    @Test("a reload ends the streams whose route is gone or whose require now refuses them")
    func reload() throws {
        let streams = LoopStreams(metrics: WorkerMetrics())
        let keys = KeySnapshot(generation: 1, issuers: [])
        let request = AuthRequest(
            headers: HTTPHeaders(), route: Self.route("live"), keys: keys, now: 0,
            connection: ClientConnectionInfo(peerIP: "127.0.0.1", peerIsTrustedProxy: false, isTLS: false))
        let token = VerifiedToken(
            issuerIndex: 0, generation: 1, claims: ["sub": .string("alice"), "role": .string("viewer")],
            subject: "alice", expiresAt: 100, notBefore: nil, issuedAt: nil, leewaySeconds: 0)
        let identity = Identity(
            token: token,
            accessToken: ExtractedToken(value: "t", location: .header(name: "Authorization", bearer: true)),
            issuer: "https://idp")
        func open(_ route: String) -> Owner {
            let owner = Owner()
            streams.opened(
                OpenStream(
                    owner: owner, route: route, credential: StreamCredential(tokenExpiresAt: 100, subject: "alice"),
                    settings: StreamsConfiguration(), identity: identity, request: request))
            return owner
        }
        let kept = open("live")
        let moved = open("old")
        let admins = try Requirement(parsing: ["claims.role": "admin"])
        streams.reloaded { _ in Self.route("live") }
        #expect(kept.ended.isEmpty && moved.ended == [.reload])
        streams.reloaded { _ in Self.route("live", require: admins) }
        #expect(kept.ended == [.reload])
    }
}
