import Logging

/// The validated configuration: every default applied, every file it names read and parsed.
///
/// Built once by `ConfigurationLoader`; immutable afterwards. A reload builds a new one.
public struct GatewayConfiguration: Sendable {
    /// The file it was read from, when it came from one.
    public var sourcePath: String?
    public var listener: ListenerConfiguration
    public var admin: ListenerConfiguration?
    /// 0 means one per CPU core.
    public var eventLoopThreads: Int
    public var limits: LimitsConfiguration
    public var timeouts: TimeoutsConfiguration
    public var tokens: TokensConfiguration
    public var authService: AuthServiceConfiguration?
    public var backends: [BackendConfiguration]
    public var routes: [RouteConfiguration]
    public var identityHeaders: [IdentityHeader]
    public var stripInboundHeaderPrefixes: [String]
    public var trustedProxies: [CIDR]
    public var health: HealthConfiguration
    public var logging: LoggingConfiguration
    /// Off (nil) unless configured: then each process keeps its own refresh table.
    public var sharedState: SharedStateConfiguration? = nil
    /// OpenTelemetry tracing (docs/operations.md); nil: off.
    public var tracing: TracingConfiguration? = nil
    /// Token buckets per identity (docs/rate-limits.md); empty: no limits.
    public var rateLimits: [RateLimitConfiguration] = []
    /// `browserSignIn` (docs/browser-sign-in.md); nil: browsers cannot sign in.
    public var browserSignIn: BrowserSignInConfiguration? = nil
    /// `authorizer` (docs/authorizer.md); nil: no other proxy's questions are answered.
    public var authorizer: AuthorizerConfiguration? = nil
    /// `paths` (docs/forwarding.md, "Request targets"): how request paths are made canonical.
    public var paths = PathSettings()
    /// `signals` (docs/streams.md): the Shared Signals receiver; nil: off.
    public var signals: SignalsConfiguration? = nil
    /// `identityAssertion` (docs/assertions.md); nil: no route may ask for an assertion.
    public var identityAssertion: IdentityAssertionConfiguration? = nil

    /// What `check` prints as warnings: settings that work but weaken a guarantee.
    public var warnings: [String] {
        var warnings: [String] = []
        if self.paths.escapedSlashes == .keep {
            warnings.append(
                "paths.escapedSlashes: \"keep\" passes %2F and %5C to backends inside a segment; a backend that decodes them may resolve the path to another route (docs/forwarding.md)"
            )
        }
        return warnings
    }

    public func backend(named name: String) -> BackendConfiguration? {
        self.backends.first { $0.name == name }
    }

    /// Whether any route requirement or identity header reads the user's profile.
    public var usesProfiles: Bool {
        self.identityHeaders.contains { $0.path.source == .profile }
            || self.routes.contains { $0.require.readsProfile }
            || self.routes.contains { $0.assertion?.claims.contains { $0.path.source == .profile } == true }
    }
}

public struct ListenerConfiguration: Sendable, Equatable {
    public var host: String
    /// 0 asks the OS for a free port (useful for tests); the bound port is then reported.
    public var port: Int
    public var tls: ListenerTLS?
    /// HTTP/2 on this listener (docs/http2.md): by ALPN with TLS, by prior knowledge without.
    public var http2 = true
}

public struct ListenerTLS: Sendable, Equatable {
    public var certificatePEMFile: String
    public var privateKeyPEMFile: String
}

public struct LimitsConfiguration: Sendable, Equatable {
    public var maxHeaderBytes = 32768
    public var maxRequestBodyBytes = 104_857_600
    public var maxConnections = 20000
    /// Concurrent HTTP/2 streams per client connection (SETTINGS_MAX_CONCURRENT_STREAMS).
    public var maxConcurrentStreams = 100
}

public struct TimeoutsConfiguration: Sendable, Equatable {
    public var requestHeaderSeconds = 10
    public var idleSeconds = 60
    public var drainSeconds = 20
}

