import NIOCore
import Testing

@testable import AuthGateway

/// The pure parts of docs/streams.md: what a stream records, when it must end, and how a
/// revocation finds it.
@Suite("Streams: index, credential, clocks")
struct StreamIndexTests {
    let a = TokenDigest(of: "session a"[...])
    let b = TokenDigest(of: "session b"[...])

    @Test("a revocation finds exactly the streams it names, by session, by sid, else by subject")
    func selectors() {
        var index = StreamIndex<Int>()
        let sessionA = StreamCredential(tokenExpiresAt: 100, session: a, providerSessionID: "sid-1", subject: "alice")
        let sessionB = StreamCredential(tokenExpiresAt: 100, session: b, providerSessionID: "sid-2", subject: "alice")
        let bearer = StreamCredential(tokenExpiresAt: 100, providerSessionID: "sid-1", subject: "alice")
        let bob = StreamCredential(tokenExpiresAt: 100, subject: "bob")
        let credentials = [1: sessionA, 2: sessionA, 3: sessionB, 4: bearer, 5: bob, 6: .anonymous]
        for (id, credential) in credentials { index.insert(id, keys: StreamIndex<Int>.keys(of: credential)) }
        #expect(Set(index.ids(.session(a))) == [1, 2])
        #expect(index.ids(.sessions(providerSessionID: "sid-2", subject: "alice")) == [3], "sid wins over subject")
        #expect(Set(index.ids(.sessions(providerSessionID: "sid-1", subject: nil))) == [1, 2, 4])
        #expect(Set(index.ids(.sessions(providerSessionID: nil, subject: "alice"))) == [1, 2, 3, 4])
        #expect(index.ids(.sessions(providerSessionID: nil, subject: "carol")).isEmpty)
        #expect(index.ids(.sessions(providerSessionID: nil, subject: nil)).isEmpty)
        for (id, credential) in credentials { index.remove(id, keys: StreamIndex<Int>.keys(of: credential)) }
        #expect(index.keyCount == 0, "nothing is left behind")
    }

    @Test("a stream ends at its token's expiry plus leeway, or at its session's end, whichever is first")
    func deadlines() {
        let settings = StreamsConfiguration(closeAtExpiry: true, leewaySeconds: 30)
        #expect(StreamCredential(tokenExpiresAt: 1000).deadline(settings) == 1030)
        #expect(StreamCredential(tokenExpiresAt: 1000, session: a, sessionEndsAt: 1010).deadline(settings) == 1010)
        #expect(StreamCredential(tokenExpiresAt: .infinity).deadline(settings) == nil, "an API key without expiry")
        let off = StreamsConfiguration(closeAtExpiry: false, leewaySeconds: 30)
        #expect(StreamCredential(tokenExpiresAt: 1000).deadline(off) == nil)
        #expect(
            StreamCredential(tokenExpiresAt: 1000, session: a, sessionEndsAt: 5000).deadline(off) == 5000,
            "a session's end is a revocation, whatever closeAtExpiry says")
        #expect(StreamCredential.anonymous.deadline(settings) == nil)
    }

    @Test("a session stream is renewed from its session's record; other credentials are not")
    func renewal() {
        let header = Base64URL.encode(Array(#"{"alg":"RS256"}"#.utf8))
        let payload = Base64URL.encode(Array(#"{"sub":"alice","exp":2000}"#.utf8))
        let token = "\(header).\(payload).c2ln"
        let record = SessionRecord(
            subject: "alice", providerSessionID: "sid-1", idToken: "-", accessToken: token, createdAt: 0,
            lastUsedAt: 900)
        let lifetime = SessionLifetime(idleSeconds: 600, maxSeconds: 10_000)
        let stream = StreamCredential(tokenExpiresAt: 1000, session: a, sessionEndsAt: 1200, subject: "alice")
        let renewed = stream.renewed(record: record, lifetime: lifetime)
        #expect(renewed?.tokenExpiresAt == 2000)
        #expect(renewed?.sessionEndsAt == 1500)
        #expect(stream.renewed(record: nil, lifetime: lifetime) == nil, "the session is over")
        let bearer = StreamCredential(tokenExpiresAt: 1000, subject: "alice")
        #expect(bearer.renewed(record: record, lifetime: lifetime) == bearer)
        #expect(StreamCredential.expiry(ofJWT: "opaque-token"[...]) == nil)
    }

    @Test("wall-clock deadlines become loop deadlines, a past one now")
    func clock() {
        let now = NIODeadline.uptimeNanoseconds(5_000_000_000)
        #expect(StreamClock.deadline(at: 110.5, wallNow: 100, now: now) == now + .milliseconds(10_500))
        #expect(StreamClock.deadline(at: 90, wallNow: 100, now: now) == now)
        #expect(StreamClock.deadline(at: 1e15, wallNow: 100, now: now) == now + .seconds(365 * 86_400))
    }

    @Test("an HTTP/2 stream's deadlines: the credential passes first and keeps the state's")
    func http2Stream() {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var deadlines = StreamDeadlines.Stream(state: start + .seconds(30), credential: start + .seconds(5))
        #expect(deadlines.earliest == start + .seconds(5))
        #expect(deadlines.due(now: start + .seconds(4)) == .none)
        #expect(deadlines.due(now: start + .seconds(40)) == .credentialExpired)
        #expect(deadlines.earliest == start + .seconds(30))
        #expect(deadlines.due(now: start + .seconds(40)) == .timedOut)
        #expect(deadlines.earliest == nil)
    }
}
