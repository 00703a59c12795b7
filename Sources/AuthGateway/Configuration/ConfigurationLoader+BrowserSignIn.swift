/// Reading `browserSignIn` (docs/browser-sign-in.md).
extension ConfigurationLoader {
    static func browserSignIn(_ root: ConfigReader) -> BrowserSignInConfiguration? {
        guard let section = root.object("browserSignIn") else { return nil }
        defer { section.finish() }
        let issuer = section.requiredString("issuer")
        let clientID = section.requiredString("clientId")
        let clientSecret = section.string("clientSecret").map { Secret($0) }
        let authentication = Self.clientAuthentication(section, clientID: clientID, clientSecret: clientSecret)
        let scopes = section.stringArray("scopes") ?? BrowserSignInConfiguration.defaultScopes
        if !scopes.contains("openid") { section.error("scopes", "must contain \"openid\"") }
        for (index, scope) in scopes.enumerated() where scope.isEmpty || !scope.allSatisfy(Self.isScopeCharacter) {
            section.error("scopes[\(index)]", "\"\(scope)\" is not a valid scope (RFC 6749 §3.3)")
        }
        let publicBaseURL = section.requiredString("publicBaseURL").flatMap { text -> String? in
            guard let problem = Self.publicBaseProblem(text) else { return text }
            section.error("publicBaseURL", "\"\(text)\" \(problem)")
            return nil
        }
        let pathPrefix = section.string("pathPrefix") ?? "/.gateway/"
        if !Self.isPlainPath(pathPrefix) || !pathPrefix.hasSuffix("/") {
            section.error("pathPrefix", "must be a path that starts and ends with \"/\"")
        } else if pathPrefix == "/" {
            // The endpoints are answered before routes: "/" would hide every route.
            section.error("pathPrefix", "must not be \"/\": the sign-in endpoints would hide every route")
        }
        let idle = section.duration("sessionIdleSeconds") ?? 28_800
        let maximum = section.duration("sessionMaxSeconds") ?? 604_800
        if idle > maximum {
            section.error(
                "sessionIdleSeconds", "must not exceed sessionMaxSeconds (\(maximum)): the idle limit would never apply"
            )
        }
        let postSignOutPath = section.string("postSignOutPath") ?? "/"
        if !Self.isPlainPath(postSignOutPath) {
            section.error("postSignOutPath", "must be a path on publicBaseURL starting with \"/\"")
        }
        let maxSessions = section.int("maxSessions", in: 1...100_000_000) ?? 100_000
        guard let issuer, let clientID, let publicBaseURL else { return nil }
        var configuration = BrowserSignInConfiguration(issuer: issuer, clientID: clientID, publicBaseURL: publicBaseURL)
        configuration.clientSecret = clientSecret
        configuration.clientAuthentication = authentication
        configuration.scopes = scopes
        configuration.pathPrefix = pathPrefix
        configuration.sessionIdleSeconds = idle
        configuration.sessionMaxSeconds = maximum
        configuration.postSignOutPath = postSignOutPath
        configuration.maxSessions = maxSessions
        return configuration
    }

    /// `browserSignIn.issuer` must name an issuer with `discovery: true`, whose document must
    /// then carry an `authorization_endpoint` and a `token_endpoint`; every `signIn` route
    /// needs the section.
    static func linkBrowserSignIn(
        _ signIn: BrowserSignInConfiguration?, tokens: inout TokensConfiguration, routes: [RouteConfiguration],
        root: ConfigReader
    ) {
        if signIn == nil && !root.has("browserSignIn") {
            for (index, route) in routes.enumerated() where route.signIn {
                root.error("routes[\(index)].signIn", "needs a browserSignIn section")
            }
        }
        guard let signIn else { return }
        guard let index = tokens.issuers.firstIndex(where: { $0.issuer == signIn.issuer }) else {
            root.error("browserSignIn.issuer", "\"\(signIn.issuer)\" is not an issuer of tokens.issuers")
            return
        }
        guard var jwks = tokens.issuers[index].jwks, var discovery = jwks.discovery else {
            root.error(
                "browserSignIn.issuer",
                "issuer \"\(signIn.issuer)\" does not have \"discovery\": true (tokens.issuers[\(index)])")
            return
        }
        discovery.needsTokenEndpoint = true
        discovery.needsAuthorizationEndpoint = true
        jwks.source = .discovery(discovery)
        tokens.issuers[index].jwks = jwks
    }

    /// Why `text` cannot be `publicBaseURL`, or nil: `http(s)://authority` without path, query
    /// or fragment, `http` only for a loopback host.
    static func publicBaseProblem(_ text: String) -> String? {
        guard case .success(let url) = UpstreamURL.parse(text) else { return "is not an http(s) URL" }
        guard url.pathAndQuery.isEmpty, !text.hasSuffix("/"), !text.contains("#") else {
            return "must be scheme and authority only (no path, query or trailing \"/\")"
        }
        if !url.isTLS && !Self.isLoopbackHost(url.host) {
            return "is http on a host that is not loopback: browsers must reach sign-in over https"
        }
        return nil
    }

    /// `localhost` (and its subdomains), `::1`, or an IPv4 literal in 127.0.0.0/8 — not a name
    /// that merely starts with "127." (`127.evil.example` resolves wherever its owner likes).
    static func isLoopbackHost(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy { ("0"..."9").contains($0) }
                && Int(octet).map { $0 <= 255 } == true
        }
    }

    /// A path with only unreserved and sub-delimiter characters, starting with `/`.
    static func isPlainPath(_ path: String) -> Bool {
        path.hasPrefix("/") && !path.hasPrefix("//")
            && path.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "-"), UInt8(ascii: "."),
                    UInt8(ascii: "_"), UInt8(ascii: "~"):
                    return true
                default:
                    return false
                }
            }
    }

    private static func isScopeCharacter(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return ascii == 0x21 || (0x23...0x5B).contains(ascii) || (0x5D...0x7E).contains(ascii)
    }
}
