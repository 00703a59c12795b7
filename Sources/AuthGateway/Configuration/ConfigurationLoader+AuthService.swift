import Foundation
import NIOSSL

/// Reading `authService`: URL, TLS trust, refresh and profile.
extension ConfigurationLoader {
    static func authService(_ root: ConfigReader, files: FileResolver) -> AuthServiceConfiguration? {
        guard let section = root.object("authService") else { return nil }
        defer { section.finish() }
        var url: UpstreamURL?
        let discoveryIssuer = section.nonEmptyString("discoveryIssuer")
        if discoveryIssuer == nil && !section.has("url") {
            section.error(
                "url",
                "is required (unless discoveryIssuer names an issuer whose discovery document supplies the endpoints)")
        }
        if let text = section.string("url") {
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
        let discovered = discoveryIssuer != nil
        let refresh = section.object("refresh").flatMap { refreshSection in
            defer { refreshSection.finish() }
            return Self.refresh(refreshSection, discovered: discovered)
        }
        let profile = section.object("profile").flatMap { profileSection in
            defer { profileSection.finish() }
            return Self.profile(profileSection, discovered: discovered)
        }
        // Paths are on authService.url: without one, only discovered endpoints can be used.
        if !section.has("url") && discovered {
            if let refresh, refresh.path != nil {
                if case .json = refresh.protocol, section.value("refresh")?["path"] == nil {
                    section.error(
                        "refresh",
                        "protocol \"json\" posts to authService.url + path: set authService.url (only an oauth2 refresh can use the discovered token_endpoint)"
                    )
                } else {
                    section.error(
                        "refresh.path",
                        "needs authService.url (leave the path out to use the discovered token_endpoint)")
                }
            }
            if let profile, profile.path != nil {
                section.error(
                    "profile.path", "needs authService.url (leave the path out to use the discovered userinfo_endpoint)"
                )
            }
        }
        if section.has("url") && url == nil { return nil }
        if url == nil && !discovered { return nil }
        return AuthServiceConfiguration(
            url: url, discoveryIssuer: discoveryIssuer, timeoutMilliseconds: timeout, caCertificatePEMFile: caFile,
            refresh: refresh, profile: profile
        )
    }

    /// `clientAuthentication` (`basic` by default, or `form`) of a section with `clientId` and
    /// `clientSecret`: an oauth2 refresh, an introspection endpoint.
    static func clientAuthentication(
        _ section: ConfigReader, clientID: String?, clientSecret: Secret?
    ) -> RefreshConfiguration.ClientAuthentication {
        if clientSecret != nil && clientID == nil { section.error("clientSecret", "needs clientId") }
        guard let name = section.string("clientAuthentication") else { return .basic }
        guard let parsed = RefreshConfiguration.ClientAuthentication(rawValue: name) else {
            section.error("clientAuthentication", "must be \"basic\" or \"form\"")
            return .basic
        }
        return parsed
    }

    /// `discovered`: `authService.discoveryIssuer` is set, so the protocol defaults to
    /// `oauth2` and an `oauth2` refresh without a `path` posts to the discovered
    /// `token_endpoint` (`path` nil).
    static func refresh(_ section: ConfigReader, discovered: Bool = false) -> RefreshConfiguration? {
        let protocolName = section.string("protocol") ?? (discovered ? "oauth2" : "json")
        let isOAuth2 = protocolName == "oauth2"
        if protocolName != "json" && !isOAuth2 {
            section.error("protocol", "must be \"json\" or \"oauth2\"")
        }
        var path: String? = section.string("path")
        if let path, !path.hasPrefix("/") { section.error("path", "must start with \"/\"") }
        if path == nil && !(isOAuth2 && discovered) { path = isOAuth2 ? "/oauth2/token" : "/v1/login" }
        let accessField = section.nonEmptyString("accessTokenField") ?? (isOAuth2 ? "access_token" : "accesstoken")
        let refreshField = section.nonEmptyString("refreshTokenField") ?? (isOAuth2 ? "refresh_token" : "refreshtoken")

        let refreshProtocol: RefreshConfiguration.RefreshProtocol
        if isOAuth2 {
            let clientID = section.nonEmptyString("clientId")
            let clientSecret = section.string("clientSecret").map { Secret($0) }
            let authentication = Self.clientAuthentication(section, clientID: clientID, clientSecret: clientSecret)
            if section.has("jsonBody") {
                _ = section.value("jsonBody"); section.error("jsonBody", "applies only to protocol \"json\"")
            }
            refreshProtocol = .oauth2(
                clientID: clientID, clientSecret: clientSecret, clientAuthentication: authentication)
        } else {
            var template: JSONValue = ["user_name": "{claims.email}", "refreshtoken": "{refreshToken}"]
            if let value = section.value("jsonBody") {
                if case .object = value,
                    let substituted = section.substituteAll(in: value, path: section.childPath("jsonBody"))
                {
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

        var sources: [TokenSourceConfiguration] = [
            .header(name: "X-Refresh-Token", bearer: false, raw: true), .cookie(name: "refresh_token"),
        ]
        if let configured = Self.tokenSources(section, key: "refreshTokenSources") {
            if configured.isEmpty { section.error("refreshTokenSources", "must list at least one source") }
            sources = configured
        }
        var accessHeader: String? = "X-Access-Token"
        var refreshHeader: String? = "X-Refresh-Token"
        if let headers = section.object("responseHeaders") {
            // Each defaults on its own: naming only the access-token header must not stop
            // header clients from receiving a rotated refresh token. `null` turns one off.
            func named(_ key: String, default name: String?) -> String? {
                if case .null? = headers.value(key) { return nil }
                return headers.string(key) ?? name
            }
            accessHeader = named("accessToken", default: accessHeader)
            refreshHeader = named("refreshToken", default: refreshHeader)
            for (key, value) in [("accessToken", accessHeader), ("refreshToken", refreshHeader)] {
                if let value, !HTTPToken.isValid(value) {
                    headers.error(key, "\"\(value)\" is not a valid header name")
                }
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

    /// `discovered`: without a `path`, the profile is read from the discovered
    /// `userinfo_endpoint` (`path` nil), with `Bearer` authorization by default (OpenID
    /// Connect Core §5.3.1).
    static func profile(_ section: ConfigReader, discovered: Bool = false) -> ProfileConfiguration? {
        let userinfo = discovered && !section.has("path")
        var profile = ProfileConfiguration(
            path: userinfo ? nil : "/v1/user", authorization: userinfo ? .bearer : .raw, ttlSeconds: 300,
            staleSeconds: 3600, maxEntries: 100_000
        )
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
}
