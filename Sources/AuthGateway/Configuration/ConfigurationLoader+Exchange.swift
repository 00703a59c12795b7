/// Reading a route's `exchange` (docs/token-exchange.md): the token endpoint, the client's
/// credentials as for an oauth2 refresh, the grant and what it asks for.
extension ConfigurationLoader {
    static func routeExchange(_ entry: ConfigReader) -> ExchangeConfiguration? {
        guard let section = entry.object("exchange") else { return nil }
        defer { section.finish() }
        var endpoint: UpstreamURL?
        if let text = section.requiredString("tokenEndpoint") {
            switch UpstreamURL.parse(text) {
            case .success(let url): endpoint = url
            case .failure(let reason): section.error("tokenEndpoint", "\"\(text)\" \(reason)")
            }
        }
        let clientID = section.nonEmptyString("clientId")
        let clientSecret = section.string("clientSecret").map { Secret($0) }
        let authentication = Self.clientAuthentication(section, clientID: clientID, clientSecret: clientSecret)
        var grant = ExchangeConfiguration.Grant.tokenExchange
        if let text = section.string("grant") {
            if let parsed = ExchangeConfiguration.Grant(rawValue: text) {
                grant = parsed
            } else {
                section.error("grant", "must be \"token-exchange\" or \"jwt-bearer\", not \"\(text)\"")
            }
        }
        let audience = section.stringArray("audience") ?? []
        let resource = section.stringArray("resource") ?? []
        for (index, value) in audience.enumerated() where value.isEmpty {
            section.error("audience[\(index)]", "must not be empty")
        }
        for (index, value) in resource.enumerated() where value.isEmpty {
            section.error("resource[\(index)]", "must not be empty")
        }
        if grant == .jwtBearer && !resource.isEmpty {
            // RFC 8707 resource indicators are of RFC 8693 requests; a jwt-bearer grant takes
            // them as extraParameters if the provider wants them.
            section.error("resource", "applies only to grant \"token-exchange\"")
        }
        let scope = section.nonEmptyString("scope")
        var extra: [ExchangeConfiguration.ExtraParameter] = []
        let reserved: Set<String> = [
            "grant_type", "subject_token", "subject_token_type", "assertion", "client_id", "client_secret",
            "audience", "resource", "scope",
        ]
        for member in section.members("extraParameters") ?? [] {
            guard case .string(let raw) = member.value, let value = section.substitute(raw, path: member.path) else {
                if case .string = member.value { continue }
                section.issues.add(member.path, "expected a string, found \(member.value.typeName)")
                continue
            }
            if member.name.isEmpty || reserved.contains(member.name) {
                section.issues.add(member.path, "\"\(member.name)\" is a field the gateway sets itself")
                continue
            }
            extra.append(.init(name: member.name, value: value))
        }
        let timeout =
            section.int("timeoutMilliseconds", in: 1...3_600_000) ?? ExchangeConfiguration.defaultTimeoutMilliseconds
        guard let endpoint else { return nil }
        return ExchangeConfiguration(
            tokenEndpoint: endpoint, clientID: clientID, clientSecret: clientSecret,
            clientAuthentication: authentication, grant: grant, audience: audience, resource: resource, scope: scope,
            extraParameters: extra, timeoutMilliseconds: timeout)
    }
}
