import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// `SignalReceiver` (docs/streams.md, "Shared Signals"): a checked SET's `jti` is used once;
/// `session-revoked` ends the sessions it names (and tells the streams' observer why);
/// `credential-change` empties the subject's caches and nobody else's.
@Suite("SignalReceiver")
struct SignalReceiverTests {
    final class Recorder: SessionObserver {
        let ends = NIOLockedValueBox<[String]>([])
        func sessionEnded(_ digest: TokenDigest, reason: SessionEndReason) {
            self.ends.withLockedValue { $0.append("digest:\(reason.rawValue)") }
        }
        func sessionsEnded(providerSessionID sid: String?, subject: String?, reason: SessionEndReason) {
            self.ends.withLockedValue { $0.append("\(sid ?? "-")/\(subject ?? "-"):\(reason.rawValue)") }
        }
    }

    let fixture: AuthStepFixture
    let now = Date().timeIntervalSince1970.rounded()

    init() throws {
        self.fixture = try AuthStepFixture()
    }

    func set(_ event: SecurityEvent.Kind, subject: JSONObject, jti: String) -> String {
        try! TestKeys.rsa.sign(
            [
                "iss": .string(TestKeys.issuer), "aud": "gateway", "iat": .number(JSONNumber(Int(self.now))),
                "jti": .string(jti), "sub_id": .object(subject), "events": [event.uri: [:]],
            ], header: ["typ": "secevent+jwt"])
    }

    @Test("session-revoked ends the named sessions once; a replay is refused and ends nothing")
    func sessionRevoked() throws {
        let loop = EmbeddedEventLoop()
        let recorder = Recorder()
        let sessions = LocalSessionStore(capacity: 10, observer: recorder)
        let record = SessionRecord(
            subject: "alice", providerSessionID: "sid-1", idToken: "-", accessToken: "a", createdAt: self.now,
            lastUsedAt: self.now)
        let (mine, other) = (SessionHandle.generate().digest, SessionHandle.generate().digest)
        sessions.create(mine, record)
        var others = record
        others.providerSessionID = "sid-2"
        sessions.create(other, others)
        let metrics = ProcessMetrics()
        let now = self.now
        let receiver = SignalReceiver(
            configuration: SignalsConfiguration(issuer: TestKeys.issuer, audience: "gateway"), sessions: sessions,
            seen: ReplayCache(), sharedSeen: nil,
            caches: SubjectCaches(
                verifiedTokens: VerifiedTokenCache(capacity: 10), introspector: nil, profiles: nil,
                refreshStore: LocalRefreshStore(clock: { now })),
            metrics: metrics, clock: { now })
        let set = self.set(.sessionRevoked, subject: ["format": "opaque", "id": "sid-1"], jti: "j-1")
        guard case .accepted(let event) = try receiver.receive(set, keys: self.fixture.keys, on: loop).wait() else {
            Issue.record("refused")
            return
        }
        #expect(event.subject.providerSessionID == "sid-1")
        #expect(sessions.held(mine) == nil && sessions.held(other) != nil)
        #expect(recorder.ends.withLockedValue { $0 } == ["sid-1/-:g"])
        let replay = try receiver.receive(set, keys: self.fixture.keys, on: loop).wait()
        #expect(replay == .refused(SecurityEventRefusal(.invalidRequest, "The SET's jti was received before")))
        #expect(recorder.ends.withLockedValue { $0 }.count == 1)
        let counters = metrics.snapshot.counters
        #expect(counters[MetricKey(MetricName.signals, ["event": "session_revoked", "outcome": "accepted"])] == 1)
        #expect(counters[MetricKey(MetricName.signals, ["event": "session_revoked", "outcome": "replayed"])] == 1)
    }

