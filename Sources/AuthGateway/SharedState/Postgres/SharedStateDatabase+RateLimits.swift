import Foundation
import PostgresNIO

/// The rate-limit sync's statements (docs/rate-limits.md), bounded and accounted like the refresh
/// store's: a failure counts in `auth_gateway_shared_state_errors_total{operation}` and puts
/// the database out of use until a probe succeeds (`/healthz` degraded; each instance then
/// enforces its limits alone).
extension SharedStateDatabase {
    func ensureRateLimitSchema() async throws(SharedStateFailure) {
        try await self.run(.rateLimitSync) { client in
            try await client.withTransaction(logger: self.silent) { connection in
                for try await _ in try await connection.query(RateLimitUsageTable.schemaLock, logger: self.silent) {}
                var existing = (table: false, index: false)
                for try await row in try await connection.query(RateLimitUsageTable.existingSchema, logger: self.silent)
                    .decode((Bool, Bool).self)
                {
                    existing = row
                }
                if !existing.table {
                    for try await _ in try await connection.query(RateLimitUsageTable.createTable, logger: self.silent)
                    {}
                }
                if !existing.index {
                    for try await _ in try await connection.query(RateLimitUsageTable.createIndex, logger: self.silent)
                    {}
                }
            }
        }
    }

    /// Writes `usage` and reads the other instances' rows above `watermarks`.
    func syncRateLimits(
        instance: UUID, sequence: Int64, usage: [RateLimitUsage], retentionSeconds: Int, watermarks: [UUID: Int64]
    ) async throws(SharedStateFailure) -> [RemoteRateLimitUsage] {
        let query = RateLimitUsageTable.sync(
            instance: instance, sequence: sequence, usage: usage, retentionSeconds: retentionSeconds,
            watermarks: watermarks)
        return try await self.run(.rateLimitSync) { client in
            var rows: [RemoteRateLimitUsage] = []
            let decoded = try await client.query(query, logger: self.silent).decode(
                (UUID, Int64, String, String, Int32, Int64).self)
            for try await (writer, number, limit, hex, requests, age) in decoded {
                guard let key = RateLimitKey(hex: hex) else { continue }
                rows.append(
                    RemoteRateLimitUsage(
                        instance: writer, sequence: number, limit: limit, key: key, requests: Int(requests),
                        ageMilliseconds: age))
            }
            return rows
        }
    }

    func sweepRateLimits() async throws(SharedStateFailure) {
        try await self.run(.sweep) { client in
            for try await _ in try await client.query(RateLimitUsageTable.sweep, logger: self.silent) {}
        }
    }
}
