import Foundation
import NIOCore
import PostgresNIO

/// The sessions table's SQL (docs/shared-state.md), in one place; the docs print the same
/// schema.
///
/// One row per browser session: `handle_digest` (SHA-256 of the cookie's handle), `sealed`
/// (the record, `SessionSealer`), `sid_hash` and `sub_hash` (keyed hashes, for back-channel
/// logout), `created_at` and `last_used_at` (the instances' clock, which judges a session's
/// life) and `expires_at` (when it ends if unused: only for the sweep, which waits
/// `sweepMarginSeconds` more so that instances' clocks need not agree).
///
/// Changes that others must learn of notify channel `auth_gateway_sessions` in the same
/// statement, with `<hex digest>:<instance tag>:u` for an update after a refresh and
/// `…:e<reason>` for an end (the reason's letter, `SessionEndReason`: which the session's
/// streams close for, docs/streams.md; an instance that reads only `e` takes it as an end).
enum SharedSessionTable {
    static let name = "auth_gateway_sessions"
    static let channel = "auth_gateway_sessions"
    /// The sweep deletes a row this long after its `expires_at`.
    static let sweepMarginSeconds = 300

    static let schemaLock: PostgresQuery = "SELECT pg_advisory_xact_lock(7245017781536447320)"
    static let existingSchema: PostgresQuery = """
        SELECT to_regclass('auth_gateway_sessions') IS NOT NULL, to_regclass('auth_gateway_sessions_expires_at') IS NOT NULL,
               to_regclass('auth_gateway_sessions_sid_hash') IS NOT NULL, to_regclass('auth_gateway_sessions_sub_hash') IS NOT NULL
        """
    static let createTable: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS auth_gateway_sessions (
            handle_digest bytea       PRIMARY KEY,
            sealed        bytea       NOT NULL,
            sid_hash      bytea,
            sub_hash      bytea       NOT NULL,
            created_at    timestamptz NOT NULL,
            last_used_at  timestamptz NOT NULL,
            expires_at    timestamptz NOT NULL
        )
        """
    static let createExpiryIndex: PostgresQuery =
        "CREATE INDEX IF NOT EXISTS auth_gateway_sessions_expires_at ON auth_gateway_sessions (expires_at)"
    static let createSIDIndex: PostgresQuery =
        "CREATE INDEX IF NOT EXISTS auth_gateway_sessions_sid_hash ON auth_gateway_sessions (sid_hash)"
    static let createSubjectIndex: PostgresQuery =
        "CREATE INDEX IF NOT EXISTS auth_gateway_sessions_sub_hash ON auth_gateway_sessions (sub_hash)"

    /// One session's row: sealed record and last use (Unix seconds).
    static func read(_ digest: TokenDigest) -> PostgresQuery {
        """
        SELECT sealed, extract(epoch FROM last_used_at)::float8 FROM auth_gateway_sessions
            WHERE handle_digest = \(ByteBuffer(bytes: digest.bytes))
        """
    }

    /// The rows of `digests` that exist (after notifications were lost).
    static func readMany(_ digests: [TokenDigest]) -> PostgresQuery {
        let keys = digests.map { ByteBuffer(bytes: $0.bytes) }
        return """
            SELECT handle_digest, sealed, extract(epoch FROM last_used_at)::float8 FROM auth_gateway_sessions
                WHERE handle_digest = ANY(\(keys)::bytea[])
            """
    }

    /// A row as a sign-in (or a retried one) writes it.
    struct Put {
        var digest: [UInt8]
        var sealed: [UInt8]
        /// Empty without a `sid`.
        var sidHash: [UInt8]
        var subHash: [UInt8]
        var createdAt: Double
        var lastUsedAt: Double
    }

    /// Inserts the rows, or replaces them (a write retried after a failure), with
    /// `expires_at` from `idleSeconds` and `maxSeconds`. A last use never moves back.
    static func put(_ rows: [Put], idleSeconds: Double, maxSeconds: Double) -> PostgresQuery {
        """
        INSERT INTO auth_gateway_sessions AS s (handle_digest, sealed, sid_hash, sub_hash, created_at, last_used_at, expires_at)
            SELECT u.d, u.sealed, NULLIF(u.sid, ''::bytea), u.sub, to_timestamp(u.created), to_timestamp(u.used),
                   to_timestamp(LEAST(u.used + \(idleSeconds)::float8, u.created + \(maxSeconds)::float8))
                FROM unnest(\(rows.map { ByteBuffer(bytes: $0.digest) })::bytea[], \(rows.map { ByteBuffer(bytes: $0.sealed) })::bytea[],
                            \(rows.map { ByteBuffer(bytes: $0.sidHash) })::bytea[], \(rows.map { ByteBuffer(bytes: $0.subHash) })::bytea[],
                            \(rows.map(\.createdAt))::float8[], \(rows.map(\.lastUsedAt))::float8[])
                    AS u(d, sealed, sid, sub, created, used)
            ON CONFLICT (handle_digest) DO UPDATE SET sealed = EXCLUDED.sealed, sid_hash = EXCLUDED.sid_hash,
                sub_hash = EXCLUDED.sub_hash, last_used_at = GREATEST(s.last_used_at, EXCLUDED.last_used_at),
                expires_at = GREATEST(s.expires_at, EXCLUDED.expires_at)
        """
    }

    /// New sealed records for the rows that still exist (never re-creating one), and a
    /// notification for each.
    static func update(
        _ rows: [(digest: [UInt8], sealed: [UInt8], lastUsedAt: Double)], idleSeconds: Double, maxSeconds: Double,
        tag: String
    ) -> PostgresQuery {
        """
        WITH updated AS (
            UPDATE auth_gateway_sessions AS s SET sealed = u.sealed,
                    last_used_at = GREATEST(s.last_used_at, to_timestamp(u.used)),
                    expires_at = LEAST(GREATEST(s.last_used_at, to_timestamp(u.used)) + \(idleSeconds)::float8 * interval '1 second',
                                       s.created_at + \(maxSeconds)::float8 * interval '1 second')
                FROM unnest(\(rows.map { ByteBuffer(bytes: $0.digest) })::bytea[], \(rows.map { ByteBuffer(bytes: $0.sealed) })::bytea[],
                            \(rows.map(\.lastUsedAt))::float8[]) AS u(d, sealed, used)
                WHERE s.handle_digest = u.d
                RETURNING s.handle_digest
        )
        SELECT pg_notify(\(Self.channel), encode(handle_digest, 'hex') || ':' || \(tag + ":u")) FROM updated
        """
    }

    /// Uses: `last_used_at` (and `expires_at`) move forward on the rows that still exist. Not
    /// notified: an instance whose copy looks idle reads the row before ending the session.
    static func touch(
        _ rows: [(digest: [UInt8], lastUsedAt: Double)], idleSeconds: Double, maxSeconds: Double
    ) -> PostgresQuery {
        """
        UPDATE auth_gateway_sessions AS s SET last_used_at = GREATEST(s.last_used_at, to_timestamp(u.used)),
                expires_at = LEAST(GREATEST(s.last_used_at, to_timestamp(u.used)) + \(idleSeconds)::float8 * interval '1 second',
                                   s.created_at + \(maxSeconds)::float8 * interval '1 second')
            FROM unnest(\(rows.map { ByteBuffer(bytes: $0.digest) })::bytea[], \(rows.map(\.lastUsedAt))::float8[]) AS u(d, used)
            WHERE s.handle_digest = u.d
        """
    }

    /// Deletes the rows of `digests` and notifies each one deleted, ended for `reason`.
    static func delete(_ digests: [[UInt8]], tag: String, reason: SessionEndReason) -> PostgresQuery {
        """
        WITH ended AS (
            DELETE FROM auth_gateway_sessions WHERE handle_digest = ANY(\(digests.map { ByteBuffer(bytes: $0) })::bytea[])
                RETURNING handle_digest
        )
        SELECT pg_notify(\(Self.channel), encode(handle_digest, 'hex') || ':' || \(tag + ":e" + reason.rawValue)) FROM ended
        """
    }

    /// Back-channel logout (or a `session-revoked` event, `reason`): deletes every session of
    /// the provider sessions `sidHashes` and of the subjects `subjectHashes`, and notifies each
    /// one deleted.
    static func deleteSelected(
        sidHashes: [[UInt8]], subjectHashes: [[UInt8]], tag: String, reason: SessionEndReason
    ) -> PostgresQuery {
        """
        WITH ended AS (
            DELETE FROM auth_gateway_sessions
                WHERE sid_hash = ANY(\(sidHashes.map { ByteBuffer(bytes: $0) })::bytea[])
                   OR sub_hash = ANY(\(subjectHashes.map { ByteBuffer(bytes: $0) })::bytea[])
                RETURNING handle_digest
        )
        SELECT pg_notify(\(Self.channel), encode(handle_digest, 'hex') || ':' || \(tag + ":e" + reason.rawValue)) FROM ended
        """
    }

    /// The reason an end notification's last part (`e`, `eb`, …) names; sign-out when it
    /// names none (an older instance's).
    static func endReason(_ kind: Substring) -> SessionEndReason {
        SessionEndReason(rawValue: String(kind.dropFirst())) ?? .signOut
    }

    static let sweep: PostgresQuery = """
        DELETE FROM auth_gateway_sessions WHERE expires_at < clock_timestamp() - \(Self.sweepMarginSeconds)::int * interval '1 second'
        """
}
