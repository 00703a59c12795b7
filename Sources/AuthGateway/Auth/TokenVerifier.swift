/// A token whose signature, issuer, audience and required claims checked out.
///
/// This is what the verified-token cache holds: everything that does not depend on the clock.
/// `timeFailure(now:)` runs on every use, cached or not.
public final class VerifiedToken: Sendable {
    public let issuerIndex: Int
    /// The `KeySnapshot.generation` it was verified under.
    public let generation: UInt64
    public let claims: JSONObject
    public let subject: String?
    public let expiresAt: Double
    public let notBefore: Double?
    public let issuedAt: Double?
    public let leewaySeconds: Double
    /// The key the token is bound to (`cnf.jkt`, RFC 9449 §6.1), nil for a token bound to none:
    /// read from the claims once here, so that a DPoP-aware route does not search a cached
    /// token's claims (cold memory when many tokens are live) on every request.
    public let confirmationThumbprint: String?

    init(
        issuerIndex: Int, generation: UInt64, claims: JSONObject, subject: String?, expiresAt: Double,
        notBefore: Double?, issuedAt: Double?, leewaySeconds: Double
    ) {
        self.issuerIndex = issuerIndex
        self.generation = generation
        self.claims = claims
        self.subject = subject
        self.expiresAt = expiresAt
        self.notBefore = notBefore
        self.issuedAt = issuedAt
        self.leewaySeconds = leewaySeconds
        if case .object(let confirmation)? = claims["cnf"], case .string(let thumbprint)? = confirmation["jkt"] {
            self.confirmationThumbprint = thumbprint
        } else {
            self.confirmationThumbprint = nil
        }
    }

    /// The time-dependent verdict at `now` (Unix seconds): nil when the token is current.
    /// `exp` is exclusive (RFC 7519 §4.1.4: valid only before it), with leeway on every check.
    @inline(__always)
    public func timeFailure(now: Double) -> TokenFailure? {
        if now >= self.expiresAt + self.leewaySeconds { return .expired }
        if let notBefore = self.notBefore, now + self.leewaySeconds < notBefore { return .notYetValid }
        if let issuedAt = self.issuedAt, issuedAt > now + self.leewaySeconds { return .issuedInFuture }
        return nil
    }

    /// Seconds since expiry (0 when not expired); used to bound transparent refresh.
    public func secondsSinceExpiry(now: Double) -> Double { max(0, now - self.expiresAt) }
}

/// A refusal plus, when known, the issuer the token claimed (for a JWKS refetch on unknown kid).
public struct TokenRejection: Error, Sendable, Equatable {
    public let failure: TokenFailure
    public let issuerIndex: Int?

    public init(_ failure: TokenFailure, issuerIndex: Int? = nil) {
        self.failure = failure
        self.issuerIndex = issuerIndex
    }
}

/// Verifies JWS compact tokens against a `KeySnapshot`. Pure and synchronous: no I/O, no
/// locks, no clock — it runs on the connection's event loop.
public enum TokenVerifier {
    /// Signature, issuer, audience and claim-shape checks: the cacheable half.
    ///
    /// Order (each step only runs when the ones before passed): structure → supported `alg` →
    /// `crit` → issuer by the unverified `iss` → key by `kid` (or by `alg` when there is no
    /// `kid`) → `alg` matches the key → signature → claims.
    public static func verifySignature(
        token: UnsafeRawBufferPointer, keys: KeySnapshot
    ) -> Result<VerifiedToken, TokenRejection> {
        Self.signedClaims(token: token, keys: keys).flatMap { claims, _, issuerIndex in
            Self.checkClaims(
                claims, issuer: keys.issuers[issuerIndex], issuerIndex: issuerIndex, generation: keys.generation)
        }
    }

