/// Reading `rateLimits` (docs/rate-limits.md). Cross-checked against the routes that parsed.
extension ConfigurationLoader {
    /// The smallest rate the bucket arithmetic represents exactly (one request per ~11.6 days).
    static let minimumRequestsPerSecond = 0.000001
    static let maximumRequestsPerSecond = 1_000_000_000.0

    /// The limits that parsed (every problem is recorded with its path; any fails the load).
    static func rateLimits(_ root: ConfigReader, routeNames: Set<String>?) -> [RateLimitConfiguration]? {
        guard let entries = root.objectArray("rateLimits") else {
            return root.has("rateLimits") ? nil : []
        }
        var limits: [RateLimitConfiguration] = []
        var names: Set<String> = []
        for entry in entries {
            defer { entry.finish() }
            let name = entry.requiredString("name")
            if let name {
                if !names.insert(name).inserted {
                    entry.error("name", "duplicate rate limit name \"\(name)\"")
                } else if !Self.isLimitName(name) {
                    // The name travels in a structured-field string and a metric label.
                    entry.error("name", "\"\(name)\" must be printable ASCII without \" or \\")
                }
            }
            var key: RateLimitConfiguration.Key?
            if let text = entry.requiredString("key") {
                key = RateLimitConfiguration.Key(parsing: text)
                if key == nil {
                    entry.error(
                        "key",
                        "expected \"claims.<name>\", \"profile.<name>\", \"client.ip\" or \"route\", found \"\(text)\"")
                }
            }
            var rate: Double?
            if !entry.has("requestsPerSecond") {
                entry.error("requestsPerSecond", "is required")
                _ = entry.value("requestsPerSecond")
            } else if let value = entry.value("requestsPerSecond") {
                if case .number(let number) = value {
                    let double = number.double
                    if double.isFinite, double >= Self.minimumRequestsPerSecond, double <= Self.maximumRequestsPerSecond
                    {
                        rate = double
                    } else {
                        entry.error(
                            "requestsPerSecond",
                            "must be greater than 0 (at least 0.000001, at most 1000000000), found \(number.text)")
                    }
                } else {
                    entry.error("requestsPerSecond", "expected a number, found \(value.typeName)")
                }
            }
            var burst: Int?
            if entry.has("burst") {
                burst = entry.int("burst", in: 1...1_000_000_000)
            } else {
                _ = entry.value("burst")
                entry.error("burst", "is required")
            }
            let maxKeys = entry.int("maxKeys", in: 1...100_000_000) ?? RateLimitConfiguration.defaultMaxKeys
            var routes: [String]?
            if let list = entry.stringArray("routes") {
                if list.isEmpty {
                    entry.error("routes", "must name at least one route (leave it out to apply to every route)")
                }
                if let routeNames {
                    for (index, route) in list.enumerated() where !routeNames.contains(route) {
                        entry.error("routes[\(index)]", "\"\(route)\" is not the name of a route")
                    }
                }
                routes = list
            }
            guard let name, let key, let rate, let burst else { continue }
            limits.append(
                RateLimitConfiguration(
                    name: name, key: key, requestsPerSecond: rate, burst: burst, routes: routes, maxKeys: maxKeys))
        }
        return limits
    }

    /// Printable ASCII without `"` and `\`, 1…64 characters.
    static func isLimitName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 64 else { return false }
        return name.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }
}