public struct TokensConfiguration: Sendable {
    public var sources: [TokenSourceConfiguration]
    public var issuers: [IssuerConfiguration]
    public var verifiedCacheEntries: Int
    /// Opaque tokens by RFC 7662 introspection (docs/authentication.md); off when nil.
    public var introspection: IntrospectionConfiguration? = nil
    /// DPoP proofs (docs/authentication.md); defaults when the section is absent.
    public var dpop = DPoPConfiguration()
    /// API keys for machine clients (docs/policies.md, "API keys"); off when nil.
    public var apiKeys: APIKeysConfiguration? = nil

    public static let defaultSources: [TokenSourceConfiguration] = [
        .header(name: "Authorization", bearer: true, raw: true),
        .cookie(name: "access_token"),
    ]
}

/// `tokens.introspection` (docs/authentication.md): where opaque access tokens are checked, and how
/// long the answers are kept.
public struct IntrospectionConfiguration: Sendable, Equatable {
    /// The endpoint; nil when `discoveryIssuer`'s document names it.
    public var url: UpstreamURL?
    /// The issuer (with `discovery: true`) whose discovery document's `introspection_endpoint`
    /// is used when `url` is absent: `tokens.introspection.discoveryIssuer`, else
    /// `authService.discoveryIssuer` (set by the loader).
    public var discoveryIssuer: String?
    public var clientID: String?
    /// Printed as `<redacted>` (`Secret`), as every secret of the configuration.
    public var clientSecret: Secret?
    public var clientAuthentication: RefreshConfiguration.ClientAuthentication = .basic
    public var cacheSeconds = 60
    public var negativeCacheSeconds = 5
    public var timeoutMilliseconds = 1000
    /// The `iss` an answer must carry when it has one; also the issuer of the identity (the
    /// profile cache's key) — the endpoint's URL when unset.
    public var issuer: String?
    /// When set, an answer's `aud` (string or array), when present, must contain one of them.
    public var audiences: [String]?
    /// Also introspect tokens that verified as JWTs (revocation within `cacheSeconds`).
    public var forJWTs = false

    /// The issuer name identities from this endpoint carry.
    public var identityIssuer: String { self.issuer ?? self.url?.description ?? self.discoveryIssuer ?? "" }
}

/// `tokens.dpop` (docs/authentication.md, RFC 9449): how proofs of possession are checked.
public struct DPoPConfiguration: Sendable, Equatable {
    public static let defaultAlgorithms: [JWSAlgorithm] = [.ES256, .RS256, .PS256, .EdDSA]

    /// Accepted proof algorithms, in the order `WWW-Authenticate`'s `algs` lists them.
    public var algorithms: [JWSAlgorithm] = Self.defaultAlgorithms
    public var maxAgeSeconds = 60
    public var leewaySeconds = 5
    /// `scheme://authority` the clients see (behind a proxy that sets no `X-Forwarded-*`);
    /// when set, only that base is accepted in `htu`.
    public var publicBaseURL: String?
    /// `DPoP-Nonce` issuing (RFC 9449 §8): proofs must carry a nonce the gateway issued within
    /// `maxAgeSeconds` (`DPoPNonce`).
    public var nonce = false

    public init() {}
}

/// Where a token (access or refresh) may be found in a request.
public enum TokenSourceConfiguration: Sendable, Equatable {
    /// A header; `bearer` accepts `Bearer <token>` (scheme case-insensitive), `raw` accepts the
    /// bare token as the whole value (RainMaker's `Authorization: <token>`).
    case header(name: String, bearer: Bool, raw: Bool)
    case cookie(name: String)
    /// An entry of `Sec-WebSocket-Protocol` that starts with `prefix`, the rest being the
    /// token in base64url (a browser's WebSocket cannot send `Authorization`; Kubernetes'
    /// `base64url.bearer.authorization.k8s.io.`): docs/streams.md.
    case websocketProtocol(prefix: String)
}

public struct IssuerConfiguration: Sendable {
    public var issuer: String
    /// When set, a token's `aud` must contain one of these.
    public var audiences: [String]?
    /// Keys from `keys[]` and `jwksFile`, loaded at start-up.
    public var staticKeys: [VerificationKey]
    public var jwks: RemoteJWKSConfiguration?
    public var leewaySeconds: Int
    public var requiredClaims: [String]
}

