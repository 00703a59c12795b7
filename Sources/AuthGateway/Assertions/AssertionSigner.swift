/// One event loop's signer of identity assertions (docs/assertions.md), built from a
/// configuration snapshot's `identityAssertion`: a compact JWS signed with the `current` key.
///
/// A JWT assertion is reused for the same inputs — subject, audience, auth kind, `cnf.jkt`,
/// the mapped claims' values — until 80 % of its life has passed, so a repeated request pays
/// no signature. The memo is direct-mapped and confined to its loop (no lock); it belongs to
/// this signer, which a reload replaces with its configuration, so an assertion signed with a
/// key set that is no longer in force is never reused. A transaction token (`format:
/// txn-token`) carries the request's own context (`rctx`, a fresh `txn`) and is signed for
/// every request.
package final class AssertionSigner {
    private struct Memo {
        let input: AssertionInput
        let token: String
        let expiresAt: Double
        let reuseUntil: Double
    }

    let configuration: IdentityAssertionConfiguration
    private let key: SigningKey
    /// `base64url(header) + "."`, made once.
    private let headerPart: String
    private var memo: [Memo?]
    private let metrics: WorkerMetrics?
    /// Signatures this signer made (`auth_gateway_assertions_signed_total` counts them per loop).
    package private(set) var signatures = 0

    static let reusedFraction = 0.8

    package convenience init(configuration: IdentityAssertionConfiguration, slotCount: Int = 256) {
        self.init(configuration: configuration, metrics: nil, slotCount: slotCount)
    }

    init(configuration: IdentityAssertionConfiguration, metrics: WorkerMetrics?, slotCount: Int = 256) {
        precondition(slotCount > 0 && slotCount & (slotCount - 1) == 0, "slot count must be a power of two")
        self.configuration = configuration
        let current = configuration.keys.current
        self.key = current.key
        let type = configuration.format == .txnToken ? "txntoken+jwt" : "JWT"
        let header: JSONValue = [
            "alg": .string(current.key.algorithm.rawValue), "typ": .string(type), "kid": .string(current.kid),
        ]
        self.headerPart = Base64URL.encode(header.jsonText.utf8) + "."
        self.memo = Array(repeating: nil, count: slotCount)
        self.metrics = metrics
    }

    /// The header the backend reads the assertion from (`identityAssertion.header`).
    package var header: String { self.configuration.header }

    /// The assertion for `input` at `now` (Unix seconds): reused from this loop's memo while
    /// within 80 % of its life, else signed now.
    package func assertion(for input: AssertionInput, now: Double) -> String {
        if self.configuration.format == .txnToken {
            return self.sign(payload: self.transactionTokenPayload(input, now: now))
        }
        var hasher = Hasher()
        input.identityHash(into: &hasher)
        let slot = hasher.finalize() & (self.memo.count - 1)
        let credentialEnd = input.credentialExpiresAt ?? .infinity
        if let memo = self.memo[slot], now < memo.reuseUntil, memo.expiresAt <= credentialEnd,
            memo.input.sameIdentity(as: input)
        {
            return memo.token
        }
        let issuedAt = now.rounded(.down)
        let expiresAt = min(issuedAt + Double(self.configuration.lifetimeSeconds), credentialEnd.rounded(.down))
        let token = self.sign(payload: self.payload(input, issuedAt: issuedAt, expiresAt: expiresAt))
        let reuseUntil = issuedAt + (expiresAt - issuedAt) * Self.reusedFraction
        self.memo[slot] = Memo(input: input, token: token, expiresAt: expiresAt, reuseUntil: reuseUntil)
        return token
    }

    /// The claims of a JWT assertion, registered ones first; a mapped claim never replaces one
    /// (the loader refuses such names; this holds even without it).
    private func payload(_ input: AssertionInput, issuedAt: Double, expiresAt: Double) -> String {
        var output = ""
        output.reserveCapacity(256 + input.subject.utf8.count)
        output += "{\"iss\":"
        JSONValue.writeString(self.configuration.issuer, to: &output)
        output += ",\"sub\":"
        JSONValue.writeString(input.subject, to: &output)
        output += ",\"aud\":"
        JSONValue.writeString(input.audience, to: &output)
        output += ",\"iat\":\(Int64(issuedAt)),\"exp\":\(Int64(expiresAt)),\"jti\":\""
        output += Self.randomID()
        output += "\",\"auth\":\"\(input.authKind.rawValue)\""
        if let thumbprint = input.thumbprint {
            output += ",\"cnf\":{\"jkt\":"
            JSONValue.writeString(thumbprint, to: &output)
            output += "}"
        }
        for entry in input.claims.entries where !ConfigurationLoader.registeredAssertionClaims.contains(entry.key) {
            output += ","
            JSONValue.writeString(entry.key, to: &output)
            output += ":"
            entry.value.write(to: &output)
        }
        output += "}"
        return output
    }

    /// A transaction token's claims (draft-ietf-oauth-transaction-tokens §4.2): `txn`, `sub`,
    /// `scope`, `tctx` (the mapped claims), `rctx` (`req_ip`, `authn`, method and path), with
    /// `iss`, `aud`, `iat` and `exp` for the backend's checks.
    private func transactionTokenPayload(_ input: AssertionInput, now: Double) -> String {
        let issuedAt = now.rounded(.down)
        let credentialEnd = (input.credentialExpiresAt ?? .infinity).rounded(.down)
        let expiresAt = min(issuedAt + Double(self.configuration.lifetimeSeconds), credentialEnd)
        var rctx: JSONObject = ["authn": .string(input.authKind.rawValue)]
        if let request = input.request {
            rctx["req_ip"] = .string(request.clientIP)
            rctx["method"] = .string(request.method)
            rctx["path"] = .string(request.path)
        }
        var claims: JSONObject = [
            "iss": .string(self.configuration.issuer), "aud": .string(input.audience),
            "iat": .number(JSONNumber(Int(issuedAt))), "exp": .number(JSONNumber(Int(expiresAt))),
            "txn": .string(Self.randomID()), "sub": .string(input.subject),
        ]
        if let scope = input.scope { claims["scope"] = .string(scope) }
        claims["tctx"] = .object(input.claims)
        claims["rctx"] = .object(rctx)
        return JSONValue.object(claims).jsonText
    }

    private func sign(payload: String) -> String {
        var token = self.headerPart
        token += Base64URL.encode(payload.utf8)
        let signature = self.key.signature(of: Array(token.utf8))
        token += "."
        token += Base64URL.encode(signature)
        self.signatures += 1
        self.metrics?.increment(.assertionsSigned)
        return token
    }

    /// 128 random bits, base64url: a `jti` or `txn`.
    private static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return withUnsafeBytes(of: (high, low)) { Base64URL.encode($0) }
    }
}

@available(*, unavailable)
extension AssertionSigner: Sendable {}
