import NIOEmbedded
import Testing

@testable import AuthGateway

@Suite("LocalSessionStore")
struct LocalSessionStoreTests {
    let loop = EmbeddedEventLoop()
    let lifetime = SessionLifetime(idleSeconds: 100, maxSeconds: 1000)

    func record(subject: String = "alice", sid: String? = "sid-1", at now: Double = 0) -> SessionRecord {
        SessionRecord(
            subject: subject, providerSessionID: sid, idToken: "id", accessToken: "at", refreshToken: "rt",
            createdAt: now, lastUsedAt: now)
    }

    func found(_ lookup: SessionLookup) -> SessionRecord? {
        if case .found(let record) = lookup { return record }
        return nil
    }

    @Test("a session lives while used within the idle time, and never past its maximum age")
    func lifetimes() {
        let store = LocalSessionStore(capacity: 10)
        let digest = SessionHandle.generate().digest
        store.create(digest, self.record())
        #expect(self.found(store.lookup(digest, now: 90, lifetime: self.lifetime, on: self.loop)) != nil)
        #expect(self.found(store.lookup(digest, now: 180, lifetime: self.lifetime, on: self.loop)) != nil)
        guard case .expired = store.lookup(digest, now: 400, lifetime: self.lifetime, on: self.loop) else {
            Issue.record("idle past 100 s: expired")
            return
        }
        guard case .missing = store.lookup(digest, now: 401, lifetime: self.lifetime, on: self.loop) else {
            Issue.record("an expired session is gone")
            return
        }
        let busy = SessionHandle.generate().digest
        store.create(busy, self.record())
        for now in stride(from: 50.0, through: 950, by: 50) {
            #expect(self.found(store.lookup(busy, now: now, lifetime: self.lifetime, on: self.loop)) != nil)
        }
        guard case .expired = store.lookup(busy, now: 1000, lifetime: self.lifetime, on: self.loop) else {
            Issue.record("past sessionMaxSeconds: expired however busy")
            return
        }
    }

    @Test("as a cache: a use is recorded once per granularity, an idle copy can be kept for a re-read")
    func cached() {
        let store = LocalSessionStore(capacity: 10)
        let digest = SessionHandle.generate().digest
        store.create(digest, self.record())
        // Granularity: min(60, 100 / 20) = 5 s.
        guard case .live(_, touched: false) = store.cached(digest, now: 4, lifetime: self.lifetime, keepingIdle: true)
        else {
            Issue.record("within the granularity: no use recorded")
            return
        }
        guard
            case .live(let used, touched: true) = store.cached(
                digest, now: 6, lifetime: self.lifetime, keepingIdle: true)
        else {
            Issue.record("past the granularity: a use recorded")
            return
        }
        #expect(used.lastUsedAt == 6 && store.held(digest)?.lastUsedAt == 6)
        guard case .idle = store.cached(digest, now: 200, lifetime: self.lifetime, keepingIdle: true) else {
            Issue.record("idle")
            return
        }
        #expect(store.held(digest) != nil, "kept for the database to say whether it is over")
        guard case .over = store.cached(digest, now: 1000, lifetime: self.lifetime, keepingIdle: true) else {
            Issue.record("past the maximum age")
            return
        }
        #expect(store.held(digest) == nil)
        // `replace` only replaces a record still held.
        #expect(!store.replace(digest, self.record()))
        #expect(store.held(digest) == nil)
        store.create(digest, self.record())
        #expect(store.replace(digest, self.record(subject: "bob")))
        #expect(store.held(digest)?.subject == "bob")
        #expect(store.digests == [digest])
    }

    @Test("back-channel logout ends a provider session's sessions, or every session of a subject")
    func backchannel() {
        let store = LocalSessionStore(capacity: 10)
        let a = SessionHandle.generate().digest
        let b = SessionHandle.generate().digest
        let c = SessionHandle.generate().digest
        store.create(a, self.record(subject: "alice", sid: "s1"))
        store.create(b, self.record(subject: "alice", sid: "s2"))
        store.create(c, self.record(subject: "bob", sid: "s3"))
        #expect(store.end(providerSessionID: "s1", subject: "alice", reason: .backchannel) == 1)
        #expect(store.held(a) == nil && store.held(b) != nil)
        #expect(store.end(providerSessionID: nil, subject: "alice", reason: .backchannel) == 1)
        #expect(store.held(b) == nil && store.held(c) != nil)
        #expect(store.end(providerSessionID: nil, subject: nil, reason: .backchannel) == 0)
        #expect(store.count == 1)
    }

    @Test("handles are 43 base64url characters of fresh randomness; anything else is no handle")
    func handles() {
        let handle = SessionHandle.generate()
        #expect(handle.value.utf8.count == 43)
        #expect(SessionHandle(cookieValue: handle.value[...]) == handle)
        #expect(SessionHandle(cookieValue: "short") == nil)
        #expect(SessionHandle(cookieValue: (String(handle.value.dropLast()) + "!")[...]) == nil)
        #expect(SessionHandle.generate() != handle)
        #expect(("__Host-gateway-session=" + handle.value).utf8.count < 100)
    }
}