/// A key set fetched over HTTP: from a configured `jwksURL`, or from the `jwks_uri` of the
/// issuer's OpenID Connect discovery document (docs/authentication.md).
public struct RemoteJWKSConfiguration: Sendable, Equatable {
    public enum Source: Sendable, Equatable {
        case url(UpstreamURL)
        case discovery(DiscoveryConfiguration)

        /// Where fetching starts: the JWKS URL, or the discovery document's URL. A reload
        /// keeps what was fetched while this is unchanged.
        public var fetchURL: UpstreamURL {
            switch self {
            case .url(let url): return url
            case .discovery(let discovery): return discovery.documentURL
            }
        }
    }

    public var source: Source
    public var refreshSeconds: Int
    public var minRefetchSeconds: Int

    /// The configured `jwksURL`; nil when discovery supplies it.
    public var url: UpstreamURL? {
        if case .url(let url) = self.source { return url }
        return nil
    }

    public var discovery: DiscoveryConfiguration? {
        if case .discovery(let discovery) = self.source { return discovery }
        return nil
    }
}

/// `tokens.issuers[].discovery: true`: where the issuer's discovery document is, and which of
/// its optional endpoints the configuration relies on (a document without them is refused).
public struct DiscoveryConfiguration: Sendable, Equatable {
    /// `{issuer}/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4).
    public var documentURL: UpstreamURL
    /// `authService.discoveryIssuer` names this issuer and an `oauth2` refresh has no `path`.
    public var needsTokenEndpoint = false
    /// `authService.discoveryIssuer` names this issuer and the profile has no `path`.
    public var needsUserinfoEndpoint = false
    /// `tokens.introspection` has no `url` and takes this issuer's `introspection_endpoint`.
    public var needsIntrospectionEndpoint = false
    /// `browserSignIn.issuer` names this issuer: browsers are sent to its
    /// `authorization_endpoint`.
    public var needsAuthorizationEndpoint = false

    public init(documentURL: UpstreamURL, needsTokenEndpoint: Bool = false, needsUserinfoEndpoint: Bool = false) {
        self.documentURL = documentURL
        self.needsTokenEndpoint = needsTokenEndpoint
        self.needsUserinfoEndpoint = needsUserinfoEndpoint
    }

    /// The discovery document's URL for `issuer`: the issuer without a trailing `/`, then
    /// `/.well-known/openid-configuration`. Nil when the issuer is not an http(s) URL without
    /// query or fragment (OpenID Connect Core §2 `iss`).
    public static func documentURL(forIssuer issuer: String) -> UpstreamURL? {
        guard !issuer.contains("?"), !issuer.contains("#"), case .success(var url) = UpstreamURL.parse(issuer) else {
            return nil
        }
        var path = url.pathAndQuery
        while path.hasSuffix("/") { path.removeLast() }
        url.pathAndQuery = path + "/.well-known/openid-configuration"
        return url
    }
}

public struct AuthServiceConfiguration: Sendable {
    /// Base URL for `refresh.path` and `profile.path`; optional when `discoveryIssuer`
    /// supplies the endpoints.
    public var url: UpstreamURL?
    /// An issuer with `discovery: true` whose `token_endpoint` (oauth2 refresh) and
    /// `userinfo_endpoint` (profile) are used where no `path` is configured (docs/authentication.md).
    public var discoveryIssuer: String?
    public var timeoutMilliseconds: Int
    /// Extra trust anchor for an HTTPS auth service, beside the system store.
    public var caCertificatePEMFile: String?
    public var refresh: RefreshConfiguration?
    public var profile: ProfileConfiguration?
}

public struct RefreshConfiguration: Sendable {
    public enum RefreshProtocol: Sendable {
        /// RFC 6749 §6 form post.
        case oauth2(clientID: String?, clientSecret: Secret?, clientAuthentication: ClientAuthentication)
        /// A JSON body built from a template with `{refreshToken}` and `{claims.<name>}`.
        case json(bodyTemplate: JSONValue)
    }

