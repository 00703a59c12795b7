/// Introspection answers sealed for the shared table (docs/authentication.md) exactly as refresh
/// outcomes are: `{"o":"active","c":{the answer's members}}` or `{"o":"inactive"}`. How long an
/// answer lasts is not sealed: it is the row's `expires_at`, read as milliseconds left by the
/// database's clock, so the instances' clocks need not agree.
extension OutcomeSealer {
    /// nil for `unavailable`, which is never stored.
    func seal(_ outcome: IntrospectionOutcome, for digest: TokenDigest) -> [UInt8]? {
        switch outcome {
        case .active(let claims, _): return self.seal(document: ["o": "active", "c": .object(claims)], for: digest)
        case .inactive: return self.seal(document: ["o": "inactive"], for: digest)
        case .unavailable: return nil
        }
    }

    /// The stored answer, valid until `validUntil` (the reader's clock).
    func openIntrospection(
        _ sealed: [UInt8], for digest: TokenDigest, validUntil: Double
    ) throws(OpenError) -> IntrospectionOutcome {
        let document = try self.openDocument(sealed, for: digest)
        switch document["o"]?.stringValue {
        case "active":
            guard case .object(let claims)? = document["c"] else { throw OpenError(reason: .unreadable) }
            return .active(claims: claims, validUntil: validUntil)
        case "inactive":
            return .inactive(validUntil: validUntil)
        default:
            throw OpenError(reason: .unreadable)
        }
    }
}
