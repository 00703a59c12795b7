import Synchronization

/// Whether the token tables (`SharedTokenTables`) exist: set by the maintenance loop once it
/// created them, cleared when the database fails (a database restored empty needs them again).
/// One atomic load per DPoP request or introspection miss.
final class TokenTablesReadiness: Sendable {
    private let ready = Atomic<Bool>(false)

    var isReady: Bool { self.ready.load(ordering: .relaxed) }

    func set(_ value: Bool) { self.ready.store(value, ordering: .relaxed) }
}
