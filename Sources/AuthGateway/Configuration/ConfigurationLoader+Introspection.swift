/// Reading `tokens.introspection` (SPEC §4.13).
extension ConfigurationLoader {
    static func introspection(_ section: ConfigReader) -> IntrospectionConfiguration? {
        var url: UpstreamURL?
        if let text = section.requiredString("url") {
            switch UpstreamURL.parse(text) {
            case .success(let parsed): url = parsed
            case .failure(let reason): section.error("url", "\"\(text)\" \(reason.description)")
            }
        }
        let clientID = section.nonEmptyString("clientId")
        let clientSecret = section.string("clientSecret")
        let authentication = Self.clientAuthentication(section, clientID: clientID, clientSecret: clientSecret)
        let cacheSeconds = section.duration("cacheSeconds") ?? 60
        let negativeCacheSeconds = section.duration("negativeCacheSeconds") ?? 5
        let timeout = section.duration("timeoutMilliseconds") ?? 1000
        let issuer = section.nonEmptyString("issuer")
        let audiences = section.stringArray("audiences")
        if audiences?.isEmpty == true { section.error("audiences", "must not be empty (leave it out to skip the audience check)") }
        let forJWTs = section.bool("forJWTs") ?? false
        guard let url else { return nil }
        return IntrospectionConfiguration(
            url: url, clientID: clientID, clientSecret: clientSecret, clientAuthentication: authentication, cacheSeconds: cacheSeconds,
            negativeCacheSeconds: negativeCacheSeconds, timeoutMilliseconds: timeout, issuer: issuer, audiences: audiences, forJWTs: forJWTs
        )
    }
}
