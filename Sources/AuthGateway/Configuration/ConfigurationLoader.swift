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

    static func read(_ root: ConfigReader, files: FileResolver) -> GatewayConfiguration? {
        let listener = Self.listener(
            root, key: "listener", required: true, defaultHost: "0.0.0.0", defaultPort: 8080, files: files, isMain: true
        )
        let admin = Self.listener(
            root, key: "admin", required: false, defaultHost: "127.0.0.1", defaultPort: 9901, files: files)
        let eventLoopThreads = root.int("eventLoopThreads", in: 0...1024) ?? 0

        var limits = LimitsConfiguration()
        if let section = root.object("limits") {
            limits.maxHeaderBytes = section.int("maxHeaderBytes", in: 1024...1_048_576) ?? limits.maxHeaderBytes
            limits.maxRequestBodyBytes =
                section.int("maxRequestBodyBytes", in: 0...Int.max) ?? limits.maxRequestBodyBytes
            limits.maxConnections = section.int("maxConnections", in: 1...10_000_000) ?? limits.maxConnections
            limits.maxConcurrentStreams =
                section.int("maxConcurrentStreams", in: 1...10_000) ?? limits.maxConcurrentStreams
            section.finish()
        }

        var timeouts = TimeoutsConfiguration()
        if let section = root.object("timeouts") {
            timeouts.requestHeaderSeconds = section.duration("requestHeaderSeconds") ?? timeouts.requestHeaderSeconds
            timeouts.idleSeconds = section.duration("idleSeconds") ?? timeouts.idleSeconds
            timeouts.drainSeconds = section.duration("drainSeconds") ?? timeouts.drainSeconds
            section.finish()
        }

        let backends = Self.backends(root, files: files)
        var tokens = Self.tokens(root, files: files)
        let authService = Self.authService(root, files: files)
        let sharedState = Self.sharedState(root, files: files)
        let identityHeaders = Self.identityHeaders(root)
        // An introspection endpoint checks tokens as an issuer would (opaque tokens only).
        let tokenCheckers =
            (tokens?.issuers.count ?? 0) + (tokens?.introspection == nil ? 0 : 1) + (tokens?.apiKeys == nil ? 0 : 1)
        let routes = Self.routes(root, backends: backends ?? [], issuerCount: tokenCheckers)
        let rateLimits = Self.rateLimits(root, routeNames: routes.map { Set($0.map(\.name)) })

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
            for (key, keyPath) in [
                ("path", \HealthConfiguration.path), ("readyPath", \.readyPath), ("livePath", \.livePath),
            ] {
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

        let identityAssertion = Self.identityAssertion(root, files: files)
        if let routes, !root.has("identityAssertion") {
            for (index, route) in routes.enumerated() where route.assertion != nil {
                root.error("routes[\(index)].assertion", "needs an identityAssertion section (docs/assertions.md)")
            }
        }
        let tracing = Self.tracing(root)
        let paths = Self.paths(root)
        if let routes { Self.checkCanonicalRoutePaths(routes, settings: paths, root: root) }

        // Cross-section checks.
        let usesProfile =
            identityHeaders?.contains { $0.path.source == .profile } == true
            || routes?.contains { $0.require.readsProfile } == true
            || routes?.contains { $0.assertion?.claims.contains { $0.path.source == .profile } == true } == true
            // Judged on the file: a limit refused for another field still reads the profile.
            || (root.value("rateLimits")?.arrayValue ?? []).contains {
                $0["key"]?.stringValue?.hasPrefix("profile.") == true
            }
        // Judged on the file, not on what survived parsing: a broken authService.url must not
        // also read as a missing profile section.
        let profileDeclared = root.value("authService")?["profile"] != nil
        if usesProfile && !profileDeclared {
            root.error(
                "authService.profile",
                "is required because identityHeaders, a route's require or a rate limit's key uses profile.*")
        }
        if let refresh = authService?.refresh, case .json(let template) = refresh.protocol {
            Self.checkTemplate(template, path: "authService.refresh.jsonBody", root: root)
        }
        if let authService, let name = authService.discoveryIssuer, tokens != nil {
            Self.linkDiscoveryIssuer(name, authService: authService, tokens: &tokens!, root: root)
        }
        if tokens != nil { Self.linkIntrospectionDiscovery(&tokens!, authService: authService, root: root) }
        let browserSignIn = Self.browserSignIn(root)
        if tokens != nil, let routes {
            Self.linkBrowserSignIn(browserSignIn, tokens: &tokens!, routes: routes, root: root)
        }
        let authorizer = Self.authorizer(root)
        let signals = Self.signals(root, tokens: tokens, signInPrefix: browserSignIn?.pathPrefix)
        Self.checkAuthorizerPaths(authorizer, signIn: browserSignIn, health: health, root: root)

        guard let listener, let backends, let tokens, let routes, let identityHeaders, let rateLimits else {
            return nil
        }
        var configuration = GatewayConfiguration(
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
            logging: logging,
            sharedState: sharedState
        )
        configuration.tracing = tracing
        configuration.rateLimits = rateLimits
        configuration.browserSignIn = browserSignIn
        configuration.authorizer = authorizer
        configuration.paths = paths
        configuration.signals = signals
        configuration.identityAssertion = identityAssertion
        return configuration
    }

    static func listener(
        _ root: ConfigReader,
        key: String,
        required: Bool,
        defaultHost: String,
        defaultPort: Int,
        files: FileResolver,
        isMain: Bool = false
    ) -> ListenerConfiguration? {
        guard let section = root.object(key) else {
            if required && !root.has(key) { root.error(key, "is required") }
            return nil
        }
        defer { section.finish() }
        let host = section.nonEmptyString("host") ?? defaultHost
        let port = section.int("port", in: 0...65535) ?? defaultPort
        let http2 = isMain ? (section.bool("http2") ?? true) : false
        var tls: ListenerTLS?
        if !isMain && section.value("tls") != nil {
            // The admin listener serves cleartext HTTP/1.1 only: accepting `tls` there would
            // leave an operator believing /metrics is encrypted.
            section.error("tls", "is not supported on the admin listener: bind it to loopback or a private network")
        } else if let tlsSection = section.object("tls") {
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
        return ListenerConfiguration(host: host, port: port, tls: tls, http2: http2)
    }

    static func backends(_ root: ConfigReader, files: FileResolver) -> [BackendConfiguration]? {
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
            var wireProtocol = BackendConfiguration.WireProtocol.http1
            if let text = section.string("protocol") {
                if let parsed = BackendConfiguration.WireProtocol(rawValue: text) {
                    wireProtocol = parsed
                } else {
                    section.error("protocol", "must be \"http1\", \"h2\" or \"h2c\", not \"\(text)\"")
                }
            }
            // h2 is negotiated by ALPN over TLS; h2c is cleartext by prior knowledge.
            for (index, url) in urls.enumerated() {
                if wireProtocol == .h2 && !url.isTLS {
                    section.error(
                        "urls[\(index)]", "\"\(url)\": protocol \"h2\" needs an https URL (use \"h2c\" for cleartext)")
                } else if wireProtocol == .h2c && url.isTLS {
                    section.error(
                        "urls[\(index)]", "\"\(url)\": protocol \"h2c\" needs an http URL (use \"h2\" over TLS)")
                }
            }
            var backend = BackendConfiguration(
                name: member.name,
                urls: urls,
                wireProtocol: wireProtocol,
                connectTimeoutMilliseconds: connect,
                responseTimeoutMilliseconds: response,
                maxConnectionsPerThread: maxConnections
            )
            Self.backendExtras(section, into: &backend, files: files)
            backends.append(backend)
        }
        return backends
    }

    /// `authService.discoveryIssuer` must name an issuer with `discovery: true`; that issuer's
    /// document must then carry the endpoints the refresh and profile sections leave to it.
    static func linkDiscoveryIssuer(
        _ name: String, authService: AuthServiceConfiguration, tokens: inout TokensConfiguration, root: ConfigReader
    ) {
        guard let index = tokens.issuers.firstIndex(where: { $0.issuer == name }) else {
            let known = tokens.issuers.map { "\"\($0.issuer)\"" }.joined(separator: ", ")
            root.error(
                "authService.discoveryIssuer",
                "\"\(name)\" is not an issuer of tokens.issuers" + (known.isEmpty ? "" : " (\(known))"))
            return
        }
        guard var jwks = tokens.issuers[index].jwks, var discovery = jwks.discovery else {
            // Declared but refused (e.g. beside a jwksURL): that error is already reported.
            let declared =
                root.value("tokens")?["issuers"]?.arrayValue?.first { $0["issuer"]?.stringValue == name }?["discovery"]?
                .boolValue == true
            if declared { return }
            root.error(
                "authService.discoveryIssuer",
                "issuer \"\(name)\" does not have \"discovery\": true (tokens.issuers[\(index)])")
            return
        }
        if let refresh = authService.refresh, case .oauth2 = refresh.protocol, refresh.path == nil {
            discovery.needsTokenEndpoint = true
        }
        if let profile = authService.profile, profile.path == nil { discovery.needsUserinfoEndpoint = true }
        jwks.source = .discovery(discovery)
        tokens.issuers[index].jwks = jwks
    }

    /// Every `{...}` placeholder in a refresh body template must be `{refreshToken}` or `{claims.<name>}`.
    static func checkTemplate(_ value: JSONValue, path: String, root: ConfigReader) {
        switch value {
        case .string(let text):
            for placeholder in RefreshBodyTemplate.placeholders(in: text) {
                if placeholder != "refreshToken" && !placeholder.hasPrefix("claims.") {
                    root.error(path, "unknown placeholder {\(placeholder)} (use {refreshToken} or {claims.<name>})")
                }
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                Self.checkTemplate(element, path: "\(path)[\(index)]", root: root)
            }
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
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            return "cannot read \(path): no such file"
        }
        if isDirectory.boolValue { return "cannot read \(path): it is a directory" }
        guard FileManager.default.isReadableFile(atPath: path) else { return "cannot read \(path): permission denied" }
        return nil
    }
}
