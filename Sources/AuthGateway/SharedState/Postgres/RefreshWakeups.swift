import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// Wakes the instance's waiters when another instance stores an outcome: the LISTEN
/// connection hands each notification's token digest to `wake`. A waiter subscribes before
/// its first claim, so a notification that arrives between two reads is kept, not lost.
/// Without notifications (the LISTEN connection is down) waiters still poll.
final class RefreshWakeups: Sendable {
    private let subscriptions = NIOLockedValueBox<[TokenDigest: [ObjectIdentifier: Subscription]]>([:])
    private let listening = Atomic<Bool>(false)

    /// True while the LISTEN connection is up.
    var isListening: Bool { self.listening.load(ordering: .relaxed) }
    func setListening(_ value: Bool) { self.listening.store(value, ordering: .relaxed) }

    func subscribe(_ digest: TokenDigest) -> Subscription {
        let subscription = Subscription(digest: digest)
        self.subscriptions.withLockedValue { $0[digest, default: [:]][ObjectIdentifier(subscription)] = subscription }
        return subscription
    }

    func unsubscribe(_ subscription: Subscription) {
        self.subscriptions.withLockedValue { table in
            table[subscription.digest]?[ObjectIdentifier(subscription)] = nil
            if table[subscription.digest]?.isEmpty == true { table[subscription.digest] = nil }
        }
    }

    /// An outcome was stored for `digest`.
    func wake(_ digest: TokenDigest) {
        let woken = self.subscriptions.withLockedValue { $0[digest].map { Array($0.values) } ?? [] }
        for subscription in woken { subscription.wake() }
    }

    /// Every subscription (on shutdown, so that no waiter sits out its poll interval).
    func wakeAll() {
        let woken = self.subscriptions.withLockedValue { $0.values.flatMap(\.values) }
        for subscription in woken { subscription.wake() }
    }

    /// One waiter's interest in one digest.
    final class Subscription: Sendable {
        let digest: TokenDigest
        private let state = NIOLockedValueBox<(pending: Bool, waiter: EventLoopPromise<Void>?)>((false, nil))

        fileprivate init(digest: TokenDigest) { self.digest = digest }

        /// Returns after a wake-up (also one that came since the last wait), after
        /// `milliseconds`, or when the task is cancelled.
        func wait(milliseconds: Int64, on eventLoop: EventLoop) async {
            let promise: EventLoopPromise<Void>? = self.state.withLockedValue { state in
                if state.pending {
                    state.pending = false
                    return nil
                }
                let promise = eventLoop.makePromise(of: Void.self)
                state.waiter = promise
                return promise
            }
            guard let promise else { return }
            let timer = eventLoop.scheduleTask(in: .milliseconds(milliseconds)) { promise.succeed() }
            await withTaskCancellationHandler {
                try? await promise.futureResult.get()
            } onCancel: {
                promise.succeed()
            }
            timer.cancel()
            self.state.withLockedValue { state in
                if state.waiter?.futureResult === promise.futureResult { state.waiter = nil }
            }
        }

        fileprivate func wake() {
            let waiter: EventLoopPromise<Void>? = self.state.withLockedValue { state in
                guard let waiter = state.waiter else {
                    state.pending = true
                    return nil
                }
                state.waiter = nil
                return waiter
            }
            waiter?.succeed()
        }
    }
}
