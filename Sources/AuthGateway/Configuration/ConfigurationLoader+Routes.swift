/// Reading `identityHeaders` and `routes`.
extension ConfigurationLoader {
    static func identityHeaders(_ root: ConfigReader) -> [IdentityHeader]? {
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
            guard case .string(let text) = member.value, let path = IdentityValuePath(parsing: text),
                path.source != .client, path.source != .request
            else {
                root.error(
                    "identityHeaders.\(member.name)", "expected \"claims.<name>\", \"profile.<name>\" or \"dpop.jkt\"")
                continue
            }
            headers.append(IdentityHeader(name: member.name, path: path))
        }
        return headers
    }

    static func routes(
        _ root: ConfigReader, backends: [BackendConfiguration], issuerCount: Int
    ) -> [RouteConfiguration]? {
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
                if prefix.hasPrefix("/") {
                    pathMatch = .prefix(prefix)
                } else {
                    entry.error("pathPrefix", "must start with \"/\"")
                }
            case (nil, let exact?):
                if exact.hasPrefix("/") {
                    pathMatch = .exact(exact)
                } else {
                    entry.error("path", "must start with \"/\"")
                }
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
                entry.error(
                    "auth",
                    "\"\(auth.rawValue)\" needs at least one entry in tokens.issuers (or tokens.introspection, tokens.apiKeys)"
                )
            }
            var requirement = Requirement.empty
            if let value = entry.value("require") {
                let parsed = RequirementParser(issues: entry.issues).requirement(
                    value, path: entry.childPath("require"), nested: false)
                if let parsed {
                    requirement = parsed
                    if auth == .none && !parsed.isEmpty {
                        entry.error("require", "a route with auth \"none\" cannot have requirements")
                    }
                }
            }
            let stripPathPrefix = entry.bool("stripPathPrefix") ?? false
            if stripPathPrefix, case .exact = pathMatch {
                entry.error("stripPathPrefix", "applies only to routes with pathPrefix")
            }
            let forwardAccessToken = entry.bool("forwardAccessToken") ?? true
            var dpop = RouteConfiguration.DPoPMode.allowed
            if let text = entry.string("dpop") {
                if let mode = RouteConfiguration.DPoPMode(rawValue: text) {
                    dpop = mode
                } else {
                    entry.error("dpop", "must be \"off\", \"allowed\" or \"required\"")
                }
            }
            if dpop == .required && auth == .none { entry.error("dpop", "\"required\" needs a route with auth") }
            let forwardDPoPProof = entry.bool("forwardDPoPProof") ?? false
            let signIn = entry.bool("signIn") ?? false
            let cors = Self.cors(entry)
            let streams = Self.streams(entry)
            if signIn && auth == .none { entry.error("signIn", "needs a route with auth") }
            // docs/assertions.md, docs/token-exchange.md.
            let assertion = Self.routeAssertion(entry, backend: backend)
            let exchange = Self.routeExchange(entry)
            if auth == .none && assertion != nil { entry.error("assertion", "needs a route with auth") }
            if auth == .none && exchange != nil { entry.error("exchange", "needs a route with auth") }
            if exchange != nil && !forwardAccessToken {
                entry.error("exchange", "forwards the exchanged token: it cannot go with forwardAccessToken false")
            }
            guard let name, let pathMatch, let backend else { continue }
            var route = RouteConfiguration(
                name: name,
                host: host,
                pathMatch: pathMatch,
                methods: methods,
                backend: backend,
                auth: auth,
                require: requirement,
                stripPathPrefix: stripPathPrefix,
                forwardAccessToken: forwardAccessToken
            )
            route.dpop = dpop
            route.forwardDPoPProof = forwardDPoPProof
            route.signIn = signIn
            route.cors = cors
            route.streams = streams
            route.assertion = assertion
            route.exchange = exchange
            routes.append(route)
        }
        return routes
    }
}
