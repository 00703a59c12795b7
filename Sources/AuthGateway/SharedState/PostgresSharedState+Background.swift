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
                        try await connection.listen(on: SharedRefreshTable.channel) { outcomes in
                            try await connection.listen(on: SharedSessionTable.channel) { sessions in
                                self.wakeups.setListening(true)
                                backoff = Self.listenBackoff.initial
                                self.logger.info(
                                    "shared_state.listening",
                                    metadata: ["shared_state.channel": "\(SharedRefreshTable.channel)"])
                                // Anything stored while nobody listened is found by the waiters'
                                // polls; sessions ended or updated meanwhile, by reading them again.
                                self.sessions.scheduleResynchronization()
                                try await self.follow(outcomes: outcomes, sessions: sessions)
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

    /// Hands each notification on to the refresh waiters or the session store, until either
    /// sequence ends (the connection closed).
    private func follow(
        outcomes: PostgresNotificationSequence, sessions: PostgresNotificationSequence
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await notification in outcomes {
                    if let digest = TokenDigest(hex: notification.payload) { self.wakeups.wake(digest) }
                }
            }
            group.addTask {
                for try await notification in sessions { self.sessions.notified(notification.payload) }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Creates the table at start (retrying with backoff until it works), probes the database
    /// after a failure (the probe re-creates the table, so a database restored empty works
    /// again), creates the sessions, DPoP-proof and introspection tables once the database is
    /// up (again after every outage), writes the sessions' changes kept during an outage, and
    /// sweeps expired rows every `sweepIntervalSeconds`.
    func maintain() async {
        let sweepInterval = Double(self.configuration.sweepIntervalSeconds)
        var nextSweep = SharedStateDatabase.monotonicSeconds() + sweepInterval
        var tokenTablesAttempt = (at: 0.0, backoff: Self.listenBackoff.initial)
        var sessionTableAttempt = (at: 0.0, backoff: Self.listenBackoff.initial)
        while !Task.isCancelled {
            if self.database.isProbeDue() {
                self.tokenTables.set(false)
                self.sessions.table.set(false)
                try? await self.database.probe()
            } else if self.database.usesDatabase, !self.sessions.table.isReady,
                SharedStateDatabase.monotonicSeconds() >= sessionTableAttempt.at
            {
                do {
                    try await self.database.ensureSessionTable()
                    self.sessions.table.set(true)
                    sessionTableAttempt.backoff = Self.listenBackoff.initial
                    // Sign-ins kept here while the database was away are written now.
                    self.sessions.scheduleFlush()
                } catch {
                    // Counted as `session_table`; sessions stay process-local.
                    sessionTableAttempt = (
                        SharedStateDatabase.monotonicSeconds() + sessionTableAttempt.backoff,
                        min(sessionTableAttempt.backoff * 2, 60)
                    )
                }
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
                if self.sessions.table.isReady { try? await self.database.sweepSessions() }
                nextSweep = SharedStateDatabase.monotonicSeconds() + sweepInterval
            }
            if !self.database.usesDatabase {
                self.tokenTables.set(false)
                self.sessions.table.set(false)
            } else {
                // Changes a failed flush put back, once the database is in use again, and the
                // re-read of the sessions held after notifications were lost.
                if !self.sessions.writes.isEmpty { self.sessions.scheduleFlush() }
                self.sessions.resynchronizeIfDue()
            }
            let untilSweep = max(0, nextSweep - SharedStateDatabase.monotonicSeconds())
            let untilProbe = self.database.usesDatabase ? Double.infinity : self.database.secondsUntilProbe()
            let untilTokenTables =
                self.database.usesDatabase && !self.tokenTables.isReady
                ? max(0, tokenTablesAttempt.at - SharedStateDatabase.monotonicSeconds()) : Double.infinity
            let untilSessionTable =
                self.database.usesDatabase && !self.sessions.table.isReady
                ? max(0, sessionTableAttempt.at - SharedStateDatabase.monotonicSeconds()) : Double.infinity
            // Wakes at least every second: an outage noticed by a request is probed soon.
            let delay = min(untilSweep, untilProbe, untilTokenTables, untilSessionTable, 1.0)
            try? await Task.sleep(for: .milliseconds(Int64(max(delay, 0.01) * 1000)))
        }
    }

    private static func close(_ connection: PostgresConnection) {
        let closed: EventLoopFuture<Void> = connection.close()
        closed.whenComplete { _ in }
    }
}