    @Test("credential-change forgets the subject's exchanged tokens (by their sub), nobody else's, never an opaque one")
    func credentialChangeForgetsExchangedTokens() throws {
        let loop = EmbeddedEventLoop()
        let now = self.now
        let exchanges = LocalExchangeStore(clock: { now })
        let exchanged = [
            ("alice", TestKeys.token(subject: "alice", now: now)), ("bob", TestKeys.token(subject: "bob", now: now)),
            ("opaque", "opaque-exchanged-token"),
        ]
        for (key, token) in exchanged {
            _ = try exchanges.outcome(
                for: TokenDigest(of: key[...]), callTimeoutMilliseconds: 1000, now: now, eventLoop: loop
            ) { loop.makeSucceededFuture(.exchanged(token: token, usableUntil: now + 300)) }.wait()
        }
        #expect(exchanges.count == 3)
        let receiver = SignalReceiver(
            configuration: SignalsConfiguration(issuer: TestKeys.issuer, audience: "gateway"),
            sessions: LocalSessionStore(capacity: 10), seen: ReplayCache(), sharedSeen: nil,
            caches: SubjectCaches(
                verifiedTokens: VerifiedTokenCache(capacity: 10), introspector: nil, profiles: nil,
                refreshStore: LocalRefreshStore(clock: { now }), exchangeStore: exchanges),
            metrics: ProcessMetrics(), clock: { now })
        let set = self.set(
            .tokenClaimsChange, subject: ["format": "iss_sub", "iss": .string(TestKeys.issuer), "sub": "alice"],
            jti: "j-3")
        guard case .accepted = try receiver.receive(set, keys: self.fixture.keys, on: loop).wait() else {
            Issue.record("refused")
            return
        }
        #expect(exchanges.count == 2, "alice's went; bob's and the opaque one stay")
        var called = false
        _ = try exchanges.outcome(
            for: TokenDigest(of: "bob"[...]), callTimeoutMilliseconds: 1000, now: now, eventLoop: loop
        ) {
            called = true
            return loop.makeSucceededFuture(.unavailable)
        }.wait()
        #expect(!called, "bob's exchanged token is still answered from the cache")
    }

    @Test("credential-change forgets the subject's verified tokens and refresh outcomes, nobody else's")
    func credentialChange() throws {
        let loop = EmbeddedEventLoop()
        let now = self.now
        let verified = VerifiedTokenCache(capacity: 10)
        let alice = TestKeys.token(subject: "alice")
        let bob = TestKeys.token(subject: "bob")
        for token in [alice, bob] { _ = verified.verify(token[...], keys: self.fixture.keys) }
        #expect(verified.count == 2)
        let refreshes = LocalRefreshStore(clock: { now })
        for (key, token) in [("r-alice", alice), ("r-bob", bob)] {
            _ = try refreshes.outcome(
                for: TokenDigest(of: key[...]), graceSeconds: 30, callTimeoutMilliseconds: 1000, now: now,
                eventLoop: loop, joined: {}
            ) { loop.makeSucceededFuture(.refreshed(accessToken: token, refreshToken: nil)) }.wait()
        }
        #expect(refreshes.count == 2)
        let receiver = SignalReceiver(
            configuration: SignalsConfiguration(issuer: TestKeys.issuer, audience: "gateway"),
            sessions: LocalSessionStore(capacity: 10), seen: ReplayCache(), sharedSeen: nil,
            caches: SubjectCaches(verifiedTokens: verified, introspector: nil, profiles: nil, refreshStore: refreshes),
            metrics: ProcessMetrics(), clock: { now })
        let set = self.set(
            .credentialChange, subject: ["format": "iss_sub", "iss": .string(TestKeys.issuer), "sub": "alice"],
            jti: "j-2")
        guard case .accepted = try receiver.receive(set, keys: self.fixture.keys, on: loop).wait() else {
            Issue.record("refused")
            return
        }
        #expect(verified.count == 1 && refreshes.count == 1)
        #expect(verified.lookUpOrVerify(bob[...], keys: self.fixture.keys).fromCache, "bob's stays cached")
        #expect(!verified.lookUpOrVerify(alice[...], keys: self.fixture.keys).fromCache, "alice's is verified afresh")
    }
}
