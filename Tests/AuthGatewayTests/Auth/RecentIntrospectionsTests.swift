import Testing

@testable import AuthGateway

/// The loop's memo of active introspection answers: it answers only what was adopted, only
/// while the answer lasts, only for the whole token, and only for the introspector it came from.
@Suite("RecentIntrospections")
struct RecentIntrospectionsTests {
    static let now = 1_800_000_000.0

    static func introspector() -> TokenIntrospector {
        TokenIntrospector(
            configuration: IntrospectionAnswerTests.configuration(), capacity: 16, metrics: ProcessMetrics(),
            clock: { Self.now })
    }

    static func identity(_ subject: String, until: Double) -> VerifiedToken {
        VerifiedToken(
            issuerIndex: -1, generation: 0, claims: ["sub": .string(subject)], subject: subject, expiresAt: until,
            notBefore: nil, issuedAt: nil,
            leewaySeconds: 0
        )
    }

    @Test func anAdoptedAnswerIsKnownUntilItEnds() {
        let memo = RecentIntrospections(slotCount: 4)
        let introspector = Self.introspector()
        #expect(memo.lookup("opaque-1", introspector: introspector, now: Self.now) == nil, "nothing adopted yet")
        memo.remember(
            "opaque-1", verified: Self.identity("alice", until: Self.now + 60), validUntil: Self.now + 60,
            introspector: introspector, changes: memo.changes)
        #expect(memo.lookup("opaque-1", introspector: introspector, now: Self.now + 59)?.subject == "alice")
        #expect(memo.lookup("opaque-1", introspector: introspector, now: Self.now + 60) == nil, "ended with its answer")
    }

    @Test func onlyTheWholeTokenHits() {
        // One slot: every token shares it, so only the comparison tells them apart.
        let memo = RecentIntrospections(slotCount: 1)
        let introspector = Self.introspector()
        memo.remember(
            "opaque-1", verified: Self.identity("alice", until: Self.now + 60), validUntil: Self.now + 60,
            introspector: introspector, changes: memo.changes)
        #expect(memo.lookup("opaque-2", introspector: introspector, now: Self.now) == nil)
        #expect(memo.lookup("opaque-", introspector: introspector, now: Self.now) == nil)
        memo.remember(
            "opaque-2", verified: Self.identity("bob", until: Self.now + 60), validUntil: Self.now + 60,
            introspector: introspector, changes: memo.changes)
        #expect(memo.lookup("opaque-2", introspector: introspector, now: Self.now)?.subject == "bob")
        #expect(
            memo.lookup("opaque-1", introspector: introspector, now: Self.now) == nil, "evicted from the shared slot")
    }

    @Test func anotherIntrospectorsAnswersAreNotReused() {
        let memo = RecentIntrospections(slotCount: 4)
        let before = Self.introspector()
        memo.remember(
            "opaque-1", verified: Self.identity("alice", until: Self.now + 60), validUntil: Self.now + 60,
            introspector: before, changes: memo.changes)
        let after = Self.introspector()
        #expect(
            memo.lookup("opaque-1", introspector: after, now: Self.now) == nil,
            "a reload's new introspector asks its own cache")
        memo.remember(
            "opaque-2", verified: Self.identity("bob", until: Self.now + 60), validUntil: Self.now + 60,
            introspector: after, changes: memo.changes)
        #expect(
            memo.lookup("opaque-1", introspector: before, now: Self.now) == nil,
            "the old introspector's entries were dropped")
    }

    /// A Shared Signals event forgot a subject (`SubjectChanges` advanced): nothing held is
    /// answered, and an answer looked up before the event is not remembered as current.
    @Test func aForgottenSubjectEndsEveryEntry() {
        let changes = SubjectChanges()
        let memo = RecentIntrospections(slotCount: 4, subjectChanges: changes)
        let introspector = Self.introspector()
        let before = memo.changes
        memo.remember(
            "opaque-1", verified: Self.identity("alice", until: Self.now + 60), validUntil: Self.now + 60,
            introspector: introspector, changes: before)
        #expect(memo.lookup("opaque-1", introspector: introspector, now: Self.now)?.subject == "alice")
        changes.advance()
        #expect(memo.lookup("opaque-1", introspector: introspector, now: Self.now) == nil)
        // Looked up before the event, adopted after it: not answered from the memo.
        memo.remember(
            "opaque-2", verified: Self.identity("bob", until: Self.now + 60), validUntil: Self.now + 60,
            introspector: introspector, changes: before)
        #expect(memo.lookup("opaque-2", introspector: introspector, now: Self.now) == nil)
        memo.remember(
            "opaque-2", verified: Self.identity("bob", until: Self.now + 60), validUntil: Self.now + 60,
            introspector: introspector, changes: memo.changes)
        #expect(memo.lookup("opaque-2", introspector: introspector, now: Self.now)?.subject == "bob")
    }
}
