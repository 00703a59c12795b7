import Foundation
import Logging
import NIOSSL

/// Turns a configuration file into a `GatewayConfiguration`, or into every reason it cannot.
///
/// Reading (strict keys, types, defaults, `${NAME}`) and validation (cross references, URLs,
/// key files) happen in one pass so all problems come back together, each with its JSON path.
public struct ConfigurationLoader: Sendable {
    public var environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Loads `path`; relative file names inside are resolved against the file's folder.
    public func load(path: String) throws(ConfigurationError) -> GatewayConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(issues: [.init(path: "", message: "cannot read \(path): \(Self.describe(error))")])
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var configuration = try self.load(text: text, baseDirectory: folder)
        configuration.sourcePath = path
        return configuration
    }

    public func load(text: String, baseDirectory: String) throws(ConfigurationError) -> GatewayConfiguration {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: text)
        } catch {
            throw ConfigurationError(issues: [.init(path: "", message: "invalid JSON: \(error)")])
        }
        guard case .object(let root) = document else {
            throw ConfigurationError(issues: [.init(path: "", message: "the configuration must be a JSON object")])
        }
        let issues = IssueCollector()
        let reader = ConfigReader(object: root, path: "", issues: issues, environment: self.environment)
        let files = FileResolver(baseDirectory: baseDirectory)
        let configuration = Self.read(reader, files: files)
        reader.finish()
        if let configuration, issues.issues.isEmpty {
            return configuration
        }
        if issues.issues.isEmpty {
            // Defensive: a section returned nil without saying why.
            throw ConfigurationError(issues: [.init(path: "", message: "invalid configuration")])
        }
        throw ConfigurationError(issues: issues.issues)
    }

    static func describe(_ error: Error) -> String {
        if let error = error as? CocoaError, let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError {
            return underlying.localizedDescription
        }
        return (error as NSError).localizedDescription
    }

    // MARK: - Sections

    private static func read(_ root: ConfigReader, files: FileResolver) -> GatewayConfiguration? {
        let listener = Self.listener(root, key: "listener", required: true, defaultHost: "0.0.0.0", defaultPort: 8080, files: files)
        let admin = Self.listener(root, key: "admin", required: false, defaultHost: "127.0.0.1", defaultPort: 9901, files: files)
        let eventLoopThreads = root.int("eventLoopThreads", in: 0...1024) ?? 0

        var limits = LimitsConfiguration()
        if let section = root.object("limits") {
            limits.maxHeaderBytes = section.int("maxHeaderBytes", in: 1024...1_048_576) ?? limits.maxHeaderBytes
            limits.maxRequestBodyBytes = section.int("maxRequestBodyBytes", in: 0...Int.max) ?? limits.maxRequestBodyBytes
            limits.maxConnections = section.int("maxConnections", in: 1...10_000_000) ?? limits.maxConnections
            section.finish()
        }

        var timeouts = TimeoutsConfiguration()
        if let section = root.object("timeouts") {
            timeouts.requestHeaderSeconds = section.duration("requestHeaderSeconds") ?? timeouts.requestHeaderSeconds
            timeouts.idleSeconds = section.duration("idleSeconds") ?? timeouts.idleSeconds
            timeouts.drainSeconds = section.duration("drainSeconds") ?? timeouts.drainSeconds
            section.finish()
        }

        let backends = Self.backends(root)
        let tokens = Self.tokens(root, files: files)
        let authService = Self.authService(root, files: files)
        let identityHeaders = Self.identityHeaders(root)
        let routes = Self.routes(root, backends: backends ?? [], issuerCount: tokens?.issuers.count ?? 0)

        let stripPrefixes = root.stringArray("stripInboundHeaderPrefixes") ?? ["X-User-", "X-Auth-"]
        for (index, prefix) in stripPrefixes.enumerated() where prefix.isEmpty || !HTTPToken.isValid(prefix) {
            root.error("stripInboundHeaderPrefixes[\(index)]", "\"\(prefix)\" is not a valid header name prefix")
        }

        var trustedProxies: [CIDR] = []
        for (index, text) in (root.stringArray("trustedProxies") ?? []).enumerated() {
            if let cidr = CIDR(parsing: text) {
                trustedProxies.append(cidr)
            } else {
                root.error("trustedProxies[\(index)]", "\"\(text)\" is not an IP address or CIDR block")
            }
        }

        var health = HealthConfiguration()
        if let section = root.object("health") {
            for (key, keyPath) in [("path", \HealthConfiguration.path), ("readyPath", \.readyPath), ("livePath", \.livePath)] {
                guard let value = section.string(key) else { continue }
                if value.hasPrefix("/") && !value.contains("?") && !value.contains(where: \.isWhitespace) {
                    health[keyPath: keyPath] = value
                } else {
                    section.error(key, "must be a path starting with \"/\"")
                }
            }
            section.finish()
        }

        var logging = LoggingConfiguration()
        if let section = root.object("logging") {
            if let level = section.string("level") {
                if let parsed = Logger.Level(rawValue: level.lowercased()) {
                    logging.level = parsed
                } else {
                    section.error("level", "must be one of trace, debug, info, notice, warning, error, critical")
                }
            }
            logging.accessLog = section.bool("accessLog") ?? logging.accessLog
            section.finish()
        }

        // Cross-section checks.
        let usesProfile =
            identityHeaders?.contains { $0.path.source == .profile } == true
            || routes?.contains { $0.require.contains { $0.path.source == .profile } } == true
        // Judged on the file, not on what survived parsing: a broken authService.url must not
        // also read as a missing profile section.
        let profileDeclared = root.value("authService")?["profile"] != nil
        if usesProfile && !profileDeclared {
            root.error("authService.profile", "is required because identityHeaders or a route's require uses profile.*")
        }
        if let refresh = authService?.refresh, case .json(let template) = refresh.protocol {
            Self.checkTemplate(template, path: "authService.refresh.jsonBody", root: root)
        }

        guard let listener, let backends, let tokens, let routes, let identityHeaders else { return nil }
        return GatewayConfiguration(
            sourcePath: nil,
            listener: listener,
            admin: admin,
            eventLoopThreads: eventLoopThreads,
            limits: limits,
            timeouts: timeouts,
            tokens: tokens,
            authService: authService,
            backends: backends,
            routes: routes,
            identityHeaders: identityHeaders,
            stripInboundHeaderPrefixes: stripPrefixes,
            trustedProxies: trustedProxies,
            health: health,
            logging: logging
        )
    }

    private static func listener(
        _ root: ConfigReader,
        key: String,
        required: Bool,
        defaultHost: String,
        defaultPort: Int,
        files: FileResolver
    ) -> ListenerConfiguration? {
        guard let section = root.object(key) else {
            if required && !root.has(key) { root.error(key, "is required") }
            return nil
        }
        defer { section.finish() }
        let host = section.nonEmptyString("host") ?? defaultHost
        let port = section.int("port", in: 0...65535) ?? defaultPort
        var tls: ListenerTLS?
        if let tlsSection = section.object("tls") {
            let certificate = tlsSection.requiredString("certificatePEMFile").map(files.resolve)
            let privateKey = tlsSection.requiredString("privateKeyPEMFile").map(files.resolve)
            if let certificate {
                if let problem = files.unreadable(certificate) {
                    tlsSection.error("certificatePEMFile", problem)
                } else if (try? NIOSSLCertificate.fromPEMFile(certificate))?.isEmpty != false {
                    tlsSection.error("certificatePEMFile", "\(certificate) is not a PEM certificate")
                }
            }
            if let privateKey {
                if let problem = files.unreadable(privateKey) {
                    tlsSection.error("privateKeyPEMFile", problem)
                } else if (try? NIOSSLPrivateKey(file: privateKey, format: .pem)) == nil {
                    tlsSection.error("privateKeyPEMFile", "\(privateKey) is not a PEM private key")
                }
            }
            tlsSection.finish()
            if let certificate, let privateKey {
                tls = ListenerTLS(certificatePEMFile: certificate, privateKeyPEMFile: privateKey)
            }
        }
        return ListenerConfiguration(host: host, port: port, tls: tls)
    }

    private static func backends(_ root: ConfigReader) -> [BackendConfiguration]? {
        guard let members = root.members("backends") else {
            if !root.has("backends") { root.error("backends", "is required") }
            return nil
        }
        if members.isEmpty { root.error("backends", "must name at least one backend") }
        var backends: [BackendConfiguration] = []
        for member in members {
            guard let section = root.reader(for: member.value, path: member.path) else { continue }
            defer { section.finish() }
            var urls: [UpstreamURL] = []
            if let texts = section.stringArray("urls") {
                if texts.isEmpty { section.error("urls", "must list at least one URL") }
                for (index, text) in texts.enumerated() {
                    switch UpstreamURL.parse(text) {
                    case .success(let url) where url.pathAndQuery.isEmpty || url.pathAndQuery == "/":
                        urls.append(url)
                    case .success:
                        section.error("urls[\(index)]", "\"\(text)\": a backend URL must not have a path or query")
                    case .failure(let reason):
                        section.error("urls[\(index)]", "\"\(text)\" \(reason)")
                    }
                }
            } else if !section.has("urls") {
                section.error("urls", "is required")
            }
            let connect = section.int("connectTimeoutMilliseconds", in: 1...3_600_000) ?? 1000
            let response = section.int("responseTimeoutMilliseconds", in: 1...86_400_000) ?? 30000
            let maxConnections = section.int("maxConnectionsPerThread", in: 1...100_000) ?? 128
            backends.append(
                BackendConfiguration(
                    name: member.name,
                    urls: urls,
                    connectTimeoutMilliseconds: connect,
                    responseTimeoutMilliseconds: response,
                    maxConnectionsPerThread: maxConnections
                )
            )
        }
        return backends
    }

    private static func tokenSources(_ section: ConfigReader, key: String) -> [TokenSourceConfiguration]? {
        guard let entries = section.objectArray(key) else { return nil }
        var sources: [TokenSourceConfiguration] = []
        for entry in entries {
            defer { entry.finish() }
            let header = entry.string("header")
            let cookie = entry.string("cookie")
            switch (header, cookie) {
            case (let header?, nil):
                guard HTTPToken.isValid(header) else {
                    entry.error("header", "\"\(header)\" is not a valid header name")
                    continue
                }
                var bearer = true, raw = key == "sources" && header.lowercased() == "authorization"
                if key != "sources" { (bearer, raw) = (false, true) }
                if let schemes = entry.stringArray("schemes") {
                    bearer = false
                    raw = false
                    for (index, scheme) in schemes.enumerated() {
                        switch scheme.lowercased() {
                        case "bearer": bearer = true
                        case "raw": raw = true
                        default: entry.error("schemes[\(index)]", "unknown scheme \"\(scheme)\" (use \"Bearer\" or \"raw\")")
                        }
                    }
                    if schemes.isEmpty { entry.error("schemes", "must list at least one scheme") }
                }
                sources.append(.header(name: header, bearer: bearer, raw: raw))
            case (nil, let cookie?):
                if cookie.isEmpty || !HTTPToken.isValid(cookie) {
                    entry.error("cookie", "\"\(cookie)\" is not a valid cookie name")
                } else {
                    sources.append(.cookie(name: cookie))
                }
            case (.some, .some):
                entry.error("a token source has either \"header\" or \"cookie\", not both")
            case (nil, nil):
                entry.error("a token source needs \"header\" or \"cookie\"")
            }
        }
        return sources
    }

    private static func tokens(_ root: ConfigReader, files: FileResolver) -> TokensConfiguration? {
        let section = root.object("tokens")
        defer { section?.finish() }
        let sources = section.flatMap { Self.tokenSources($0, key: "sources") } ?? TokensConfiguration.defaultSources
        if section?.has("sources") == true && sources.isEmpty {
            section?.error("sources", "must list at least one token source")
        }
        let cacheEntries = section?.int("verifiedCacheEntries", in: 0...100_000_000) ?? 100_000
        var issuers: [IssuerConfiguration] = []
        var seen: Set<String> = []
        for entry in section?.objectArray("issuers") ?? [] {
            defer { entry.finish() }
            guard let issuer = Self.issuer(entry, files: files) else { continue }
            if !seen.insert(issuer.issuer).inserted {
                entry.error("issuer", "duplicate issuer \"\(issuer.issuer)\"")
            }
            issuers.append(issuer)
        }
        return TokensConfiguration(sources: sources, issuers: issuers, verifiedCacheEntries: cacheEntries)
    }

    private static func issuer(_ entry: ConfigReader, files: FileResolver) -> IssuerConfiguration? {
        let name = entry.requiredString("issuer")
        let audiences = entry.stringArray("audiences")
        if audiences?.isEmpty == true { entry.error("audiences", "must not be empty (leave it out to skip the audience check)") }
        let leeway = entry.duration("leewaySeconds", minimum: 0) ?? 30
        let requiredClaims = entry.stringArray("requiredClaims") ?? []

        var keys: [VerificationKey] = []
        for keyEntry in entry.objectArray("keys") ?? [] {
            defer { keyEntry.finish() }
            if let key = Self.staticKey(keyEntry, files: files) { keys.append(key) }
        }
        if let jwksFile = entry.nonEmptyString("jwksFile") {
            let path = files.resolve(jwksFile)
            if let problem = files.unreadable(path) {
                entry.error("jwksFile", problem)
            } else {
                do {
                    let text = try String(contentsOfFile: path, encoding: .utf8)
                    let parsed = try JWKSet.parse(text: text)
                    if parsed.keys.isEmpty { entry.error("jwksFile", "\(path) holds no usable signature keys") }
                    keys.append(contentsOf: parsed.keys)
                } catch let error as PublicKeyError {
                    entry.error("jwksFile", "\(path): \(error.message)")
                } catch {
                    entry.error("jwksFile", "cannot read \(path): \(Self.describe(error))")
                }
            }
        }
        var seenKids: Set<String> = []
        for kid in keys.compactMap(\.kid) where !seenKids.insert(kid).inserted {
            entry.error("keys", "kid \"\(kid)\" is used by more than one key")
        }

        var jwks: RemoteJWKSConfiguration?
        let refresh = entry.duration("jwksRefreshSeconds") ?? 300
        let minRefetch = entry.duration("jwksMinRefetchSeconds") ?? 10
        if let text = entry.nonEmptyString("jwksURL") {
            switch UpstreamURL.parse(text) {
            case .success(let url):
                jwks = RemoteJWKSConfiguration(url: url, refreshSeconds: refresh, minRefetchSeconds: minRefetch)
            case .failure(let reason):
                entry.error("jwksURL", "\"\(text)\" \(reason)")
            }
        }
        if !entry.has("keys") && !entry.has("jwksFile") && !entry.has("jwksURL") {
            entry.error("an issuer needs keys, jwksFile or jwksURL")
        }
        guard let name else { return nil }
        return IssuerConfiguration(
            issuer: name,
            audiences: audiences,
            staticKeys: keys,
            jwks: jwks,
            leewaySeconds: leeway,
            requiredClaims: requiredClaims
        )
    }

    private static func staticKey(_ entry: ConfigReader, files: FileResolver) -> VerificationKey? {
        let kid = entry.nonEmptyString("kid")
        let algorithmName = entry.string("algorithm")
        let sourceKeys = ["publicKeyPEMFile", "publicKeyPEM", "publicKeyBase64", "certificatePEMFile"]
        let present = sourceKeys.filter { entry.has($0) }
        guard present.count == 1, let sourceKey = present.first else {
            for key in sourceKeys { _ = entry.value(key) }
            entry.error(present.isEmpty ? "a key needs one of \(sourceKeys.joined(separator: ", "))" : "a key takes only one of \(present.joined(separator: ", "))")
            return nil
        }
        guard let sourceValue = entry.nonEmptyString(sourceKey) else { return nil }
        let key: PublicKey
        do {
            switch sourceKey {
            case "publicKeyPEM":
                key = try PublicKey(pem: sourceValue)
            case "publicKeyBase64":
                key = try PublicKey(base64SubjectPublicKeyInfo: sourceValue)
            default:
                let path = files.resolve(sourceValue)
                if let problem = files.unreadable(path) {
                    entry.error(sourceKey, problem)
                    return nil
                }
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    entry.error(sourceKey, "cannot read \(path): not UTF-8 text")
                    return nil
                }
                key = try PublicKey(pem: text)
                if sourceKey == "certificatePEMFile" && !text.contains("BEGIN CERTIFICATE") {
                    entry.error(sourceKey, "\(path) is not a PEM certificate")
                    return nil
                }
            }
        } catch {
            entry.error(sourceKey, error.message)
            return nil
        }
        let algorithm: JWSAlgorithm
        if let algorithmName {
            guard let parsed = JWSAlgorithm(rawValue: algorithmName) else {
                let supported = JWSAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")
                entry.error("algorithm", "unsupported algorithm \"\(algorithmName)\" (supported: \(supported))")
                return nil
            }
            algorithm = parsed
        } else if let implied = JWSAlgorithm.implied(by: key.kind) {
            algorithm = implied
        } else {
            entry.error("algorithm", "is required for an RSA key (RS256, RS384, RS512, PS256, PS384 or PS512)")
            return nil
        }
        do {
            return try VerificationKey(kid: kid, algorithm: algorithm, key: key)
        } catch {
            entry.error("algorithm", error.message)
            return nil
        }
    }

    private static func authService(_ root: ConfigReader, files: FileResolver) -> AuthServiceConfiguration? {
        guard let section = root.object("authService") else { return nil }
        defer { section.finish() }
        var url: UpstreamURL?
        if let text = section.requiredString("url") {
            switch UpstreamURL.parse(text) {
            case .success(let parsed) where parsed.pathAndQuery.isEmpty || parsed.pathAndQuery == "/":
                url = parsed
            case .success:
                section.error("url", "\"\(text)\": give the base URL only; paths go in refresh.path and profile.path")
            case .failure(let reason):
                section.error("url", "\"\(text)\" \(reason)")
            }
        }
        let timeout = section.int("timeoutMilliseconds", in: 1...600_000) ?? 3000
        var caFile: String?
        if let ca = section.nonEmptyString("caCertificatePEMFile") {
            let path = files.resolve(ca)
            if let problem = files.unreadable(path) {
                section.error("caCertificatePEMFile", problem)
            } else if (try? NIOSSLCertificate.fromPEMFile(path))?.isEmpty != false {
                section.error("caCertificatePEMFile", "\(path) holds no PEM certificate")
            } else {
                caFile = path
            }
        }
        let refresh = section.object("refresh").flatMap { refreshSection in
            defer { refreshSection.finish() }
            return Self.refresh(refreshSection)
        }
        let profile = section.object("profile").flatMap { profileSection in
            defer { profileSection.finish() }
            return Self.profile(profileSection)
        }
        guard let url else { return nil }
        return AuthServiceConfiguration(url: url, timeoutMilliseconds: timeout, caCertificatePEMFile: caFile, refresh: refresh, profile: profile)
    }

    private static func refresh(_ section: ConfigReader) -> RefreshConfiguration? {
        let protocolName = section.string("protocol") ?? "json"
        let isOAuth2 = protocolName == "oauth2"
        if protocolName != "json" && !isOAuth2 {
            section.error("protocol", "must be \"json\" or \"oauth2\"")
        }
        let path = section.string("path") ?? (isOAuth2 ? "/oauth2/token" : "/v1/login")
        if !path.hasPrefix("/") { section.error("path", "must start with \"/\"") }
        let accessField = section.nonEmptyString("accessTokenField") ?? (isOAuth2 ? "access_token" : "accesstoken")
        let refreshField = section.nonEmptyString("refreshTokenField") ?? (isOAuth2 ? "refresh_token" : "refreshtoken")

        let refreshProtocol: RefreshConfiguration.RefreshProtocol
        if isOAuth2 {
            let clientID = section.nonEmptyString("clientId")
            let clientSecret = section.string("clientSecret")
            var authentication = RefreshConfiguration.ClientAuthentication.basic
            if let name = section.string("clientAuthentication") {
                if let parsed = RefreshConfiguration.ClientAuthentication(rawValue: name) {
                    authentication = parsed
                } else {
                    section.error("clientAuthentication", "must be \"basic\" or \"form\"")
                }
            }
            if clientSecret != nil && clientID == nil { section.error("clientSecret", "needs clientId") }
            if section.has("jsonBody") { _ = section.value("jsonBody"); section.error("jsonBody", "applies only to protocol \"json\"") }
            refreshProtocol = .oauth2(clientID: clientID, clientSecret: clientSecret, clientAuthentication: authentication)
        } else {
            var template: JSONValue = ["user_name": "{claims.email}", "refreshtoken": "{refreshToken}"]
            if let value = section.value("jsonBody") {
                if case .object = value, let substituted = section.substituteAll(in: value, path: section.childPath("jsonBody")) {
                    template = substituted
                } else if case .object = value {
                    // substitution error already recorded
                } else {
                    section.error("jsonBody", "expected an object, found \(value.typeName)")
                }
            }
            for key in ["clientId", "clientSecret", "clientAuthentication"] where section.has(key) {
                _ = section.value(key)
                section.error(key, "applies only to protocol \"oauth2\"")
            }
            refreshProtocol = .json(bodyTemplate: template)
        }

        var sources: [TokenSourceConfiguration] = [.header(name: "X-Refresh-Token", bearer: false, raw: true), .cookie(name: "refresh_token")]
        if let configured = Self.tokenSources(section, key: "refreshTokenSources") {
            if configured.isEmpty { section.error("refreshTokenSources", "must list at least one source") }
            sources = configured
        }
        var accessHeader: String? = "X-Access-Token"
        var refreshHeader: String? = "X-Refresh-Token"
        if let headers = section.object("responseHeaders") {
            accessHeader = headers.string("accessToken")
            refreshHeader = headers.string("refreshToken")
            for (key, value) in [("accessToken", accessHeader), ("refreshToken", refreshHeader)] {
                if let value, !HTTPToken.isValid(value) { headers.error(key, "\"\(value)\" is not a valid header name") }
            }
            headers.finish()
        }
        let maxExpired = section.duration("maxExpiredSeconds") ?? 604_800
        let grace = section.duration("graceSeconds") ?? 30
        return RefreshConfiguration(
            protocol: refreshProtocol,
            path: path,
            accessTokenField: accessField,
            refreshTokenField: refreshField,
            refreshTokenSources: sources,
            accessTokenResponseHeader: accessHeader,
            refreshTokenResponseHeader: refreshHeader,
            maxExpiredSeconds: maxExpired,
            graceSeconds: grace
        )
    }

    private static func profile(_ section: ConfigReader) -> ProfileConfiguration? {
        var profile = ProfileConfiguration(path: "/v1/user", authorization: .raw, ttlSeconds: 300, staleSeconds: 3600, maxEntries: 100_000)
        if let path = section.string("path") {
            if path.hasPrefix("/") { profile.path = path } else { section.error("path", "must start with \"/\"") }
        }
        if let name = section.string("authorization") {
            if let parsed = ProfileConfiguration.Authorization(rawValue: name) {
                profile.authorization = parsed
            } else {
                section.error("authorization", "must be \"raw\" or \"bearer\"")
            }
        }
        profile.ttlSeconds = section.duration("ttlSeconds") ?? profile.ttlSeconds
        profile.staleSeconds = section.duration("staleSeconds") ?? profile.staleSeconds
        profile.maxEntries = section.int("maxEntries", in: 1...100_000_000) ?? profile.maxEntries
        return profile
    }

    private static func identityHeaders(_ root: ConfigReader) -> [IdentityHeader]? {
        guard let members = root.members("identityHeaders") else {
            return root.has("identityHeaders") ? nil : []
        }
        var headers: [IdentityHeader] = []
        var seen: Set<String> = []
        for member in members {
            guard HTTPToken.isValid(member.name) else {
                root.error("identityHeaders.\(member.name)", "is not a valid header name")
                continue
            }
            if !seen.insert(member.name.lowercased()).inserted {
                root.error("identityHeaders.\(member.name)", "duplicate header (names are case-insensitive)")
            }
            guard case .string(let text) = member.value, let path = IdentityValuePath(parsing: text) else {
                root.error("identityHeaders.\(member.name)", "expected \"claims.<name>\" or \"profile.<name>\"")
                continue
            }
            headers.append(IdentityHeader(name: member.name, path: path))
        }
        return headers
    }

    private static func routes(_ root: ConfigReader, backends: [BackendConfiguration], issuerCount: Int) -> [RouteConfiguration]? {
        guard let entries = root.objectArray("routes") else {
            if !root.has("routes") { root.error("routes", "is required") }
            return nil
        }
        if entries.isEmpty { root.error("routes", "must list at least one route") }
        let backendNames = Set(backends.map(\.name))
        var routes: [RouteConfiguration] = []
        var names: Set<String> = []
        for entry in entries {
            defer { entry.finish() }
            let name = entry.requiredString("name")
            if let name, !names.insert(name).inserted {
                entry.error("name", "duplicate route name \"\(name)\"")
            }
            let host = entry.nonEmptyString("host")?.lowercased()
            let prefix = entry.string("pathPrefix")
            let exact = entry.string("path")
            var pathMatch: RouteConfiguration.PathMatch?
            switch (prefix, exact) {
            case (let prefix?, nil):
                if prefix.hasPrefix("/") { pathMatch = .prefix(prefix) } else { entry.error("pathPrefix", "must start with \"/\"") }
            case (nil, let exact?):
                if exact.hasPrefix("/") { pathMatch = .exact(exact) } else { entry.error("path", "must start with \"/\"") }
            case (.some, .some):
                entry.error("a route takes \"path\" or \"pathPrefix\", not both")
            case (nil, nil):
                entry.error("a route needs \"path\" or \"pathPrefix\"")
            }
            var methods: Set<String>?
            if let list = entry.stringArray("methods") {
                if list.isEmpty { entry.error("methods", "must not be empty (leave it out to match every method)") }
                for (index, method) in list.enumerated() where !HTTPToken.isValid(method) {
                    entry.error("methods[\(index)]", "\"\(method)\" is not a valid method")
                }
                methods = Set(list.map { $0.uppercased() })
            }
            let backend = entry.requiredString("backend")
            if let backend, !backendNames.contains(backend) {
                entry.error("backend", "unknown backend \"\(backend)\"")
            }
            var auth = RouteConfiguration.AuthMode.required
            if let mode = entry.string("auth") {
                if let parsed = RouteConfiguration.AuthMode(rawValue: mode) {
                    auth = parsed
                } else {
                    entry.error("auth", "must be \"required\", \"optional\" or \"none\"")
                }
            }
            if auth != .none && issuerCount == 0 {
                entry.error("auth", "\"\(auth.rawValue)\" needs at least one entry in tokens.issuers")
            }
            var requirements: [Requirement] = []
            if let members = entry.members("require") {
                for member in members {
                    guard let path = IdentityValuePath(parsing: member.name) else {
                        entry.error("require.\(member.name)", "keys must be \"claims.<name>\" or \"profile.<name>\"")
                        continue
                    }
                    requirements.append(Requirement(path: path, expected: member.value))
                }
                if auth == .none && !requirements.isEmpty {
                    entry.error("require", "a route with auth \"none\" cannot have requirements")
                }
            }
            let stripPathPrefix = entry.bool("stripPathPrefix") ?? false
            if stripPathPrefix, case .exact = pathMatch {
                entry.error("stripPathPrefix", "applies only to routes with pathPrefix")
            }
            let forwardAccessToken = entry.bool("forwardAccessToken") ?? true
            guard let name, let pathMatch, let backend else { continue }
            routes.append(
                RouteConfiguration(
                    name: name,
                    host: host,
                    pathMatch: pathMatch,
                    methods: methods,
                    backend: backend,
                    auth: auth,
                    require: requirements,
                    stripPathPrefix: stripPathPrefix,
                    forwardAccessToken: forwardAccessToken
                )
            )
        }
        return routes
    }

    /// Every `{...}` placeholder in a refresh body template must be `{refreshToken}` or `{claims.<name>}`.
    private static func checkTemplate(_ value: JSONValue, path: String, root: ConfigReader) {
        switch value {
        case .string(let text):
            for placeholder in RefreshBodyTemplate.placeholders(in: text) {
                if placeholder != "refreshToken" && !placeholder.hasPrefix("claims.") {
                    root.error(path, "unknown placeholder {\(placeholder)} (use {refreshToken} or {claims.<name>})")
                }
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() { Self.checkTemplate(element, path: "\(path)[\(index)]", root: root) }
        case .object(let object):
            for entry in object.entries { Self.checkTemplate(entry.value, path: "\(path).\(entry.key)", root: root) }
        case .null, .bool, .number:
            break
        }
    }
}

/// Resolves file names in the configuration against the configuration file's folder.
struct FileResolver {
    let baseDirectory: String

    func resolve(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        return URL(fileURLWithPath: self.baseDirectory).appendingPathComponent(path).standardizedFileURL.path
    }

    /// Why `path` cannot be read, or nil when it can.
    func unreadable(_ path: String) -> String? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return "cannot read \(path): no such file" }
        if isDirectory.boolValue { return "cannot read \(path): it is a directory" }
        guard FileManager.default.isReadableFile(atPath: path) else { return "cannot read \(path): permission denied" }
        return nil
    }
}
