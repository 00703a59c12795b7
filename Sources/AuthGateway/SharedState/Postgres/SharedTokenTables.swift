import Foundation
import NIOCore
import PostgresNIO

/// The SQL of the two tables that share what the gateway learned about *access tokens*
/// across instances (docs/authentication.md), in one place; docs/shared-state.md prints the same schema.
///
/// - `auth_gateway_dpop_proofs`: one row per accepted DPoP proof while it could be replayed,
///   keyed by the first 16 bytes of SHA-256(thumbprint ":" jti) — a row is 16 bytes and a
///   timestamp. An insert that conflicts with a live row is a replay.
/// - `auth_gateway_introspections`: one row per introspected token while its answer lasts,
///   keyed by SHA-256 of the token, the answer sealed by `OutcomeSealer` (AES-256-GCM, the
///   digest as authenticated data) exactly as refresh outcomes are.
///
/// Times are the database's clock (`clock_timestamp()`). Created apart from the refresh table
/// (their own advisory lock), so that a role allowed to use only an operator-created refresh
/// table keeps sharing refreshes: without these tables DPoP and introspection stay
/// process-local.
enum SharedTokenTables {
    static let dpopProofs = "auth_gateway_dpop_proofs"
    static let introspections = "auth_gateway_introspections"
    /// Bytes of the proof digest stored (128 bits: collisions are out of reach, rows small).
    static let proofKeyBytes = 16

    static let schemaLock: PostgresQuery = "SELECT pg_advisory_xact_lock(7245017781536447319)"
    static let existingSchema: PostgresQuery = """
        SELECT to_regclass('auth_gateway_dpop_proofs') IS NOT NULL, to_regclass('auth_gateway_dpop_proofs_expires_at') IS NOT NULL,
               to_regclass('auth_gateway_introspections') IS NOT NULL, to_regclass('auth_gateway_introspections_expires_at') IS NOT NULL
        """
    static let createProofTable: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS auth_gateway_dpop_proofs (
            proof_digest bytea       PRIMARY KEY,
            expires_at   timestamptz NOT NULL
        )
        """
    static let createProofIndex: PostgresQuery =
        "CREATE INDEX IF NOT EXISTS auth_gateway_dpop_proofs_expires_at ON auth_gateway_dpop_proofs (expires_at)"
    static let createIntrospectionTable: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS auth_gateway_introspections (
            token_digest   bytea       PRIMARY KEY,
            sealed_outcome bytea       NOT NULL,
            expires_at     timestamptz NOT NULL
        )
        """
    static let createIntrospectionIndex: PostgresQuery =
        "CREATE INDEX IF NOT EXISTS auth_gateway_introspections_expires_at ON auth_gateway_introspections (expires_at)"

    /// The stored key of a proof: the first 16 bytes of the digest the local replay cache uses.
    static func proofKey(_ digest: TokenDigest) -> ByteBuffer {
        ByteBuffer(bytes: digest.bytes.prefix(Self.proofKeyBytes))
    }

    /// Records a proof for `keepMilliseconds`: one row back when this is its first use (a new
    /// row, or one whose time had run out), none when a live row exists — a replay, wherever
    /// the first use was. One statement, so two instances racing on one proof cannot both win.
    static func recordProof(_ digest: TokenDigest, keepMilliseconds: Int64) -> PostgresQuery {
        """
        INSERT INTO auth_gateway_dpop_proofs AS seen (proof_digest, expires_at)
            VALUES (\(Self.proofKey(digest)), clock_timestamp() + \(keepMilliseconds)::bigint * interval '1 millisecond')
            ON CONFLICT (proof_digest) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE seen.expires_at <= clock_timestamp()
            RETURNING 1
        """
    }

    /// The live answer for a token digest, with the milliseconds it has left.
    static func readIntrospection(_ digest: TokenDigest) -> PostgresQuery {
        """
        SELECT sealed_outcome, (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint
            FROM auth_gateway_introspections WHERE token_digest = \(ByteBuffer(bytes: digest.bytes)) AND expires_at > clock_timestamp()
        """
    }

    /// Stores (or replaces) the answer for a token digest for `keepMilliseconds`.
    static func storeIntrospection(
        _ digest: TokenDigest, sealedOutcome: [UInt8], keepMilliseconds: Int64
    ) -> PostgresQuery {
        """
        INSERT INTO auth_gateway_introspections AS stored (token_digest, sealed_outcome, expires_at)
            VALUES (\(ByteBuffer(bytes: digest.bytes)), \(ByteBuffer(bytes: sealedOutcome)), clock_timestamp() + \(keepMilliseconds)::bigint * interval '1 millisecond')
            ON CONFLICT (token_digest) DO UPDATE SET sealed_outcome = EXCLUDED.sealed_outcome, expires_at = EXCLUDED.expires_at
        """
    }

    static let sweepProofs: PostgresQuery = "DELETE FROM auth_gateway_dpop_proofs WHERE expires_at < clock_timestamp()"
    static let sweepIntrospections: PostgresQuery =
        "DELETE FROM auth_gateway_introspections WHERE expires_at < clock_timestamp()"
}
