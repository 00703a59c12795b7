import Logging
import NIOCore
import PostgresNIO

/// The LISTEN connection and the maintenance loop. Neither is per request: plain tasks in the
/// state's task group, ended by cancellation.
extension PostgresSharedState {
    static let listenBackoff: (initial: Double, maximum: Double) = (0.25, 5)

    /// Keeps one connection listening on the outcomes channel and wakes the waiters of each
    /// notified digest; reconnects with backoff after any failure.
    func listen() async {
        let configuration = self.database.connectionConfiguration
        var backoff = Self.listenBackoff.initial
        var connectionID = 0
        while !Task.isCancelled {
            connectionID += 1
            var failure: Error?
            do {
                let connection = try await PostgresConnection.connect(
                    on: self.eventLoopGroup.any(), configuration: configuration, id: connectionID,
                    logger: self.database.silent
                )
                do {
                    try await withTaskCancellationHandler {
                        try await connection.listen(on: SharedRefreshTable.channel) { notifications in
                            self.wakeups.setListening(true)
                            backoff = Self.listenBackoff.initial
                            self.logger.info(
                                "shared_state.listening",
                                metadata: ["shared_state.channel": "\(SharedRefreshTable.channel)"])
                            // Anything stored while nobody listened is found by the waiters' polls.
                            for try await notification in notifications {
                                if let digest = TokenDigest(hex: notification.payload) { self.wakeups.wake(digest) }
                            }
                        }
                    } onCancel: {
                        Self.close(connection)
                    }
                    failure = SharedStateFailure(operation: .listen, reason: "the LISTEN connection closed")
                } catch {
                    failure = error
                }
                // A connection must be closed before it is released.
                try? await connection.close()
            } catch {
                failure = error
            }
            if let failure, !Task.isCancelled {
                let reason =
                    (failure as? SharedStateFailure)?.reason
                    ?? SharedStateDatabase.describe(failure, timeoutMilliseconds: 0)
                self.database.record(SharedStateFailure(operation: .listen, reason: reason))
                // Counted, not an outage by itself: the probe says whether the database is down
                // (and records that failure) or only this connection was lost.
                if self.database.usesDatabase { try? await self.database.probe() }
            }
            self.wakeups.setListening(false)
            try? await Task.sleep(for: .seconds(backoff))
            backoff = min(backoff * 2, Self.listenBackoff.maximum)
        }
        self.wakeups.setListening(false)
    }

    /// Creates the table at start (retrying with backoff until it works), probes the database
    /// after a failure (the probe re-creates the table, so a database restored empty works
    /// again), creates the DPoP-proof and introspection tables once the database is up (again
    /// after every outage), and sweeps expired rows every `sweepIntervalSeconds`.
    func maintain() async {
        let sweepInterval = Double(self.configuration.sweepIntervalSeconds)
        var nextSweep = SharedStateDatabase.monotonicSeconds() + sweepInterval
        var tokenTablesAttempt = (at: 0.0, backoff: Self.listenBackoff.initial)
        while !Task.isCancelled {
            if self.database.isProbeDue() {
                self.tokenTables.set(false)
                try? await self.database.probe()
            } else if self.database.usesDatabase, !self.tokenTables.isReady,
                SharedStateDatabase.monotonicSeconds() >= tokenTablesAttempt.at
            {
                do {
                    try await self.database.ensureTokenTables()
                    self.tokenTables.set(true)
                    tokenTablesAttempt.backoff = Self.listenBackoff.initial
                } catch {
                    // Counted as `token_tables`; DPoP and introspection stay process-local.
                    tokenTablesAttempt = (
                        SharedStateDatabase.monotonicSeconds() + tokenTablesAttempt.backoff,
                        min(tokenTablesAttempt.backoff * 2, 60)
                    )
                }
            } else if self.database.usesDatabase, SharedStateDatabase.monotonicSeconds() >= nextSweep {
                try? await self.database.sweep()
                if self.tokenTables.isReady { try? await self.database.sweepTokenTables() }
                nextSweep = SharedStateDatabase.monotonicSeconds() + sweepInterval
            }
            if !self.database.usesDatabase { self.tokenTables.set(false) }
            let untilSweep = max(0, nextSweep - SharedStateDatabase.monotonicSeconds())
            let untilProbe = self.database.usesDatabase ? Double.infinity : self.database.secondsUntilProbe()
            let untilTokenTables =
                self.database.usesDatabase && !self.tokenTables.isReady
                ? max(0, tokenTablesAttempt.at - SharedStateDatabase.monotonicSeconds()) : Double.infinity
            // Wakes at least every second: an outage noticed by a request is probed soon.
            let delay = min(untilSweep, untilProbe, untilTokenTables, 1.0)
            try? await Task.sleep(for: .milliseconds(Int64(max(delay, 0.01) * 1000)))
        }
    }

    private static func close(_ connection: PostgresConnection) {
        let closed: EventLoopFuture<Void> = connection.close()
        closed.whenComplete { _ in }
    }
}
