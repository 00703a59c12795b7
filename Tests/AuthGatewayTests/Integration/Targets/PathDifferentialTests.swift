import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The gateway against real servers on a few hundred path spellings (docs/forwarding.md,
/// "Request targets"; docs/testing.md): for every spelling, what the gateway routes on, what a
/// real nginx, a real Caddy and Python's `http.server` serve. The invariant: a spelling is
/// refused (400), or it is routed to the route whose location serves it — on every server,
/// both for the canonical path the gateway forwards (proxy mode) and for the raw spelling
/// itself, which is what a proxy in front of the gateway passes on (authorizer mode).
///
/// Route `i` of the gateway goes to listener `i` of each `LocationServer`, so the listener that
/// answers is the gateway's route and the location is the server's reading. Requests go over
/// raw sockets, so no client normalizes them first.
@Suite(
    "Request targets: the gateway and real servers read every path alike", .serialized, .awaitsCleanups,
    .timeLimit(.minutes(3)))
struct PathDifferentialTests {
    /// What the gateway did with one spelling.
    enum Verdict: Equatable, CustomStringConvertible {
        /// The gateway's own 400, with its problem type.
        case refused(String)
        /// Forwarded on `route`, and what the backend's location made of it.
        case routed(route: String, served: LocationServer.Reading)
        /// Anything else (a backend's own refusal among them).
        case other(Int)

        init(_ response: RawResponse) {
            if response.status == 400, let problem = response.problem {
                self = .refused(problem)
            } else if let reading = LocationServer.Reading(response),
                LocationServer.locations.indices.contains(reading.listener)
            {
                self = .routed(route: LocationServer.locations[reading.listener], served: reading)
            } else {
                self = .other(response.status)
            }
        }

        var route: String? {
            if case .routed(let route, _) = self { return route }
            return nil
        }

        var description: String {
            switch self {
            case .refused(let problem): return "refused (\(problem))"
            case .routed(let route, let served): return "route \(route) → location \(served)"
            case .other(let status): return "status \(status)"
            }
        }
    }

    /// How a server read a raw spelling sent straight to it: a location, or its own refusal.
    static func reading(_ response: RawResponse) -> String {
        LocationServer.Reading(response)?.location ?? "\(response.status)"
    }

    /// A gateway whose routes `public` (no token), `admin` (a token) and `open` (`/`, no token)
    /// go, per server kind and by host `<kind>.test`, to listeners 0, 1 and 2 of that server.
    static func gateway(
        _ servers: [LocationServer], configure: (inout JSONObject) -> Void = { _ in }
    )
        async throws -> GatewayFixture
    {
        try await GatewayFixture.start { config in
            var backends = JSONObject()
            var routes: [JSONValue] = []
            for server in servers {
                for (index, port) in server.ports.enumerated() {
                    backends["\(server.kind)-\(index)"] = ["urls": [.string("http://127.0.0.1:\(port)")]]
                }
                for (index, prefix) in ["/public/", "/admin/", "/"].enumerated() {
                    var route: JSONObject = [
                        "name": .string("\(server.kind)-\(LocationServer.locations[index])"),
                        "host": .string("\(server.kind).test"), "pathPrefix": .string(prefix),
                        "backend": .string("\(server.kind)-\(index)"),
                    ]
                    if index != 1 { route["auth"] = "none" }
                    routes.append(.object(route))
                }
            }
            config["backends"] = .object(backends)
            config["routes"] = .array(routes)
            configure(&config)
        }
    }

    static func startServers() async throws -> [LocationServer] {
        async let nginx = LocationServer.start(.nginx, listeners: 3)
        async let caddy = LocationServer.start(.caddy, listeners: 3)
        async let python = LocationServer.start(.python, listeners: 3)
        // Each started one is stopped even when another fails to start.
        let started = await [try? nginx, try? caddy, try? python].compactMap { $0 }
        for server in started { atTestEnd { await server.stop() } }
        guard started.count == 3 else {
            _ = try await (nginx, caddy, python)
            throw RawExchange.Failure(description: "a location server did not start")
        }
        return started
    }

    /// One spelling's outcome everywhere.
    struct Row: Sendable {
        var spelling: [UInt8]
        /// The gateway's verdict per backend kind.
        var verdicts: [LocationServer.Kind: Verdict]
        /// Each server's reading of the raw spelling.
        var raw: [LocationServer.Kind: String]

        var shown: String { RawExchange.show(self.spelling) }
    }

    @Test func pathsInProxyMode() async throws {
        let servers = try await Self.startServers()
        let gateway = try await Self.gateway(servers)
        atTestEnd { await gateway.stop() }
        let seed = PathSpellings.seed
        let spellings = PathSpellings.all(seed: seed)
        print("PathDifferentialTests: \(spellings.count) path spellings, seed \(seed) (AUTH_GATEWAY_TARGET_SEED)")
        let token = TestKeys.token()
        let rows = try await RawExchange.map(spellings) { spelling in
            var row = Row(spelling: spelling, verdicts: [:], raw: [:])
            for server in servers {
                let request = RawExchange.get(
                    spelling, host: Array("\(server.kind).test".utf8), headers: [("Authorization", "Bearer \(token)")])
                row.verdicts[server.kind] = Verdict(try await RawExchange.send(port: gateway.port, request))
                let direct = try await RawExchange.send(
                    port: server.ports[0], RawExchange.get(spelling, host: Array("127.0.0.1".utf8)))
                row.raw[server.kind] = Self.reading(direct)
            }
            return row
        }

        var violations: [String] = []
        var refused = 0
        var routed = 0
        for row in rows {
            let verdicts = servers.map { row.verdicts[$0.kind]! }
            // The same decision whatever the backend: routing happens before it is chosen.
            let routes = Set(verdicts.map { $0.route ?? "\($0)" })
            if routes.count != 1 {
                violations.append("\(row.shown): the gateway decided differently per backend: \(verdicts)")
                continue
            }
            switch verdicts[0] {
            case .refused:
                refused += 1
            case .other(let status):
                violations.append("\(row.shown): the gateway answered \(status)")
            case .routed(let route, _):
                routed += 1
                for server in servers {
                    // Proxy mode: the location that served the forwarded path is the route's.
                    if case .routed(_, let served) = row.verdicts[server.kind]!, served.location != route {
                        violations.append(
                            "\(row.shown): the gateway routed it to \(route), \(server.kind) served it from \(served)")
                    }
                    // Authorizer mode: a proxy passes the raw spelling on; a server that reads it
                    // as another route's location must not meet a spelling the gateway accepts.
                    let raw = row.raw[server.kind]!
                    if LocationServer.locations.contains(raw), raw != route {
                        violations.append(
                            "\(row.shown): the gateway routes it to \(route), \(server.kind) reads the raw spelling as \(raw)"
                        )
                    }
                }
            }
        }

        // Why ambiguous spellings are refused: the servers themselves disagree on them.
        let disagreements = rows.filter { row in
            Set(servers.map { row.raw[$0.kind]! }.filter { LocationServer.locations.contains($0) }).count > 1
        }
        print(
            "PathDifferentialTests: \(refused) refused, \(routed) routed; the servers read \(disagreements.count) raw spellings differently, e.g.:"
        )
        for row in disagreements.prefix(12) {
            let readings = servers.map { "\($0.kind) \(row.raw[$0.kind]!)" }.joined(separator: ", ")
            print("  \(row.shown): \(readings); gateway \(row.verdicts[.nginx]!)")
        }
        #expect(violations.isEmpty, "\(violations.count) violations:\n\(violations.prefix(40).joined(separator: "\n"))")
        // Big enough to matter: both outcomes, and spellings the servers disagree on.
        #expect(refused >= 100 && routed >= 50, "refused \(refused), routed \(routed)")
        #expect(disagreements.count >= 5)
        // Every spelling the servers disagree on is refused by the gateway.
        for row in disagreements {
            guard case .refused = row.verdicts[.nginx]! else {
                Issue.record("\(row.shown): the servers disagree, the gateway did not refuse it")
                continue
            }
        }

        // Controls: escapes that belong in a segment reach every backend with their meaning.
        func served(_ spelling: String, _ kind: LocationServer.Kind) -> LocationServer.Reading? {
            guard let row = rows.first(where: { $0.spelling == Array(spelling.utf8) }),
                case .routed(_, let served) = row.verdicts[kind]!
            else { return nil }
            return served
        }
        for kind in LocationServer.Kind.allCases {
            #expect(served("/public/caf%C3%A9", kind)?.resolved == "/public/café", "\(kind)")
            #expect(served("/public/caf%c3%a9", kind)?.resolved == "/public/café", "\(kind)")
            #expect(served("/public/a%20b", kind)?.resolved == "/public/a b", "\(kind)")
            #expect(served("/public/%7Euser", kind)?.resolved == "/public/~user", "\(kind)")
            #expect(served("/public/../admin/users", kind)?.resolved == "/admin/users", "\(kind)")
        }
        // The incident's spellings are refused.
        for spelling in ["/public/..%2Fadmin/users", "/public/..;/admin/x", "/public/%C0%AE%C0%AE/admin/x"] {
            let row = rows.first { $0.spelling == Array(spelling.utf8) }
            #expect(row?.verdicts[.nginx] == .refused("request.ambiguous_path"), "\(spelling)")
        }
    }
}
