import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// Authorizer mode with the real proxies in front (docs/authorizer.md: nginx `auth_request`,
/// Caddy `forward_auth`, each configured with the doc's snippet by `FrontProxy`), in front of an
/// application server that resolves paths and hosts its own way (`LocationServer`): the proxy
/// passes the client's raw spelling to the application and asks the gateway about the same
/// spelling. Whatever the spelling, a request without a token never reaches a location of a
/// protected route, and nginx never turns the gateway's answer into a 500.
@Suite(
    "Request targets: through real nginx and Caddy in front of the gateway", .serialized, .awaitsCleanups,
    .timeLimit(.minutes(4)))
struct FrontProxyTargetTests {
    /// `public` (no token), `admin` (a token), `admin-host` (host admin.example.com, a token) and
    /// the catch-all `open` (no token); authorizer mode, so no backend is contacted.
    static func gateway() async throws -> GatewayFixture {
        try await GatewayFixture.start { config in
            config["authorizer"] = [:]
            config["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Email": "claims.email"]
            config["routes"] = [
                ["name": "admin-host", "host": "admin.example.com", "pathPrefix": "/", "backend": "api"],
                ["name": "public", "pathPrefix": "/public/", "backend": "api", "auth": "none"],
                ["name": "admin", "pathPrefix": "/admin/", "backend": "api"],
                ["name": "open", "pathPrefix": "/", "backend": "api", "auth": "none"],
            ]
        }
    }

    struct Setup: Sendable, CustomTestStringConvertible {
        var front: FrontProxy.Kind
        var application: LocationServer.Kind
        var testDescription: String { "\(self.front) in front of \(self.application)" }
    }

    @Test(arguments: [
        Setup(front: .nginx, application: .caddy), Setup(front: .nginx, application: .python),
        Setup(front: .caddy, application: .nginx), Setup(front: .caddy, application: .python),
    ])
    func tokenlessPathsNeverReachAProtectedLocation(_ setup: Setup) async throws {
        let gateway = try await Self.gateway()
        atTestEnd { await gateway.stop() }
        let application = try await LocationServer.start(setup.application, listeners: 1)
        atTestEnd { await application.stop() }
        let front = try await FrontProxy.start(
            setup.front, gatewayPort: gateway.port, backendPort: application.ports[0])
        atTestEnd { await front.stop() }
        let spellings = PathSpellings.all(seed: PathSpellings.seed)
        let responses = try await RawExchange.map(spellings) { spelling in
            try await RawExchange.send(
                port: front.port, RawExchange.get(spelling, host: Array("shop.example.com".utf8)))
        }
        var violations: [String] = []
        var outcomes: [String: Int] = [:]
        for (spelling, response) in zip(spellings, responses) {
            let shown = RawExchange.show(spelling)
            let reading = LocationServer.Reading(response)
            outcomes[reading.map { "served from \($0.location)" } ?? "\(response.status)", default: 0] += 1
            if response.status >= 500 {
                violations.append("\(shown): \(setup.front) answered \(response.status)")
            } else if response.status == 200 && reading == nil {
                violations.append("\(shown): 200 without the application's answer: \(response.text.prefix(120))")
            } else if let reading, reading.location == "admin" {
                violations.append("\(shown): no token, served from \(setup.application)'s admin location (\(reading))")
            }
        }
        print(
            "FrontProxyTargetTests \(setup.testDescription): \(spellings.count) spellings: \(outcomes.sorted { $0.key < $1.key })"
        )
        #expect(
            violations.isEmpty,
            "\(violations.count) violations:\n\(violations.prefix(40).joined(separator: "\n"))\n\(front.log.suffix(2000))"
        )
        #expect((outcomes["served from public"] ?? 0) >= 10)
        #expect((outcomes["401"] ?? 0) >= 5)
    }

    /// Host spellings through the proxy to an nginx with two virtual servers: the host the proxy
    /// gives the gateway (nginx `X-Forwarded-Host $host`, Caddy the `Host` as sent) and the host
    /// it gives the application are the same one: without a token the admin site is never served,
    /// and with one it is served exactly when the gateway decided on the admin route.
    @Test(arguments: [FrontProxy.Kind.nginx, .caddy])
    func hostsReachTheVirtualServerTheGatewayDecidedOn(_ kind: FrontProxy.Kind) async throws {
        let gateway = try await Self.gateway()
        atTestEnd { await gateway.stop() }
        let application = try await LocationServer.start(.nginx, listeners: 0, virtualHostListeners: 1)
        atTestEnd { await application.stop() }
        let front = try await FrontProxy.start(
            kind, gatewayPort: gateway.port, backendPort: application.virtualHostPorts[0])
        atTestEnd { await front.stop() }
        let token = TestKeys.token()
        var requests: [(String, [UInt8])] = HostSpellings.all.map { host in
            (RawExchange.show(host), RawExchange.get(Array("/x".utf8), host: host))
        }
        // Absolute-form: nginx's `$host` is the target's authority, `$http_host` the field.
        for (target, host) in [
            ("http://admin.example.com/x", "other.example.com"), ("http://Admin.example.com./x", "other.example.com"),
            ("http://other.example.com/x", "admin.example.com"),
        ] {
            requests.append(
                ("GET \(target) Host: \(host)", RawExchange.get(Array(target.utf8), host: Array(host.utf8))))
        }
        let rows = try await RawExchange.map(requests) { (shown, request) in
            let tokenless = try await RawExchange.send(port: front.port, request)
            var withToken = request
            withToken.removeLast(2)
            withToken += Array("Authorization: Bearer \(token)\r\n\r\n".utf8)
            return (shown, tokenless, try await RawExchange.send(port: front.port, withToken))
        }
        var violations: [String] = []
        var lines: [String] = []
        var admin = 0
        for (shown, tokenless, withToken) in rows {
            let anonymous = LocationServer.Reading(tokenless)
            let authorized = LocationServer.Reading(withToken)
            lines.append(
                "  \(shown): no token \(anonymous?.description ?? String(tokenless.status)), token \(authorized?.description ?? String(withToken.status))"
            )
            if tokenless.status >= 500 || withToken.status >= 500 {
                violations.append("\(shown): \(kind) answered \(tokenless.status) / \(withToken.status)")
                continue
            }
            if anonymous?.location == "admin-host" {
                violations.append("\(shown): no token, served by the admin virtual server")
            }
            // The gateway decided on the admin host exactly when it wants a token for it.
            let gatewaySawAdmin = tokenless.status == 401
            if gatewaySawAdmin { admin += 1 }
            if let authorized, (authorized.location == "admin-host") != gatewaySawAdmin {
                violations.append(
                    "\(shown): the gateway decided on \(gatewaySawAdmin ? "admin.example.com" : "another host"), the application served \(authorized)"
                )
            }
        }
        print("FrontProxyTargetTests hosts through \(kind):\n\(lines.joined(separator: "\n"))")
        #expect(violations.isEmpty, "\(violations.count) violations:\n\(violations.joined(separator: "\n"))")
        #expect(admin >= 5)
    }
}
