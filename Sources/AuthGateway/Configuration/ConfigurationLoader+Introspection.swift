/// Reading `tokens.introspection` (docs/authentication.md).
extension ConfigurationLoader {
    static func introspection(_ section: ConfigReader) -> IntrospectionConfiguration? {
        // Without `url`, a discovery document's `introspection_endpoint` (linked, and the
        // error for neither, in `linkIntrospectionDiscovery`).
        var url: UpstreamURL?
        var urlRefused = false
        if let text = section.string("url") {
            switch UpstreamURL.parse(text) {
            case .success(let parsed): url = parsed
            case .failure(let reason):
                section.error("url", "\"\(text)\" \(reason.description)")
                urlRefused = true
            }
        }
        let discoveryIssuer = section.nonEmptyString("discoveryIssuer")
        if discoveryIssuer != nil && section.has("url") {
            section.error("discoveryIssuer", "set url or discoveryIssuer, not both")
        }
        let clientID = section.nonEmptyString("clientId")
        let clientSecret = section.string("clientSecret").map { Secret($0) }
        let authentication = Self.clientAuthentication(section, clientID: clientID, clientSecret: clientSecret)
        let cacheSeconds = section.duration("cacheSeconds") ?? 60
        let negativeCacheSeconds = section.duration("negativeCacheSeconds") ?? 5
        let timeout = section.duration("timeoutMilliseconds") ?? 1000
        let issuer = section.nonEmptyString("issuer")
        let audiences = section.stringArray("audiences")
        if audiences?.isEmpty == true {
            section.error("audiences", "must not be empty (leave it out to skip the audience check)")
        }
        let forJWTs = section.bool("forJWTs") ?? false
        guard !urlRefused else { return nil }
        return IntrospectionConfiguration(
            url: url, discoveryIssuer: discoveryIssuer, clientID: clientID, clientSecret: clientSecret,
            clientAuthentication: authentication, cacheSeconds: cacheSeconds,
            negativeCacheSeconds: negativeCacheSeconds, timeoutMilliseconds: timeout, issuer: issuer,
            audiences: audiences, forJWTs: forJWTs
        )
    }

    /// `tokens.introspection` without `url`: its `discoveryIssuer`, else
    /// `authService.discoveryIssuer`, must name an issuer with `discovery: true`, whose document
    /// must then carry an `introspection_endpoint` (a document without one is refused, and the
    /// issuer is not ready).
    ///
    /// Also: `forJWTs` needs an issuer in `tokens.issuers`, without which no JWT is ever
    /// verified, and so none introspected.
    static func linkIntrospectionDiscovery(
        _ tokens: inout TokensConfiguration, authService: AuthServiceConfiguration?, root: ConfigReader
    ) {
        if tokens.introspection?.forJWTs == true && tokens.issuers.isEmpty {
            root.error(
                "tokens.introspection.forJWTs",
                "needs an issuer in tokens.issuers (it introspects JWTs that verified against one)")
        }
        guard var introspection = tokens.introspection, introspection.url == nil else { return }
        let explicit = introspection.discoveryIssuer != nil
        guard let name = introspection.discoveryIssuer ?? authService?.discoveryIssuer else {
            root.error(
                "tokens.introspection.url",
                "is required (unless tokens.introspection.discoveryIssuer or authService.discoveryIssuer names an issuer with \"discovery\": true)"
            )
            return
        }
        let path = explicit ? "tokens.introspection.discoveryIssuer" : "authService.discoveryIssuer"
        guard let index = tokens.issuers.firstIndex(where: { $0.issuer == name }) else {
            root.error(path, "\"\(name)\" is not an issuer of tokens.issuers")
            return
        }
        guard var jwks = tokens.issuers[index].jwks, var discovery = jwks.discovery else {
            // `authService.discoveryIssuer` reports its own issuer's lack of discovery.
            if explicit {
                root.error(path, "issuer \"\(name)\" does not have \"discovery\": true (tokens.issuers[\(index)])")
            }
            return
        }
        discovery.needsIntrospectionEndpoint = true
        jwks.source = .discovery(discovery)
        tokens.issuers[index].jwks = jwks
        introspection.discoveryIssuer = name
        tokens.introspection = introspection
    }
}
