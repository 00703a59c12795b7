import NIOConcurrencyHelpers
import NIOCore

/// Hands new key snapshots to every event loop. Attached once the workers exist (the key
/// store is created before them).
final class KeyPublisher: Sendable {
    private let workers = NIOLockedValueBox<[NIOLoopBound<Worker>]>([])

    func attach(_ workers: [NIOLoopBound<Worker>]) {
        self.workers.withLockedValue { $0 = workers }
    }

    func publish(_ snapshot: KeySnapshot) {
        for worker in self.workers.withLockedValue({ $0 }) {
            worker.eventLoop.execute { worker.value.apply(snapshot) }
        }
    }
}
