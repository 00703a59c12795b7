import NIOConcurrencyHelpers
import NIOCore

/// The start-up fetch of each remote key set (docs/operations.md: once, begun by `start()`;
/// readiness waits for it), and the one way the application fetches an issuer's keys: through the
/// first event loop's clients. `KeyRefreshService` waits for an issuer's start-up fetch, then
/// schedules its refreshes from there.
final class KeyStartup: Sendable {
    private let keyStore: KeyStore
    private let worker: NIOLoopBound<Worker>
    /// Completed once `start()` has bound the listeners and begun the start-up fetches
    /// (failed when it could not, or on shutdown before a start).
    private let started: EventLoopPromise<Void>
    private let state = NIOLockedValueBox<State>(State())

    private struct State {
        var fetches: [String: EventLoopFuture<Bool>] = [:]
        var settled = false
    }

    /// `worker`: the first event loop's, whose clients fetch.
    init(keyStore: KeyStore, worker: NIOLoopBound<Worker>) {
        self.keyStore = keyStore
        self.worker = worker
        self.started = worker.eventLoop.makePromise(of: Void.self)
    }

    /// Begins one fetch per remote issuer, then settles the start.
    func begin() {
        var fetches: [String: EventLoopFuture<Bool>] = [:]
        for issuer in self.keyStore.remoteIssuers {
            fetches[issuer.issuer] = self.fetch(issuer: issuer.issuer)
        }
        self.state.withLockedValue { $0.fetches = fetches }
        self.settle(with: nil)
    }

    /// Settles the start once (the first call wins): `nil` when the fetches have begun, else
    /// why there are none (the listeners could not bind; shutdown before a start).
    func settle(with error: Error?) {
        let first = self.state.withLockedValue { state in
            defer { state.settled = true }
            return !state.settled
        }
        guard first else { return }
        if let error { self.started.fail(error) } else { self.started.succeed(()) }
    }

    /// Waits for the start, then for the start-up fetch of `issuer`'s keys: true when it
    /// succeeded, nil when there was none (the refresh service then schedules from there, so
    /// start-up fetches each `jwksURL` once). Throws when the start failed.
    func startupFetch(issuer: String) async throws -> Bool? {
        try await self.started.futureResult.get()
        guard let fetch = self.state.withLockedValue({ $0.fetches[issuer] }) else { return nil }
        return try await fetch.get()
    }

    /// Fetches one issuer's keys (after its discovery document, with discovery) through the
    /// first loop's clients; true when keys were fetched.
    func fetch(issuer: String) -> EventLoopFuture<Bool> {
        let worker = self.worker
        let keyStore = self.keyStore
        return worker.eventLoop.flatSubmit {
            keyStore.fetch(issuer: issuer, on: worker.eventLoop) { url in worker.value.client(for: url) }
        }
    }

    /// After a reload: fetches every remote issuer whose keys were never fetched (new ones).
    func fetchNeverFetched() {
        let status = self.keyStore.status
        for issuer in self.keyStore.remoteIssuers
        where status.first(where: { $0.issuer == issuer.issuer })?.ageSeconds == nil {
            _ = self.fetch(issuer: issuer.issuer)
        }
    }
}