    public enum ClientAuthentication: String, Sendable {
        case basic, form
    }

    public var `protocol`: RefreshProtocol
    /// On `authService.url`; nil: the discovered `token_endpoint`.
    public var path: String?
    public var accessTokenField: String
    public var refreshTokenField: String
    public var refreshTokenSources: [TokenSourceConfiguration]
    public var accessTokenResponseHeader: String?
    public var refreshTokenResponseHeader: String?
    public var maxExpiredSeconds: Int
    public var graceSeconds: Int
}

/// Never the client secret nor the JSON template, which may hold a `${NAME}` secret
/// (docs/operations.md, "What is never logged").
extension RefreshConfiguration.RefreshProtocol: CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public var description: String {
        switch self {
        case .oauth2(let clientID, let clientSecret, let authentication):
            let id = clientID.map { "\"\($0)\"" } ?? "nil"
            return "oauth2(clientID: \(id), clientSecret: \(clientSecret.map { "\($0)" } ?? "nil"), \(authentication))"
        case .json: return "json(bodyTemplate: <redacted>)"
        }
    }
    public var debugDescription: String { self.description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: nil) }
}

public struct ProfileConfiguration: Sendable, Equatable {
    public enum Authorization: String, Sendable {
        case raw, bearer
    }

    /// On `authService.url`; nil: the discovered `userinfo_endpoint`.
    public var path: String?
    public var authorization: Authorization
    public var ttlSeconds: Int
    public var staleSeconds: Int
    public var maxEntries: Int
}

public struct BackendConfiguration: Sendable, Equatable {
    /// The most URLs a backend with `healthCheck` or `outlierDetection` may list: their states
    /// are kept in 64-bit masks (`TargetHealth`, `TargetAvailability`).
    static let maxTrackedURLs = 64

    /// How the gateway talks to a backend (docs/http2.md).
    public enum WireProtocol: String, Sendable, Equatable {
        /// HTTP/1.1 with keep-alive.
        case http1
        /// HTTP/2 over TLS (ALPN h2).
        case h2
        /// HTTP/2 over cleartext, by prior knowledge.
        case h2c

        public var isHTTP2: Bool { self != .http1 }
    }

    public var name: String
    public var urls: [UpstreamURL]
    public var wireProtocol: WireProtocol = .http1
    public var connectTimeoutMilliseconds: Int
    public var responseTimeoutMilliseconds: Int
    public var maxConnectionsPerThread: Int
    /// `tls` (docs/forwarding.md); nil: `https` URLs are verified against the system trust store.
    public var tls: BackendTLSConfiguration? = nil
    /// `healthCheck` (docs/forwarding.md); nil: no probes, every URL counts as healthy.
    public var healthCheck: HealthCheckConfiguration? = nil
    /// `outlierDetection` (docs/forwarding.md); nil: no ejection (a refused connect still sits out 2 s).
    public var outlierDetection: OutlierDetectionConfiguration? = nil
}

public struct HealthConfiguration: Sendable, Equatable {
    public var path = "/healthz"
    public var readyPath = "/readyz"
    public var livePath = "/livez"
}

public struct LoggingConfiguration: Sendable, Equatable {
    public var level: Logger.Level = .info
    public var accessLog = true
}

/// `tracing`: spans exported over OTLP/HTTP (docs/operations.md).
public struct TracingConfiguration: Sendable, Equatable {
    /// The collector's base URL (`/v1/traces` is appended), e.g. `http://collector:4318`.
    public var otlpEndpoint: String
    public var serviceName = "auth-gateway"
    /// Share of new traces recorded, 0…1; a client's sampled `traceparent` is always followed.
    public var sampleRatio = 1.0
    /// Record the verified `sub` on the server span (off: no user identifier in traces).
    public var recordSubject = false
    /// OTLP/HTTP encoding: protobuf (the default of collectors) or JSON.
    public var otlpProtocol = OTLPProtocol.protobuf

    public enum OTLPProtocol: String, Sendable, Equatable {
        case protobuf = "http/protobuf"
        case json = "http/json"
    }
}