    /// The payload and protected header of a JWS whose signature verifies with a key of the
    /// issuer its `iss` names, and that issuer's index; no claim is checked. For tokens whose claims follow other rules
    /// than access tokens' (ID tokens, logout tokens: docs/browser-sign-in.md).
    static func signedClaims(
        token: UnsafeRawBufferPointer, keys: KeySnapshot
    ) -> Result<(claims: JSONObject, header: JSONObject, issuerIndex: Int), TokenRejection> {
        let jws: CompactJWS
        do {
            jws = try CompactJWS.parse(token)
        } catch {
            return .failure(TokenRejection(error))
        }
        guard case .string(let issuerName)? = jws.payload["iss"], let issuerIndex = keys.issuerIndex(for: issuerName)
        else {
            return .failure(TokenRejection(.wrongIssuer))
        }
        let issuer = keys.issuers[issuerIndex]
        let signingInput = UnsafeRawBufferPointer(rebasing: token[..<jws.signingInputLength])

        if let kid = jws.keyID {
            guard let key = issuer.keysByID[kid] else {
                return .failure(TokenRejection(.unknownKey, issuerIndex: issuerIndex))
            }
            guard key.algorithm.rawValue == jws.algorithm else {
                return .failure(TokenRejection(.algorithmMismatch, issuerIndex: issuerIndex))
            }
            guard key.isValidSignature(jws.signature, for: signingInput) else {
                return .failure(TokenRejection(.badSignature, issuerIndex: issuerIndex))
            }
        } else {
            let candidates = issuer.keysWithoutID.filter { $0.algorithm.rawValue == jws.algorithm }
            guard !candidates.isEmpty else { return .failure(TokenRejection(.unknownKey, issuerIndex: issuerIndex)) }
            guard candidates.contains(where: { $0.isValidSignature(jws.signature, for: signingInput) }) else {
                return .failure(TokenRejection(.badSignature, issuerIndex: issuerIndex))
            }
        }
        return .success((jws.payload, jws.header, issuerIndex))
    }

    private static func checkClaims(
        _ claims: JSONObject, issuer: KeySnapshot.Issuer, issuerIndex: Int, generation: UInt64
    ) -> Result<VerifiedToken, TokenRejection> {
        func reject(_ failure: TokenFailure) -> Result<VerifiedToken, TokenRejection> {
            .failure(TokenRejection(failure, issuerIndex: issuerIndex))
        }
        guard let expValue = claims["exp"] else { return reject(.missingClaim) }
        guard case .number(let exp) = expValue else { return reject(.invalidClaim) }
        var notBefore: Double?
        if let value = claims["nbf"] {
            guard case .number(let number) = value else { return reject(.invalidClaim) }
            notBefore = number.double
        }
        var issuedAt: Double?
        if let value = claims["iat"] {
            guard case .number(let number) = value else { return reject(.invalidClaim) }
            issuedAt = number.double
        }
        var subject: String?
        if let value = claims["sub"] {
            guard case .string(let text) = value else { return reject(.invalidClaim) }
            subject = text
        }
        if let audiences = issuer.audiences {
            switch claims["aud"] {
            case nil:
                return reject(.missingClaim)
            case .string(let audience)?:
                guard audiences.contains(audience) else { return reject(.wrongAudience) }
            case .array(let values)?:
                var matched = false
                for value in values {
                    guard case .string(let audience) = value else { return reject(.invalidClaim) }
                    if audiences.contains(audience) { matched = true }
                }
                guard matched else { return reject(.wrongAudience) }
            case .some:
                return reject(.invalidClaim)
            }
        }
        for name in issuer.requiredClaims where claims[name] == nil || claims[name] == .null {
            return reject(.missingClaim)
        }
        return .success(
            VerifiedToken(
                issuerIndex: issuerIndex,
                generation: generation,
                claims: claims,
                subject: subject,
                expiresAt: exp.double,
                notBefore: notBefore,
                issuedAt: issuedAt,
                leewaySeconds: Double(issuer.leewaySeconds)
            )
        )
    }
}
