/// `identityAssertion` (docs/assertions.md): how the gateway signs what it verified for the
/// backends of routes with `assertion`. The keys are read and checked with the rest of the
/// configuration, so a reload with a broken keys file fails whole and the keys in force stay.
public struct IdentityAssertionConfiguration: Sendable {
    public enum Format: String, Sendable {
        /// A JWT with `iss`, `sub`, `aud`, `iat`, `exp`, `jti`, `auth`, `cnf` and the mapped claims.
        case jwt
        /// An OAuth Transaction Token (draft-ietf-oauth-transaction-tokens): `typ: txntoken+jwt`.
        case txnToken = "txn-token"
    }

    public static let defaultHeader = "X-Gateway-Assertion"
    public static let transactionTokenHeader = "Txn-Token"

    /// `iss` of every assertion.
    public var issuer: String
    /// `keysFile`, resolved against the configuration's folder; read at every (re)load.
    public var keysFile: String
    public var keys: AssertionKeySet
    /// The request header the backend finds the assertion in; a client's own is removed.
    public var header: String
    /// The longest an assertion lives (never past the credential's own expiry).
    public var lifetimeSeconds: Int
    public var format: Format

    public init(
        issuer: String, keysFile: String, keys: AssertionKeySet, header: String? = nil, lifetimeSeconds: Int = 60,
        format: Format = .jwt
    ) {
        self.issuer = issuer
        self.keysFile = keysFile
        self.keys = keys
        self.header = header ?? (format == .txnToken ? Self.transactionTokenHeader : Self.defaultHeader)
        self.lifetimeSeconds = lifetimeSeconds
        self.format = format
    }
}

/// The keys of `identityAssertion.keysFile`: exactly one `current` (what the gateway signs
/// with), any number of `next` and `retired` (published only), each with a unique `kid`.
public struct AssertionKeySet: Sendable {
    public enum Status: String, Sendable {
        case next, current, retired
    }

    public struct Entry: Sendable {
        public let kid: String
        public let status: Status
        public let key: SigningKey
    }

    /// In file order.
    public let entries: [Entry]
    /// The JWKS of every entry's public part, in file order, members in a fixed order: every
    /// replica given the same file publishes these very bytes (docs/assertions.md).
    public let jwks: String

    /// nil unless exactly one entry is `current` and every `kid` is unique (the loader says why).
    public init?(entries: [Entry]) {
        guard entries.filter({ $0.status == .current }).count == 1,
            Set(entries.map(\.kid)).count == entries.count
        else { return nil }
        self.entries = entries
        let keys = entries.map { JSONValue.object($0.key.publicJWK(kid: $0.kid)) }
        self.jwks = JSONValue.object(["keys": .array(keys)]).jsonText
    }

    /// The key the gateway signs with.
    public var current: Entry { self.entries.first { $0.status == .current }! }
}

/// `routes[].assertion` (docs/assertions.md): `true`, or an object naming the audience and the
/// identity fields to carry as claims.
public struct RouteAssertion: Sendable {
    /// One mapped claim: its name in the assertion and the identity field it comes from
    /// (`claims.email`, `profile.groups`, `dpop.jkt` — docs/policies.md).
    public struct Claim: Sendable, Equatable {
        public var name: String
        public var path: IdentityValuePath
    }

    /// `aud`; the route's backend name unless set.
    public var audience: String
    /// In configuration order.
    public var claims: [Claim]

    public init(audience: String, claims: [Claim] = []) {
        self.audience = audience
        self.claims = claims
    }
}

/// `routes[].exchange` (docs/token-exchange.md): the backend receives a token the token
/// endpoint exchanged for the caller's, never the caller's own.
public struct ExchangeConfiguration: Sendable {
    public enum Grant: String, Sendable {
        /// RFC 8693: `subject_token` and `subject_token_type`.
        case tokenExchange = "token-exchange"
        /// RFC 7523 §2.1: the caller's token as `assertion`.
        case jwtBearer = "jwt-bearer"
    }

    public static let defaultTimeoutMilliseconds = 3000

    public var tokenEndpoint: UpstreamURL
    public var clientID: String?
    /// Never printed: a `Secret`.
    public var clientSecret: Secret?
    public var clientAuthentication: RefreshConfiguration.ClientAuthentication
    public var grant: Grant
    /// Each sent as its own `audience` field.
    public var audience: [String]
    /// Each sent as its own `resource` field (RFC 8707).
    public var resource: [String]
    public var scope: String?
    /// Further form fields, in configuration order (e.g. `requested_token_use`).
    public var extraParameters: [ExtraParameter]
    /// Bounds one call to the token endpoint (and a shared flight's lease: this plus a second).
    public var timeoutMilliseconds: Int

    public struct ExtraParameter: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public init(
        tokenEndpoint: UpstreamURL, clientID: String? = nil, clientSecret: Secret? = nil,
        clientAuthentication: RefreshConfiguration.ClientAuthentication = .basic, grant: Grant = .tokenExchange,
        audience: [String] = [], resource: [String] = [], scope: String? = nil, extraParameters: [ExtraParameter] = [],
        timeoutMilliseconds: Int = ExchangeConfiguration.defaultTimeoutMilliseconds
    ) {
        self.tokenEndpoint = tokenEndpoint
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.clientAuthentication = clientAuthentication
        self.grant = grant
        self.audience = audience
        self.resource = resource
        self.scope = scope
        self.extraParameters = extraParameters
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}
