import Foundation
import NIOCore
import PostgresNIO

/// The statements of the sessions table (`SharedSessionTable`), bounded and accounted like
/// the others: a read or a write that fails or times out counts in
/// `auth_gateway_shared_state_errors_total{operation}` and puts the database out of use until
/// a probe succeeds (`/healthz` degraded; sessions go on from this process's memory).
extension SharedStateDatabase {
    /// Creates what is missing of the table and its indexes, in one transaction under its own
    /// advisory lock. A failure (e.g. a role without `CREATE`) counts as `session_table` and
    /// stops nothing else.
    func ensureSessionTable() async throws(SharedStateFailure) {
        try await self.run(.sessionTable) { client in
            try await client.withTransaction(logger: self.silent) { connection in
                for try await _ in try await connection.query(SharedSessionTable.schemaLock, logger: self.silent) {}
                var existing = (table: false, expiry: false, sid: false, subject: false)
                let rows = try await connection.query(SharedSessionTable.existingSchema, logger: self.silent).decode(
                    (Bool, Bool, Bool, Bool).self)
                for try await row in rows { existing = row }
                let statements: [(Bool, PostgresQuery)] = [
                    (existing.table, SharedSessionTable.createTable),
                    (existing.expiry, SharedSessionTable.createExpiryIndex),
                    (existing.sid, SharedSessionTable.createSIDIndex),
                    (existing.subject, SharedSessionTable.createSubjectIndex),
                ]
                for (exists, statement) in statements where !exists {
                    for try await _ in try await connection.query(statement, logger: self.silent) {}
                }
            }
        }
    }

    /// The sealed record and last use (Unix seconds) of one session, if its row exists.
    func readSession(_ digest: TokenDigest) async throws(SharedStateFailure) -> (sealed: [UInt8], lastUsedAt: Double)? {
        let query = SharedSessionTable.read(digest)
        return try await self.run(.sessionRead) { client in
            var found: (sealed: [UInt8], lastUsedAt: Double)?
            for try await (sealed, used) in try await client.query(query, logger: self.silent).decode(
                (ByteBuffer, Double).self) where found == nil
            {
                found = (Array(sealed.readableBytesView), used)
            }
            return found
        }
    }

    /// The rows of `digests` that exist, by digest.
    func readSessions(
        _ digests: [TokenDigest]
    ) async throws(SharedStateFailure) -> [TokenDigest: (sealed: [UInt8], lastUsedAt: Double)] {
        let query = SharedSessionTable.readMany(digests)
        return try await self.run(.sessionRead) { client in
            var found: [TokenDigest: (sealed: [UInt8], lastUsedAt: Double)] = [:]
            for try await (key, sealed, used) in try await client.query(query, logger: self.silent).decode(
                (ByteBuffer, ByteBuffer, Double).self)
            {
                guard let digest = TokenDigest(bytes: key.readableBytesView) else { continue }
                found[digest] = (Array(sealed.readableBytesView), used)
            }
            return found
        }
    }

    /// Runs `statements` in order on one pooled connection (each its own transaction: every
    /// one of them can be repeated, so a batch that fails midway is simply written again).
    func writeSessions(_ statements: [PostgresQuery]) async throws(SharedStateFailure) {
        guard !statements.isEmpty else { return }
        try await self.run(.sessionWrite) { client in
            try await client.withConnection { connection in
                for statement in statements {
                    for try await _ in try await connection.query(statement, logger: self.silent) {}
                }
            }
        }
    }

    func sweepSessions() async throws(SharedStateFailure) {
        try await self.run(.sweep) { client in
            for try await _ in try await client.query(SharedSessionTable.sweep, logger: self.silent) {}
        }
    }
}
