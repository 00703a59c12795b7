/// Reading `routes[].cors` (docs/policies.md, "CORS").
extension ConfigurationLoader {
    static func cors(_ entry: ConfigReader) -> CORSConfiguration? {
        guard let section = entry.object("cors") else { return nil }
        defer { section.finish() }
        let origins = section.stringArray("allowOrigins") ?? []
        if !section.has("allowOrigins") { section.error("allowOrigins", "is required") }
        for (index, origin) in origins.enumerated() where origin != "*" && !Self.isOrigin(origin) {
            section.error(
                "allowOrigins[\(index)]", "\"\(origin)\" is not an origin (scheme://host[:port], no path, or \"*\")")
        }
        var cors = CORSConfiguration(allowOrigins: origins)
        if let methods = section.stringArray("allowMethods") {
            for (index, method) in methods.enumerated() where !HTTPToken.isValid(method) {
                section.error("allowMethods[\(index)]", "\"\(method)\" is not a valid method")
            }
            cors.allowMethods = methods.map { $0.uppercased() }
        }
        for key in ["allowHeaders", "exposeHeaders"] {
            guard let names = section.stringArray(key) else { continue }
            for (index, name) in names.enumerated()
            where !(name == "*" && key == "allowHeaders") && !HTTPToken.isValid(name) {
                section.error("\(key)[\(index)]", "\"\(name)\" is not a valid header name")
            }
            if key == "allowHeaders" {
                cors.allowHeaders = names.map { $0.lowercased() }
            } else {
                cors.exposeHeaders = names
            }
        }
        cors.allowCredentials = section.bool("allowCredentials") ?? false
        if cors.allowCredentials && origins.contains("*") {
            section.error("allowOrigins", "\"*\" cannot be used with allowCredentials: true (name the origins)")
        }
        cors.maxAgeSeconds = section.int("maxAgeSeconds", in: 0...86_400)
        return cors
    }

    /// `scheme://host[:port]` as an `Origin` header carries it.
    static func isOrigin(_ text: String) -> Bool {
        guard case .success(let url) = UpstreamURL.parse(text), url.pathAndQuery.isEmpty, !text.hasSuffix("/") else {
            return false
        }
        return text == url.description
    }
}
