import Foundation
import Testing

@testable import AuthGateway

/// `RouteTable` against `LinearRouteTable`, the first-to-last scan it replaced: random tables
/// (overlapping prefixes, prefixes of each other, `/` and the empty prefix, exact paths, hosts
/// in mixed case, methods) and random requests near their paths, from a seeded generator.
///
/// One seed is fixed; the other is new on every run (printed, and named in every failure) unless
/// `ROUTE_TABLE_SEED` gives it, so a failure is replayed with `ROUTE_TABLE_SEED=<seed>`.
@Suite("RouteTable properties")
struct RouteTablePropertyTests {
    static let tables = 1000
    static let requestsPerTable = 30
    static let seeds: [UInt64] = [
        0x5EED_0043,
        ProcessInfo.processInfo.environment["ROUTE_TABLE_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...(1 << 48)),
    ]

    @Test("the index finds the route the linear scan finds", arguments: Self.seeds)
    func agreesWithLinearScan(seed: UInt64) {
        print("RouteTable properties: seed \(seed) (ROUTE_TABLE_SEED=\(seed) replays it)")
        var random = SeededRandom(seed: seed)
        var matched = 0
        var unmatched = 0
        var firstIsNotLongest = 0
        var hostDecided = 0
        var failures = 0
        for tableNumber in 0..<Self.tables {
            let routes = RandomRoutes.table(&random)
            let table = RouteTable(routes, backendNames: ["api"])
            let linear = LinearRouteTable(routes: routes)
            for _ in 0..<Self.requestsPerTable {
                let request = RandomRoutes.request(&random, near: routes)
                let found = table.match(host: request.host.map { $0[...] }, path: request.path, method: request.method)
                let expected = linear.match(
                    host: request.host.map { $0[...] }, path: request.path, method: request.method)
                let foundIndex = found.flatMap { route in table.routes.firstIndex { $0 === route } }
                if foundIndex != expected {
                    failures += 1
                    if failures <= 5 {
                        Issue.record(
                            """
                            seed \(seed), table \(tableNumber): \(request) found \(foundIndex.map(String.init) ?? "nil"), \
                            the linear scan \(expected.map(String.init) ?? "nil"); routes:
                            \(RandomRoutes.describe(routes))
                            """)
                    }
                }
                guard let expected else {
                    unmatched += 1
                    continue
                }
                matched += 1
                if let longest = linear.longestPrefixMatch(request), longest != expected { firstIsNotLongest += 1 }
                if routes[expected].host != nil { hostDecided += 1 }
            }
        }
        #expect(failures == 0, "seed \(seed): \(failures) requests disagree")
        // The generator is useful only if it makes every kind of case often.
        let total = Self.tables * Self.requestsPerTable
        #expect(
            matched > total / 5 && unmatched > total / 10, "seed \(seed): matched \(matched), unmatched \(unmatched)")
        #expect(
            firstIsNotLongest > total / 50, "seed \(seed): first match not the longest prefix: \(firstIsNotLongest)")
        #expect(hostDecided > total / 20, "seed \(seed): decided by a host route: \(hostDecided)")
    }

    @Test("10 000 routes: the last prefix route and the last host route are found, as the scan finds them")
    func largeTables() {
        let prefixes = (0..<10_000).map { RandomRoutes.route(.prefix("/service-\($0)/"), methods: ["GET", "POST"]) }
        let hosts = (0..<10_000).map { RandomRoutes.route(.prefix("/"), host: "host-\($0).example.com") }
        for routes in [prefixes, hosts, prefixes + hosts, hosts + prefixes] {
            let table = RouteTable(routes, backendNames: ["api"])
            let linear = LinearRouteTable(routes: routes)
            for request in [
                RouteRequest(host: "host-9999.example.com", path: "/service-9999/items/42", method: "GET"),
                RouteRequest(host: "HOST-9999.Example.COM", path: "/service-9999", method: "GET"),
                RouteRequest(host: "host-0.example.com", path: "/service-19/", method: "DELETE"),
                RouteRequest(host: "host-10000.example.com", path: "/service-10000/", method: "POST"),
                RouteRequest(host: nil, path: "/service-5000/x", method: "POST"),
            ] {
                let found = table.match(host: request.host.map { $0[...] }, path: request.path, method: request.method)
                let expected = linear.match(
                    host: request.host.map { $0[...] }, path: request.path, method: request.method)
                #expect(found.flatMap { route in table.routes.firstIndex { $0 === route } } == expected, "\(request)")
            }
        }
    }
}

/// The matcher `RouteTable` replaced, kept as the oracle: every route tried first to last.
struct LinearRouteTable {
    let routes: [RouteConfiguration]

    /// The position of the first route whose host, path and methods match.
    func match(host: Substring?, path: String, method: String) -> Int? {
        self.routes.indices.first { Self.matches(self.routes[$0], host: host, path: path, method: method) }
    }

    /// What a longest-prefix matcher would answer (the most specific route, not the first):
    /// the property test must meet cases where the two differ.
    func longestPrefixMatch(_ request: RouteRequest) -> Int? {
        var best: (index: Int, length: Int)?
        for (index, route) in self.routes.enumerated()
        where Self.matches(route, host: request.host?[...], path: request.path, method: request.method) {
            let length: Int
            switch route.pathMatch {
            case .prefix(let prefix): length = prefix.utf8.count
            case .exact(let exact): length = exact.utf8.count + 1
            }
            if best == nil || length > best!.length { best = (index, length) }
        }
        return best?.index
    }

