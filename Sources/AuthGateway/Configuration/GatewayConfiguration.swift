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
    /// OpenTelemetry tracing (SPEC §4.10); nil: off.
    public var tracing: TracingConfiguration? = nil

    public func backend(named name: String) -> BackendConfiguration? {
        self.backends.first { $0.name == name }
    }

    /// Whether any route requirement or identity header reads the user's profile.
    public var usesProfiles: Bool {
        self.identityHeaders.contains { $0.path.source == .profile }
            || self.routes.contains { route in route.require.contains { $0.path.source == .profile } }
    }
}

public struct ListenerConfiguration: Sendable, Equatable {
    public var host: String
    /// 0 asks the OS for a free port (useful for tests); the bound port is then reported.
    public var port: Int
    public var tls: ListenerTLS?
    /// HTTP/2 on this listener (SPEC §4.9): by ALPN with TLS, by prior knowledge without.
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

    public static let defaultSources: [TokenSourceConfiguration] = [
        .header(name: "Authorization", bearer: true, raw: true),
        .cookie(name: "access_token"),
    ]
}

/// Where a token (access or refresh) may be found in a request.
public enum TokenSourceConfiguration: Sendable, Equatable {
    /// A header; `bearer` accepts `Bearer <token>` (scheme case-insensitive), `raw` accepts the
    /// bare token as the whole value (RainMaker's `Authorization: <token>`).
    case header(name: String, bearer: Bool, raw: Bool)
    case cookie(name: String)
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

public struct RemoteJWKSConfiguration: Sendable, Equatable {
    public var url: UpstreamURL
    public var refreshSeconds: Int
    public var minRefetchSeconds: Int
}

public struct AuthServiceConfiguration: Sendable {
    public var url: UpstreamURL
    public var timeoutMilliseconds: Int
    /// Extra trust anchor for an HTTPS auth service, beside the system store.
    public var caCertificatePEMFile: String?
    public var refresh: RefreshConfiguration?
    public var profile: ProfileConfiguration?
}

public struct RefreshConfiguration: Sendable {
    public enum RefreshProtocol: Sendable {
        /// RFC 6749 §6 form post.
        case oauth2(clientID: String?, clientSecret: String?, clientAuthentication: ClientAuthentication)
        /// A JSON body built from a template with `{refreshToken}` and `{claims.<name>}`.
        case json(bodyTemplate: JSONValue)
    }

    public enum ClientAuthentication: String, Sendable {
        case basic, form
    }

    public var `protocol`: RefreshProtocol
    public var path: String
    public var accessTokenField: String
    public var refreshTokenField: String
    public var refreshTokenSources: [TokenSourceConfiguration]
    public var accessTokenResponseHeader: String?
    public var refreshTokenResponseHeader: String?
    public var maxExpiredSeconds: Int
    public var graceSeconds: Int
}

public struct ProfileConfiguration: Sendable, Equatable {
    public enum Authorization: String, Sendable {
        case raw, bearer
    }

    public var path: String
    public var authorization: Authorization
    public var ttlSeconds: Int
    public var staleSeconds: Int
    public var maxEntries: Int
}

public struct BackendConfiguration: Sendable, Equatable {
    /// How the gateway talks to a backend (SPEC §4.9).
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
}

public struct RouteConfiguration: Sendable {
    public enum PathMatch: Sendable, Equatable {
        case prefix(String)
        case exact(String)
    }

    public enum AuthMode: String, Sendable {
        case required, optional, none
    }

    public var name: String
    /// Lower-cased; compared with the request's host without port.
    public var host: String?
    public var pathMatch: PathMatch
    /// Upper-case method names; nil matches every method.
    public var methods: Set<String>?
    public var backend: String
    public var auth: AuthMode
    public var require: [Requirement]
    public var stripPathPrefix: Bool
    public var forwardAccessToken: Bool

    package init(
        name: String, host: String?, pathMatch: PathMatch, methods: Set<String>?, backend: String, auth: AuthMode, require: [Requirement],
        stripPathPrefix: Bool, forwardAccessToken: Bool
    ) {
        self.name = name
        self.host = host
        self.pathMatch = pathMatch
        self.methods = methods
        self.backend = backend
        self.auth = auth
        self.require = require
        self.stripPathPrefix = stripPathPrefix
        self.forwardAccessToken = forwardAccessToken
    }
}

/// One entry of a route's `require`: the value at `path` must equal `expected`
/// (or, for an array value, contain it).
public struct Requirement: Sendable {
    public var path: IdentityValuePath
    public var expected: JSONValue
}

/// An outgoing header filled from a verified identity value.
public struct IdentityHeader: Sendable {
    public var name: String
    public var path: IdentityValuePath
}

/// `claims.<name>` or `profile.<name>`.
public struct IdentityValuePath: Sendable, Hashable, CustomStringConvertible {
    public enum Source: String, Sendable, Hashable {
        case claims, profile
    }

    public var source: Source
    public var name: String

    public init(source: Source, name: String) {
        self.source = source
        self.name = name
    }

    public init?(parsing text: String) {
        // Names end up in error descriptions and logs: no control characters.
        guard text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else { return nil }
        guard let dot = text.firstIndex(of: ".") else { return nil }
        guard let source = Source(rawValue: String(text[..<dot])) else { return nil }
        let name = String(text[text.index(after: dot)...])
        guard !name.isEmpty else { return nil }
        self.init(source: source, name: name)
    }

    public var description: String { "\(self.source.rawValue).\(self.name)" }
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

/// `tracing`: spans exported over OTLP/HTTP (SPEC §4.10).
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
