extension ConfigurationLoader {
    /// `paths` (docs/forwarding.md, "Request targets"): defaults when absent.
    static func paths(_ root: ConfigReader) -> PathSettings {
        var settings = PathSettings()
        guard let section = root.object("paths") else { return settings }
        defer { section.finish() }
        if let text = section.string("escapedSlashes") {
            if let value = PathSettings.EscapedSlashes(rawValue: text) {
                settings.escapedSlashes = value
            } else {
                section.error("escapedSlashes", "must be \"reject\", \"decode\" or \"keep\", not \"\(text)\"")
            }
        }
        settings.mergeSlashes = section.bool("mergeSlashes") ?? settings.mergeSlashes
        return settings
    }

    /// A route's `path` or `pathPrefix` that no canonical path can ever match (`/a//b`, `/a/./b`,
    /// `/%7Ea`, `/a%2fb` under `reject`) would silently never apply: an error naming the
    /// canonical spelling to write instead.
    static func checkCanonicalRoutePaths(_ routes: [RouteConfiguration], settings: PathSettings, root: ConfigReader) {
        for (index, route) in routes.enumerated() {
            let (key, path): (String, String)
            switch route.pathMatch {
            case .prefix(let prefix): (key, path) = ("pathPrefix", prefix)
            case .exact(let exact): (key, path) = ("path", exact)
            }
            let canonical: String
            do {
                canonical = try CanonicalPath.make(path[...], settings: settings)
            } catch {
                root.error("routes[\(index)].\(key)", "\"\(path)\" is refused as a request path: \(error.error.detail)")
                continue
            }
            // A prefix "/api/" stays "/api/"; "/api/." would become "/api/" and is refused too.
            if canonical != path {
                root.error(
                    "routes[\(index)].\(key)",
                    "\"\(path)\" is not canonical, so no request matches it: write \"\(canonical)\" (docs/forwarding.md)")
            }
        }
    }
}
