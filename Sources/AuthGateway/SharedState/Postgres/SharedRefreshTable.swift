import Foundation
import NIOCore
import PostgresNIO

/// The shared refresh table's SQL (docs/shared-state.md), in one place; docs/shared-state.md prints the same schema.
///
/// One row per old refresh token: `token_digest` (SHA-256 of the token), `claimant` (the
/// instance flight holding the lease), `sealed_outcome` (AES-256-GCM, NULL while in flight)
/// and `expires_at`, which is the end of the claimant's lease while in flight and the end of
/// the grace period once settled. Times are the database's clock (`clock_timestamp()`), so
/// the instances' clocks need not agree.
enum SharedRefreshTable {
    static let name = "auth_gateway_refresh_outcomes"
    /// `NOTIFY` channel; the payload is the hex token digest of a row that got its outcome.
    static let channel = "auth_gateway_refresh_outcomes"

    /// Run in one transaction under an advisory lock, so that instances starting together do
    /// not trip over each other's `CREATE` (a known PostgreSQL race on `pg_type`). Only what is
    /// missing is created: `CREATE … IF NOT EXISTS` still needs the `CREATE` privilege when the
    /// table exists, and an operator may create the table for a role that lacks it.
    static let schemaLock: PostgresQuery = "SELECT pg_advisory_xact_lock(7245017781536447317)"
    static let existingSchema: PostgresQuery = """
        SELECT to_regclass('auth_gateway_refresh_outcomes') IS NOT NULL, to_regclass('auth_gateway_refresh_outcomes_expires_at') IS NOT NULL
        """
    static let createTable: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS auth_gateway_refresh_outcomes (
            token_digest   bytea       PRIMARY KEY,
            claimant       uuid        NOT NULL,
            sealed_outcome bytea,
            expires_at     timestamptz NOT NULL
        )
        """
    static let createIndex: PostgresQuery =
        "CREATE INDEX IF NOT EXISTS auth_gateway_refresh_outcomes_expires_at ON auth_gateway_refresh_outcomes (expires_at)"

    /// Claims `digest` for `claimant` for `leaseMilliseconds` unless a lease is running or an
    /// outcome is fresh — one statement, so that of any number of instances exactly one wins.
    /// Returns the claimed row, else the row as it stands (none when a concurrent claim's row
    /// is not yet visible to this statement's snapshot).
    static func claim(_ digest: TokenDigest, claimant: UUID, leaseMilliseconds: Int64) -> PostgresQuery {
        let key = ByteBuffer(bytes: digest.bytes)
        return """
            WITH claimed AS (
                INSERT INTO auth_gateway_refresh_outcomes AS stored (token_digest, claimant, sealed_outcome, expires_at)
                VALUES (\(key), \(claimant), NULL, clock_timestamp() + \(leaseMilliseconds)::bigint * interval '1 millisecond')
                ON CONFLICT (token_digest) DO UPDATE
                    SET claimant = EXCLUDED.claimant, sealed_outcome = NULL, expires_at = EXCLUDED.expires_at
                    WHERE stored.expires_at <= clock_timestamp()
                RETURNING stored.claimant, stored.sealed_outcome, stored.expires_at
            )
            SELECT claimant, sealed_outcome, (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint FROM claimed
            UNION ALL
            SELECT claimant, sealed_outcome, (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint
                FROM auth_gateway_refresh_outcomes WHERE token_digest = \(key) AND NOT EXISTS (SELECT 1 FROM claimed)
            """
    }

    /// The row of `digest`, for a waiter.
    static func read(_ digest: TokenDigest) -> PostgresQuery {
        """
        SELECT claimant, sealed_outcome, (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint
            FROM auth_gateway_refresh_outcomes WHERE token_digest = \(ByteBuffer(bytes: digest.bytes))
        """
    }

    /// Stores `sealedOutcome` for `keepMilliseconds` (0: "unavailable", shared with this
    /// flight's waiters but claimable again at once) and notifies the waiters — unless an
    /// outcome is already stored (a late leader whose lease another instance took over):
    /// the first outcome wins. Inserts the row if a sweep removed it after its lease. One
    /// row back when stored.
    static func settle(
        _ digest: TokenDigest, claimant: UUID, sealedOutcome: [UInt8], keepMilliseconds: Int64
    ) -> PostgresQuery {
        let key = ByteBuffer(bytes: digest.bytes)
        return """
            WITH settled AS (
                INSERT INTO auth_gateway_refresh_outcomes AS stored (token_digest, claimant, sealed_outcome, expires_at)
                VALUES (\(key), \(claimant), \(ByteBuffer(bytes: sealedOutcome)), clock_timestamp() + \(keepMilliseconds)::bigint * interval '1 millisecond')
                ON CONFLICT (token_digest) DO UPDATE
                    SET sealed_outcome = EXCLUDED.sealed_outcome, expires_at = EXCLUDED.expires_at
                    WHERE stored.sealed_outcome IS NULL
                RETURNING stored.token_digest
            )
            SELECT pg_notify(\(Self.channel), \(digest.hex)) FROM settled
            """
    }

    /// Deletes rows past their expiry (settled outcomes after grace, abandoned leases).
    static let sweep: PostgresQuery = "DELETE FROM auth_gateway_refresh_outcomes WHERE expires_at < clock_timestamp()"

    static let probe: PostgresQuery = "SELECT 1"
}
