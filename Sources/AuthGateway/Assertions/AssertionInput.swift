/// What an assertion says about one authorized request (docs/assertions.md): filled by the
/// pipeline's assertion step from the identity it decided and the route's `assertion`.
public struct AssertionInput: Sendable {
    /// What proved the caller: the assertion's `auth` claim.
    public enum AuthKind: String, Sendable, CaseIterable {
        case jwt, introspection, apikey, session
    }

    /// The request a transaction token describes (`rctx`); unused by `format: jwt`.
    public struct RequestContext: Sendable, Equatable {
        /// The client's address (`req_ip`), as `client.ip` reads it.
        public var clientIP: String
        public var method: String
        /// The canonical path, without the query.
        public var path: String

        public init(clientIP: String, method: String, path: String) {
            self.clientIP = clientIP
            self.method = method
            self.path = path
        }
    }

    /// `sub`: the identity's subject.
    public var subject: String
    /// `aud`: the route's `assertion.audience` (by default its backend's name).
    public var audience: String
    public var authKind: AuthKind
    /// `cnf.jkt`: the thumbprint of the verified DPoP proof's key; nil for an unbound caller.
    public var thumbprint: String?
    /// The route's mapped claims, already read from the identity (absent fields left out).
    public var claims: JSONObject
    /// When the credential itself expires (the token's `exp`, the API key's `expires`, the
    /// session's end); nil when it does not. No assertion outlives it.
    public var credentialExpiresAt: Double?
    /// `scope` of a transaction token: the caller's `scope` claim, if any.
    public var scope: String?
    /// `rctx` of a transaction token.
    public var request: RequestContext?

    public init(
        subject: String, audience: String, authKind: AuthKind, thumbprint: String? = nil, claims: JSONObject = [:],
        credentialExpiresAt: Double? = nil, scope: String? = nil, request: RequestContext? = nil
    ) {
        self.subject = subject
        self.audience = audience
        self.authKind = authKind
        self.thumbprint = thumbprint
        self.claims = claims
        self.credentialExpiresAt = credentialExpiresAt
        self.scope = scope
        self.request = request
    }

    /// Whether `other` asks for the same assertion (everything but the expiry and the
    /// transaction context, which the reuse rule checks apart).
    func sameIdentity(as other: AssertionInput) -> Bool {
        self.subject == other.subject && self.audience == other.audience && self.authKind == other.authKind
            && self.thumbprint == other.thumbprint && self.claims == other.claims
    }

    /// A hash of what `sameIdentity` compares: a memo slot.
    func identityHash(into hasher: inout Hasher) {
        hasher.combine(self.subject)
        hasher.combine(self.audience)
        hasher.combine(self.authKind)
        hasher.combine(self.thumbprint)
        for entry in self.claims.entries {
            hasher.combine(entry.key)
            Self.hash(entry.value, into: &hasher)
        }
    }

    private static func hash(_ value: JSONValue, into hasher: inout Hasher) {
        switch value {
        case .null: hasher.combine(0)
        case .bool(let flag): hasher.combine(flag)
        case .number(let number): hasher.combine(number.double)
        case .string(let text): hasher.combine(text)
        case .array(let elements):
            hasher.combine(elements.count)
            for element in elements { Self.hash(element, into: &hasher) }
        case .object(let object):
            hasher.combine(object.entries.count)
            for entry in object.entries {
                hasher.combine(entry.key)
                Self.hash(entry.value, into: &hasher)
            }
        }
    }
}