    /// The old matcher's test of one route, as it was.
    private static func matches(_ route: RouteConfiguration, host: Substring?, path: String, method: String) -> Bool {
        if let routeHost = route.host {
            guard let host, Self.equalsIgnoringASCIICase(host, routeHost) else { return false }
        }
        switch route.pathMatch {
        case .prefix(let prefix):
            guard path.hasPrefix(prefix) else { return false }
        case .exact(let exact):
            guard path == exact else { return false }
        }
        if let methods = route.methods, !methods.contains(method) { return false }
        return true
    }

    private static func equalsIgnoringASCIICase(_ lhs: Substring, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        for (a, b) in zip(lhs.utf8, rhs.utf8) where a != b {
            let lowerA = a >= 65 && a <= 90 ? a + 32 : a
            let lowerB = b >= 65 && b <= 90 ? b + 32 : b
            if lowerA != lowerB { return false }
        }
        return true
    }
}

struct RouteRequest: CustomStringConvertible {
    var host: String?
    var path: String
    var method: String

    var description: String { "\(self.method) \(self.host ?? "(no host)") \"\(self.path)\"" }
}

/// Random tables and requests, drawn from small alphabets so that paths overlap often.
enum RandomRoutes {
    static let hosts = ["api.example.com", "b.example", "c"]
    static let methods = ["GET", "POST", "PUT", "DELETE"]
    static let narrow = Array("/ab".utf8)
    static let wide = Array("/abcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
    static let notable = ["/", "", "/api", "/apix", "/api/", "/a", "/ab", "/b/"]

    static func route(
        _ match: RouteConfiguration.PathMatch, host: String? = nil, methods: Set<String>? = nil
    ) -> RouteConfiguration {
        RouteConfiguration(
            name: "r", host: host, pathMatch: match, methods: methods, backend: "api", auth: .none,
            stripPathPrefix: false, forwardAccessToken: true)
    }

    static func table(_ random: inout SeededRandom) -> [RouteConfiguration] {
        let alphabet = random.chance(80) ? Self.narrow : Self.wide
        let count = random.chance(90) ? random.int(1...24) : random.int(25...200)
        var paths: [String] = []
        return (0..<count).map { _ in
            let path: String
            if !paths.isEmpty && random.chance(30) {
                // A path of the table again, or one of its prefixes or extensions.
                path = Self.vary(random.pick(paths), &random, alphabet: alphabet)
            } else if random.chance(15) {
                path = random.pick(Self.notable)
            } else {
                path = Self.text(&random, alphabet: alphabet, length: random.int(1...6))
            }
            paths.append(path)
            let match: RouteConfiguration.PathMatch = random.chance(70) ? .prefix(path) : .exact(path)
            let host = random.chance(35) ? Self.mixCase(random.pick(Self.hosts), &random) : nil
            var methods: Set<String>?
            if random.chance(40) {
                methods = Set((0..<random.int(1...3)).map { _ in random.pick(Self.methods) })
                if random.chance(3) { methods = [] }
            }
            return Self.route(match, host: host, methods: methods)
        }
    }

    static func request(_ random: inout SeededRandom, near routes: [RouteConfiguration]) -> RouteRequest {
        let route = random.pick(routes)
        let base: String
        switch route.pathMatch {
        case .prefix(let path), .exact(let path): base = path
        }
        let path: String
        switch random.int(0...9) {
        case 0...2: path = base
        case 3...7: path = Self.vary(base, &random, alphabet: Self.narrow)
        default: path = Self.text(&random, alphabet: Self.wide, length: random.int(0...8))
        }
        let host: String?
        switch random.int(0...9) {
        case 0...1: host = nil
        case 2: host = "unknown.example"
        case 3...5:
            host = route.host.map { Self.mixCase($0, &random) } ?? Self.mixCase(random.pick(Self.hosts), &random)
        default: host = random.pick(Self.hosts)
        }
        return RouteRequest(host: host, path: path, method: random.pick(Self.methods + ["PATCH"]))
    }

    /// `path` extended, shortened or with one byte changed.
    static func vary(_ path: String, _ random: inout SeededRandom, alphabet: [UInt8]) -> String {
        var bytes = Array(path.utf8)
        switch random.int(0...3) {
        case 0, 1: bytes += Self.text(&random, alphabet: alphabet, length: random.int(1...4)).utf8
        case 2: if !bytes.isEmpty { bytes.removeLast(random.int(1...bytes.count)) }
        default: if !bytes.isEmpty { bytes[random.int(0...(bytes.count - 1))] = random.pick(alphabet) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func text(_ random: inout SeededRandom, alphabet: [UInt8], length: Int) -> String {
        String(decoding: (0..<length).map { _ in random.pick(alphabet) }, as: UTF8.self)
    }

    static func mixCase(_ text: String, _ random: inout SeededRandom) -> String {
        let flipped = text.utf8.map { byte in
            let letter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
            return letter && random.chance(30) ? byte ^ 0x20 : byte
        }
        return String(decoding: flipped, as: UTF8.self)
    }

    static func describe(_ routes: [RouteConfiguration]) -> String {
        routes.enumerated().map { index, route in
            let path: String
            switch route.pathMatch {
            case .prefix(let prefix): path = "pathPrefix \"\(prefix)\""
            case .exact(let exact): path = "path \"\(exact)\""
            }
            let methods = route.methods.map { " methods \($0.sorted())" } ?? ""
            return "  [\(index)] host \(route.host ?? "-") \(path)\(methods)"
        }.joined(separator: "\n")
    }
}
