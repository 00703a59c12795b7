/// `tokens.introspection.forJWTs` (docs/authentication.md): what a verified JWT becomes once the
/// introspection endpoint answers that it is active.
///
/// **The JWT's claims win.** They are signed by the issuer and were verified (signature, `iss`,
/// `aud`, `requiredClaims`, the clock) before the endpoint was asked; the endpoint's answer is
/// unsigned, and for a JWT the gateway asks it one thing only: is the token still active (not
/// revoked)? Taking the answer's members as claims would let identity headers, `require`,
/// rate limits and profiles depend on a second view of the token that providers shape
/// differently (Glewlwyd adds `username` and leaves out `iss`; others drop `aud` or map `sub`),
/// and would let an endpoint that is misconfigured — or answers for another token — change who
/// the caller is. So the answer decides active or not, and nothing else.
///
/// **Except `cnf.jkt`, which may only tighten.** A DPoP binding (RFC 9449 §6) that the answer
/// carries and the JWT does not is adopted: the token then needs a proof by that key, which can
/// only make it harder to use. A binding the JWT carries is never removed or replaced: an answer
/// naming another key, or a `jkt` that is not a string, refuses the token (the provider and the
/// token disagree about who holds it). Other `cnf` members (an mTLS `x5t#S256`) are not
/// checked by this gateway and are left as the JWT has them.
enum IntrospectedJWT {
    /// The claims the request goes on with: `verified` itself (no new binding), a copy whose
    /// `cnf` gained the answer's `jkt`, or nil when the answer's binding contradicts the JWT.
    static func adopt(_ verified: VerifiedToken, answer: JSONObject) -> VerifiedToken? {
        guard let answered = answer["cnf"]?.objectValue, let answeredKey = answered["jkt"] else { return verified }
        guard case .string(let answeredThumbprint) = answeredKey, !answeredThumbprint.isEmpty else { return nil }
        var confirmation = verified.claims["cnf"]?.objectValue ?? JSONObject()
        if let signed = confirmation["jkt"] {
            return signed == .string(answeredThumbprint) ? verified : nil
        }
        confirmation["jkt"] = .string(answeredThumbprint)
        var claims = verified.claims
        claims["cnf"] = .object(confirmation)
        return VerifiedToken(
            issuerIndex: verified.issuerIndex, generation: verified.generation, claims: claims,
            subject: verified.subject, expiresAt: verified.expiresAt,
            notBefore: verified.notBefore, issuedAt: verified.issuedAt, leewaySeconds: verified.leewaySeconds
        )
    }
}
