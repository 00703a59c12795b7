import NIOConcurrencyHelpers
import Synchronization

/// Process-wide liveness, readiness and dependency facts behind `/livez`, `/readyz` and
/// `/healthz` (docs/operations.md). Written rarely (state changes, connect results), read by health
/// requests; never touched by ordinary requests.
final class HealthState: Sendable {
    private let draining = Atomic<Bool>(false)
    private let configActive = Atomic<Bool>(false)
    private let dependencies = NIOLockedValueBox<[DependencyKey: DependencyStatus]>([:])

    struct DependencyStatus: Sendable {
        var lastSuccess: Double?
        var lastFailure: Double?
        var lastError: String?

        /// Failing when the last attempt failed.
        var isFailing: Bool {
            guard let failure = self.lastFailure else { return false }
            return failure >= (self.lastSuccess ?? -.infinity)
        }
    }

    var isDraining: Bool { self.draining.load(ordering: .relaxed) }
    func startDraining() { self.draining.store(true, ordering: .relaxed) }

    var isConfigActive: Bool { self.configActive.load(ordering: .relaxed) }
    func markConfigActive() { self.configActive.store(true, ordering: .relaxed) }

    /// Records the outcome of talking to a dependency, e.g. backend `api`'s URL
    /// `http://10.0.0.1:80`.
    func record(_ dependency: DependencyKey, success: Bool, error: String? = nil, now: Double) {
        self.dependencies.withLockedValue { table in
            var status = table[dependency] ?? DependencyStatus()
            if success {
                status.lastSuccess = now
                status.lastError = nil
            } else {
                status.lastFailure = now
                status.lastError = error
            }
            table[dependency] = status
        }
    }

    func status(of dependency: DependencyKey) -> DependencyStatus? {
        self.dependencies.withLockedValue { $0[dependency] }
    }
}
