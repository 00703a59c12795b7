import Foundation
import PostgresNIO

/// The SQL of the rate-limit sync across instances (docs/rate-limits.md), in one place;
/// docs/shared-state.md prints the same schema.
///
/// One row per (instance, sync, limit, key): what that instance admitted for the key since
/// its previous sync. Keys are the first 128 bits of the HMAC-SHA-256 of the value
/// (`RateLimitKey`), never the value. Rows expire after the longest limit window and are
/// swept; times are the database's clock.
enum RateLimitUsageTable {
    static let name = "auth_gateway_rate_limit_usage"

    /// As for the refresh table: one transaction under an advisory lock (its own), so that
    /// instances starting together do not race on `CREATE`.
    static let schemaLock: PostgresQuery = "SELECT pg_advisory_xact_lock(7245017781536447318)"
    /// Only what is missing is created (`CREATE … IF NOT EXISTS` needs the privilege even
    /// when the table exists, and an operator may create it for a role without it).
    static let existingSchema: PostgresQuery = """
        SELECT to_regclass('auth_gateway_rate_limit_usage') IS NOT NULL, to_regclass('auth_gateway_rate_limit_usage_expires_at') IS NOT NULL
        """
    static let createTable: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS auth_gateway_rate_limit_usage (
            instance   uuid        NOT NULL,
            sequence   bigint      NOT NULL,
            limit_name text        NOT NULL,
            key        bytea       NOT NULL,
            requests   integer     NOT NULL,
            created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            expires_at timestamptz NOT NULL,
            PRIMARY KEY (instance, sequence, limit_name, key)
        )
        """
    static let createIndex: PostgresQuery =
        "CREATE INDEX IF NOT EXISTS auth_gateway_rate_limit_usage_expires_at ON auth_gateway_rate_limit_usage (expires_at)"

    /// One sync, one statement: writes this instance's usage under sync number `sequence` and
    /// reads every other instance's rows above this instance's watermark for it (rows the
    /// statement itself writes are not visible to its own read, and are excluded anyway).
    static func sync(
        instance: UUID, sequence: Int64, usage: [RateLimitUsage], retentionSeconds: Int, watermarks: [UUID: Int64]
    ) -> PostgresQuery {
        let limits = usage.map(\.limit)
        let keys = usage.map(\.key.description)
        let counts = usage.map { Int32(clamping: $0.requests) }
        let instances = Array(watermarks.keys)
        let sequences = instances.map { watermarks[$0] ?? 0 }
        return """
            WITH written AS (
                INSERT INTO auth_gateway_rate_limit_usage (instance, sequence, limit_name, key, requests, expires_at)
                SELECT \(instance), \(sequence), u.limit_name, decode(u.key, 'hex'), u.requests,
                       clock_timestamp() + \(Int64(retentionSeconds))::bigint * interval '1 second'
                    FROM unnest(\(limits)::text[], \(keys)::text[], \(counts)::int4[]) AS u(limit_name, key, requests)
            )
            SELECT r.instance, r.sequence, r.limit_name, encode(r.key, 'hex'), r.requests,
                   (extract(epoch FROM clock_timestamp() - r.created_at) * 1000)::bigint
                FROM auth_gateway_rate_limit_usage r
                LEFT JOIN unnest(\(instances)::uuid[], \(sequences)::int8[]) AS w(instance, sequence) ON w.instance = r.instance
                WHERE r.instance <> \(instance) AND r.sequence > coalesce(w.sequence, 0) AND r.expires_at > clock_timestamp()
            """
    }

    static let sweep: PostgresQuery = "DELETE FROM auth_gateway_rate_limit_usage WHERE expires_at < clock_timestamp()"
}
