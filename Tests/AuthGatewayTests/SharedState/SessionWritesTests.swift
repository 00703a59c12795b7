import Foundation
import Testing

@testable import AuthGateway

/// The sessions' queued changes (`PendingSessionWrite`, `SessionWriteQueue`) and how records
/// are kept in the table (`SessionSealer`), without a database.
@Suite("Session writes and sealing")
struct SessionWritesTests {
    static func record(
        subject: String = "alice", sid: String? = "sid-1", access: String = "at-1", used: Double = 100
    ) -> SessionRecord {
        SessionRecord(
            subject: subject, providerSessionID: sid, idToken: "id-token", accessToken: access, refreshToken: "rt-1",
            createdAt: 100, lastUsedAt: used)
    }

    @Test("changes coalesce per session; only a sign-in makes a row, and an end stays an end")
    func coalescing() {
        let signedIn = Self.record()
        let refreshed = Self.record(access: "at-2")
        // A sign-in then anything but an end is still a sign-in, with the latest record and use.
        #expect(PendingSessionWrite.put(signedIn).then(.update(refreshed)) == .put(refreshed))
        var used = signedIn
        used.lastUsedAt = 160
        #expect(PendingSessionWrite.put(signedIn).then(.touch(lastUsedAt: 160)) == .put(used))
        // A use is never lost to a later update, and never moves back.
        var refreshedAndUsed = refreshed
        refreshedAndUsed.lastUsedAt = 170
        #expect(PendingSessionWrite.touch(lastUsedAt: 170).then(.update(refreshed)) == .update(refreshedAndUsed))
        #expect(PendingSessionWrite.touch(lastUsedAt: 170).then(.touch(lastUsedAt: 150)) == .touch(lastUsedAt: 170))
        // An end wins over anything before or after it: a logged-out session never comes back.
        for write in [PendingSessionWrite.put(signedIn), .update(refreshed), .touch(lastUsedAt: 1)] {
            #expect(write.then(.delete(.signOut)) == .delete(.signOut))
            #expect(PendingSessionWrite.delete(.backchannel).then(write) == .delete(.backchannel))
        }
        // The first end's reason is the one the session's streams were closed for.
        #expect(PendingSessionWrite.delete(.expired).then(.delete(.signOut)) == .delete(.expired))
    }

    @Test("a failed batch goes back before what was queued since")
    func putBack() {
        let queue = SessionWriteQueue()
        let a = SessionHandle.generate().digest
        let b = SessionHandle.generate().digest
        queue.add(.put(Self.record()), for: a)
        queue.add(.touch(lastUsedAt: 150), for: b)
        let failed = queue.drain()
        #expect(failed.writes.count == 2)
        #expect(queue.pending(a) == .put(Self.record()), "a batch being written is still pending")
        // Meanwhile: a signs out, b is used again.
        queue.add(.delete(.signOut), for: a)
        queue.add(.touch(lastUsedAt: 200), for: b)
        queue.putBack(failed)
        let retried = queue.drain()
        #expect(retried.writes[a] == .delete(.signOut))
        #expect(retried.writes[b] == .touch(lastUsedAt: 200))
        queue.finishBatch()
        #expect(queue.isEmpty && queue.pending(a) == nil)
    }

    @Test("a back-channel logout turns the queued sign-ins it selects into ends")
    func selectorsCatchUnwrittenSignIns() {
        let queue = SessionWriteQueue()
        let alice = SessionHandle.generate().digest
        let bob = SessionHandle.generate().digest
        queue.add(.put(Self.record(subject: "alice", sid: "s-a")), for: alice)
        queue.add(.put(Self.record(subject: "bob", sid: "s-b")), for: bob)
        queue.add(.providerSession([1, 2, 3])) { LocalSessionStore.matches($0, sid: "s-a", subject: nil) }
        let batch = queue.drain()
        #expect(batch.writes[alice] == .delete(.backchannel))
        #expect(batch.writes[bob] == .put(Self.record(subject: "bob", sid: "s-b")))
        #expect(batch.selectors == [.providerSession([1, 2, 3])])
    }

    @Test("one flush at a time")
    func oneFlush() {
        let queue = SessionWriteQueue()
        #expect(queue.claimFlush())
        #expect(!queue.claimFlush())
        queue.releaseFlush()
        #expect(queue.claimFlush())
    }

    @Test("a sealed record opens only under its own digest and key, and reveals nothing")
    func sealing() throws {
        let sealer = SessionSealer(key: SharedStateTesting.key)
        let digest = SessionHandle.generate().digest
        var record = Self.record()
        record.createdAt = 1_700_000_000.25
        record.lastUsedAt = 1_700_000_100.5
        let sealed = sealer.seal(record, for: digest)
        #expect(try sealer.open(sealed, for: digest) == record)
        let text = String(decoding: sealed, as: UTF8.self)
        #expect(!text.contains("alice") && !text.contains("at-1") && !text.contains("sid-1"))
        #expect(throws: OutcomeSealer.OpenError.self) { try sealer.open(sealed, for: SessionHandle.generate().digest) }
        let other = SessionSealer(key: SharedStateConfiguration.EncryptionKey(bytes: Array(repeating: 7, count: 32))!)
        #expect(throws: OutcomeSealer.OpenError.self) { try other.open(sealed, for: digest) }
        var withoutOptionals = record
        withoutOptionals.providerSessionID = nil
        withoutOptionals.refreshToken = nil
        #expect(try sealer.open(sealer.seal(withoutOptionals, for: digest), for: digest) == withoutOptionals)
    }

    @Test("sid and sub are stored as keyed hashes: the same on every instance with the key, unlike each other")
    func selectorHashes() {
        let sealer = SessionSealer(key: SharedStateTesting.key)
        let again = SessionSealer(key: SharedStateTesting.key)
        #expect(sealer.providerSessionHash("s1") == again.providerSessionHash("s1"))
        #expect(sealer.providerSessionHash("s1").count == 32)
        #expect(sealer.providerSessionHash("alice") != sealer.subjectHash("alice"))
        #expect(
            sealer.selector(providerSessionID: "s1", subject: "alice")
                == .providerSession(sealer.providerSessionHash("s1")))
        #expect(sealer.selector(providerSessionID: nil, subject: "alice") == .subject(sealer.subjectHash("alice")))
        #expect(sealer.selector(providerSessionID: nil, subject: nil) == nil)
        let other = SessionSealer(key: SharedStateConfiguration.EncryptionKey(bytes: Array(repeating: 7, count: 32))!)
        #expect(other.subjectHash("alice") != sealer.subjectHash("alice"))
    }
}
