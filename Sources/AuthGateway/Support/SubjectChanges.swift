import Synchronization

/// How many times a subject's cached decisions were forgotten, process-wide (a Shared Signals
/// `credential-change` or `token-claims-change`: docs/streams.md).
///
/// Each event loop keeps memos in front of the process-wide caches (`RecentIntrospections`,
/// `TokenExchanger`), which the event cannot reach without a hop to every loop. Instead a memo
/// entry records the count read before its answer was looked up, and answers only while the
/// count is unchanged: after an event every loop asks its process-wide cache again, which
/// forgot the subject. A request pays one load of a word that changes only with such events.
///
/// A verified JWT's per-loop memo (`RecentTokens`) does not take part: verifying the same bytes
/// with the same keys again cannot come out differently.
final class SubjectChanges: Sendable {
    private let count = Atomic<UInt64>(0)

    var current: UInt64 { self.count.load(ordering: .acquiring) }

    /// Called after the process-wide caches forgot, never before: an answer a loop read from a
    /// cache in between would otherwise be remembered under the new count.
    func advance() { self.count.wrappingAdd(1, ordering: .releasing) }
}
