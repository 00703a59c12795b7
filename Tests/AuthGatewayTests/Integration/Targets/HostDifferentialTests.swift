import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The gateway against real nginx virtual servers on host spellings (docs/forwarding.md, "The
/// canonical host"): nginx serves `server_name admin.example.com` or its default server; the
/// gateway has a route for `admin.example.com` (a token) and a catch-all (none), each to its own
/// listener of the same nginx. The invariant: a spelling is refused (400), or the gateway
/// routes it to the admin route exactly when nginx serves the admin site — for the host the
/// gateway forwards, and for the raw spelling that a proxy in front of the gateway passes on.
@Suite(
    "Request targets: the gateway and nginx's virtual servers read every host alike", .serialized,
    .awaitsCleanups, .timeLimit(.minutes(3)))
struct HostDifferentialTests {
    /// Routes `admin-host` (host admin.example.com, a token) → virtual-host listener 0, `default`
    /// (no token) → listener 1.
    static func gateway(_ nginx: LocationServer) async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["backends"] = [
                "vhost-0": ["urls": [.string("http://127.0.0.1:\(nginx.virtualHostPorts[0])")]],
                "vhost-1": ["urls": [.string("http://127.0.0.1:\(nginx.virtualHostPorts[1])")]],
            ]
            config["routes"] = [
                ["name": "admin-host", "host": "admin.example.com", "pathPrefix": "/", "backend": "vhost-0"],
                ["name": "default", "pathPrefix": "/", "backend": "vhost-1", "auth": "none"],
            ]
        }
    }

    static let routes = ["admin-host", "default"]

    /// The gateway's verdict: refused, or the route (by listener) and the virtual server nginx
    /// chose for what the gateway forwarded.
    static func verdict(_ response: RawResponse) -> (route: String, vhost: String)? {
        guard let reading = LocationServer.Reading(response), Self.routes.indices.contains(reading.listener) else {
            return nil
        }
        return (Self.routes[reading.listener], reading.location)
    }

    @Test func hostsInProxyMode() async throws {
        let nginx = try await LocationServer.start(.nginx, listeners: 0, virtualHostListeners: 2)
        atTestEnd { await nginx.stop() }
        let gateway = try await Self.gateway(nginx)
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        let spellings = HostSpellings.all
        let rows = try await RawExchange.map(spellings) { host in
            let viaGateway = try await RawExchange.send(
                port: gateway.port,
                RawExchange.get(Array("/x".utf8), host: host, headers: [("Authorization", "Bearer \(token)")]))
            let direct = try await RawExchange.send(
                port: nginx.virtualHostPorts[0], RawExchange.get(Array("/x".utf8), host: host))
            return (host, viaGateway, direct)
        }
        var violations: [String] = []
        var refused = 0
        var lines: [String] = []
        for (host, viaGateway, direct) in rows {
            let shown = RawExchange.show(host)
            let raw = LocationServer.Reading(direct)?.location ?? "\(direct.status)"
            if viaGateway.status == 400, let problem = viaGateway.problem {
                refused += 1
                lines.append("  \(shown): gateway refused (\(problem)); nginx reads it raw as \(raw)")
                continue
            }
            guard let (route, vhost) = Self.verdict(viaGateway) else {
                violations.append("\(shown): the gateway answered \(viaGateway.status) \(viaGateway.text.prefix(120))")
                continue
            }
            lines.append("  \(shown): gateway \(route), nginx serves \(vhost); raw \(raw)")
            // What the gateway forwarded is served by the route's virtual server.
            if (route == "admin-host") != (vhost == "admin-host") {
                violations.append("\(shown): the gateway routed it to \(route), nginx served \(vhost)")
            }
            // The raw spelling, as a proxy in front would pass it on (Caddy passes Host as sent).
            if raw.hasSuffix("-host"), (route == "admin-host") != (raw == "admin-host") {
                violations.append("\(shown): the gateway routes it to \(route), nginx reads the raw spelling as \(raw)")
            }
        }
        print(
            "HostDifferentialTests: \(spellings.count) host spellings, \(refused) refused:\n\(lines.joined(separator: "\n"))"
        )
        #expect(violations.isEmpty, "\(violations.count) violations:\n\(violations.joined(separator: "\n"))")
        #expect(refused >= 40)
        // The spellings of the incident reach the admin route and its server.
        for host in ["ADMIN.example.com", "admin.example.com.", "admin.example.com.:80", "admin.example.com:80"] {
            let row = rows.first { $0.0 == Array(host.utf8) }
            #expect(row.flatMap { Self.verdict($0.1) }?.route == "admin-host", "\(host)")
        }
        for host in ["admin.example.com..", "user@admin.example.com", ".admin.example.com", "admin.example.com:99999"] {
            let row = rows.first { $0.0 == Array(host.utf8) }
            #expect(row?.1.status == 400 && row?.1.problem == "request.ambiguous_host", "\(host)")
        }
    }

    /// Two `Host` fields, and absolute-form targets with a `Host` beside them.
    @Test func severalHostsInOneRequest() async throws {
        let nginx = try await LocationServer.start(.nginx, listeners: 0, virtualHostListeners: 2)
        atTestEnd { await nginx.stop() }
        let gateway = try await Self.gateway(nginx)
        atTestEnd { await gateway.stop() }
        let token = "Authorization: Bearer \(TestKeys.token())\r\n"
        func send(_ head: String) async throws -> RawResponse {
            try await RawExchange.send(port: gateway.port, Array((head + token + "Connection: close\r\n\r\n").utf8))
        }
        for head in [
            "GET /x HTTP/1.1\r\nHost: admin.example.com\r\nHost: other.example.com\r\n",
            "GET /x HTTP/1.1\r\nHost: other.example.com\r\nHost: admin.example.com\r\n",
            "GET /x HTTP/1.1\r\nHost: admin.example.com\r\nHost: admin.example.com\r\n",
            "GET http://admin.example.com./x HTTP/1.1\r\nHost: other.example.com\r\n",
            "GET http://other.example.com/x HTTP/1.1\r\nHost: admin.example.com\r\n",
            "GET http://user@admin.example.com/x HTTP/1.1\r\nHost: admin.example.com\r\n",
        ] {
            let response = try await send(head)
            #expect(response.status == 400, "\(head.debugDescription): \(response.status) \(response.text)")
            #expect(response.problem == "request.ambiguous_host", "\(head.debugDescription)")
        }
        // An absolute-form target names the host: routed by it, and nginx gets it as `Host`.
        let absolute = try await send("GET http://Admin.Example.com./x HTTP/1.1\r\nHost: admin.example.com\r\n")
        #expect(Self.verdict(absolute).map { "\($0.route) \($0.vhost)" } == "admin-host admin-host")
        let tokenless = try await RawExchange.send(
            port: gateway.port,
            Array(
                "GET http://admin.example.com./x HTTP/1.1\r\nHost: admin.example.com\r\nConnection: close\r\n\r\n".utf8)
        )
        #expect(tokenless.status == 401)
        #expect(gateway.backend.requestCount == 0)
    }

    /// HTTP/2 with a real client (nghttp): `:authority` and `host` are one host or refused.
    @Test func authorityAndHostOverHTTP2() async throws {
        let nghttp = try ExternalTool.require("nghttp", package: "nghttp2-client")
        let nginx = try await LocationServer.start(.nginx, listeners: 0, virtualHostListeners: 2)
        atTestEnd { await nginx.stop() }
        let gateway = try await Self.gateway(nginx)
        atTestEnd { await gateway.stop() }
        let token = TestKeys.token()
        func send(_ fields: [(String, String)], token: String?) async throws -> String {
            var arguments = ["--no-verify-peer", "-t", "20"]
            for (name, value) in fields { arguments += ["-H", "\(name): \(value)"] }
            if let token { arguments += ["-H", "authorization: Bearer \(token)"] }
            arguments.append("http://127.0.0.1:\(gateway.port)/x")
            let run = try await ExternalTool.run(nghttp, arguments, timeout: .seconds(60))
            return run.stdout
        }
        let cases: [([(String, String)], String)] = [
            ([(":authority", "admin.example.com.")], "admin-host 0"),
            ([(":authority", "ADMIN.example.com:80")], "admin-host 0"),
            ([(":authority", "other.example.com")], "default-host 1"),
            ([(":authority", "admin.example.com"), ("host", "admin.example.com.")], "admin-host 0"),
            ([(":authority", "other.example.com"), ("host", "admin.example.com")], "request.ambiguous_host"),
            ([(":authority", "admin.example.com"), ("host", "other.example.com")], "request.ambiguous_host"),
            ([(":authority", "user@admin.example.com")], "request.ambiguous_host"),
            ([(":authority", "admin.example.com..")], "request.ambiguous_host"),
        ]
        for (fields, expected) in cases {
            let body = try await send(fields, token: token)
            #expect(body.contains(expected), "\(fields): \(body)")
        }
        // Without a token the admin host is refused, whichever field names it.
        let tokenless = try await send([(":authority", "Admin.Example.com.")], token: nil)
        #expect(tokenless.contains("token.missing"), "\(tokenless)")
    }
}
