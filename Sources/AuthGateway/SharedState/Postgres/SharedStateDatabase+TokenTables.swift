import Foundation
import NIOCore
import PostgresNIO

/// The statements of `SharedTokenTables` (shared DPoP replays, shared introspection answers),
/// bounded and accounted like the refresh store's: a request's statement that fails or times
/// out counts in `auth_gateway_shared_state_errors_total{operation}` and puts the database out
/// of use until a probe succeeds (`/healthz` degraded; the request goes on with its process's
/// own cache).
extension SharedStateDatabase {
    /// Creates what is missing of both tables, in one transaction under their own advisory
    /// lock. A failure (e.g. a role without `CREATE`) counts as `token_tables` and does not
    /// stop refresh sharing.
    func ensureTokenTables() async throws(SharedStateFailure) {
        try await self.run(.tokenTables) { client in
            try await client.withTransaction(logger: self.silent) { connection in
                for try await _ in try await connection.query(SharedTokenTables.schemaLock, logger: self.silent) {}
                var existing = (proofs: false, proofIndex: false, introspections: false, introspectionIndex: false)
                let rows = try await connection.query(SharedTokenTables.existingSchema, logger: self.silent).decode(
                    (Bool, Bool, Bool, Bool).self)
                for try await row in rows { existing = row }
                let statements: [(Bool, PostgresQuery)] = [
                    (existing.proofs, SharedTokenTables.createProofTable),
                    (existing.proofIndex, SharedTokenTables.createProofIndex),
                    (existing.introspections, SharedTokenTables.createIntrospectionTable),
                    (existing.introspectionIndex, SharedTokenTables.createIntrospectionIndex),
                ]
                for (exists, statement) in statements where !exists {
                    for try await _ in try await connection.query(statement, logger: self.silent) {}
                }
            }
        }
    }

    /// True when this is the proof's first use across every instance; false for a replay.
    func recordDPoPProof(_ digest: TokenDigest, keepMilliseconds: Int64) async throws(SharedStateFailure) -> Bool {
        let query = SharedTokenTables.recordProof(digest, keepMilliseconds: keepMilliseconds)
        return try await self.run(.dpopReplay) { client in
            var first = false
            for try await _ in try await client.query(query, logger: self.silent) { first = true }
            return first
        }
    }

    /// The sealed answer stored for `digest` and its remaining milliseconds, if it is live.
    func readIntrospection(
        _ digest: TokenDigest
    ) async throws(SharedStateFailure) -> (sealed: [UInt8], remainingMilliseconds: Int64)? {
        let query = SharedTokenTables.readIntrospection(digest)
        return try await self.run(.introspection) { client in
            var found: (sealed: [UInt8], remainingMilliseconds: Int64)?
            for try await (sealed, remaining) in try await client.query(query, logger: self.silent).decode(
                (ByteBuffer, Int64).self) where found == nil
            {
                found = (Array(sealed.readableBytesView), remaining)
            }
            return found
        }
    }

    func storeIntrospection(
        _ digest: TokenDigest, sealedOutcome: [UInt8], keepMilliseconds: Int64
    ) async throws(SharedStateFailure) {
        let query = SharedTokenTables.storeIntrospection(
            digest, sealedOutcome: sealedOutcome, keepMilliseconds: keepMilliseconds)
        try await self.run(.introspection) { client in
            for try await _ in try await client.query(query, logger: self.silent) {}
        }
    }

    func sweepTokenTables() async throws(SharedStateFailure) {
        try await self.run(.sweep) { client in
            for try await _ in try await client.query(SharedTokenTables.sweepProofs, logger: self.silent) {}
            for try await _ in try await client.query(SharedTokenTables.sweepIntrospections, logger: self.silent) {}
        }
    }
}
