import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// `check --request` against the live gateway (docs/policies.md, "check --request"): one table
/// of requests, each decided offline by `RequestCheck` (what `auth-gateway check --request`
/// runs) and by a live gateway with the very same configuration, must agree on the route, the
/// outcome (allowed, or the refusal's status and problem type, or the sign-in redirect) and the
/// identity headers. The live gateway is the reference.
@Suite("check --request agrees with the live gateway", .serialized, .awaitsCleanups, .timeLimit(.minutes(3)))
struct RequestCheckParityTests {
    static let key = APIKeyEntry.new(id: "ci-bot")

    static func configure(_ document: inout JSONObject) {
        LogoutTokenAttackTests.addOtherIssuer(&document)
        var entry = Self.key.entry
        entry.claims = ["sub": "ci-bot", "scope": "deploy read"]
        document.set("tokens.apiKeys", ["header": "X-API-Key", "keys": [entry.json]])
        document["trustedProxies"] = ["127.0.0.1/32"]
        document["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Scope": "claims.scope"]
        document["routes"] = [
            ["name": "app", "pathPrefix": "/app/", "backend": "api", "auth": "required", "signIn": true],
            ["name": "bound", "pathPrefix": "/dpop/", "backend": "api", "dpop": "required"],
            [
                "name": "office", "pathPrefix": "/office/", "backend": "api",
                "require": ["client.ip": ["cidr": ["10.0.0.0/8"]]],
            ],
            [
                "name": "deploy", "pathPrefix": "/deploy/", "backend": "api",
                "require": [
                    "anyOf": [["claims.scope": "deploy"], ["claims.groups": "admins"]],
                    "not": ["claims.sub": "mallory"],
                ],
            ],
            ["name": "maybe", "pathPrefix": "/maybe/", "backend": "api", "auth": "optional"],
            ["name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "none"],
            ["name": "api", "pathPrefix": "/", "backend": "api"],
        ]
    }

    struct Row {
        var name: String
        var method: HTTPMethod = .GET
        var path: String
        var headers: [(String, String)] = []
        /// The live outcome expected: "allowed", "302", or "<status> <type>".
        var expected: String
    }

    /// A decision, as either side gives it.
    struct Decision: Equatable, CustomStringConvertible {
        var route: String?
        var outcome: String
        var identityHeaders: [String]
        var description: String { "route \(self.route ?? "-"), \(self.outcome), \(self.identityHeaders)" }
    }

    static let navigation = [("Accept", "text/html,application/xhtml+xml"), ("Sec-Fetch-Mode", "navigate")]
    static let identityNames = ["X-User-Subject", "X-User-Scope"]

    static func rows() -> [Row] {
        let token = TestKeys.token(subject: "ada", extra: ["scope": "read"])
        let deployer = TestKeys.token(subject: "ada", extra: ["scope": "deploy"])
        let admin = TestKeys.token(subject: "bob", extra: ["groups": ["admins"]])
        let mallory = TestKeys.token(subject: "mallory", extra: ["groups": ["admins"]])
        let bound = TestKeys.token(
            subject: "ada", extra: ["cnf": ["jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"]])
        let expired = TestKeys.token(subject: "ada", expiresIn: -120)
        func bearer(_ token: String) -> (String, String) { ("Authorization", "Bearer \(token)") }
        return [
            Row(name: "a navigation without credentials", path: "/app/home", headers: Self.navigation, expected: "302"),
            Row(name: "a HEAD navigation", method: .HEAD, path: "/app/home", headers: Self.navigation, expected: "302"),
            Row(
                name: "a fetch without credentials", path: "/app/home",
                headers: [("Accept", "text/html"), ("Sec-Fetch-Mode", "cors")], expected: "401 token.missing"),
            Row(
                name: "an API call without credentials", path: "/app/data", headers: [("Accept", "application/json")],
                expected: "401 token.missing"),
            Row(
                name: "a navigation with a token", path: "/app/home", headers: Self.navigation + [bearer(token)],
                expected: "allowed"),
            Row(
                name: "a POST navigation-like request", method: .POST, path: "/app/form", headers: Self.navigation,
                expected: "401 token.missing"),
            Row(
                name: "dpop required, a bearer token", path: "/dpop/x", headers: [bearer(token)],
                expected: "401 dpop.required"),
            Row(
                name: "dpop required, a bound token as bearer", path: "/dpop/x", headers: [bearer(bound)],
                expected: "401 dpop.required"),
            Row(
                name: "dpop required, an API key", path: "/dpop/x", headers: [("X-API-Key", Self.key.key)],
                expected: "allowed"),
            Row(
                name: "a bound token as bearer on a plain route", path: "/api/x", headers: [bearer(bound)],
                expected: "401 dpop.required"),
            Row(
                name: "an unbound token with the DPoP scheme", path: "/api/x",
                headers: [("Authorization", "DPoP \(token)")],
                expected: "401 dpop.invalid_proof"),
            Row(
                name: "client.ip from X-Forwarded-For", path: "/office/x",
                headers: [bearer(token), ("X-Forwarded-For", "10.1.2.3")],
                expected: "allowed"),
            Row(
                name: "client.ip: the rightmost untrusted hop", path: "/office/x",
                headers: [bearer(token), ("X-Forwarded-For", "10.1.2.3, 203.0.113.9")], expected: "403 access.forbidden"
            ),
            Row(
                name: "client.ip: the peer itself", path: "/office/x", headers: [bearer(token)],
                expected: "403 access.forbidden"),
            Row(
                name: "an API key that satisfies anyOf", method: .POST, path: "/deploy/run",
                headers: [("X-API-Key", Self.key.key)], expected: "allowed"),
            Row(
                name: "an unknown API key", method: .POST, path: "/deploy/run", headers: [("X-API-Key", "agk_wrong")],
                expected: "401 apikey.invalid"),
            Row(
                name: "an API key and a token", method: .POST, path: "/deploy/run",
                headers: [("X-API-Key", Self.key.key), bearer(token)], expected: "400 apikey.ambiguous"),
            Row(name: "anyOf's first branch", path: "/deploy/x", headers: [bearer(deployer)], expected: "allowed"),
            Row(name: "anyOf's second branch", path: "/deploy/x", headers: [bearer(admin)], expected: "allowed"),
            Row(name: "not", path: "/deploy/x", headers: [bearer(mallory)], expected: "403 access.forbidden"),
            Row(name: "no anyOf branch", path: "/deploy/x", headers: [bearer(token)], expected: "403 access.forbidden"),
            Row(name: "optional, anonymous", path: "/maybe/x", expected: "allowed"),
            Row(name: "optional, a token", path: "/maybe/x", headers: [bearer(token)], expected: "allowed"),
            Row(
                name: "auth none with a key", path: "/open/x", headers: [("X-API-Key", Self.key.key)],
                expected: "allowed"),
            Row(name: "an expired token", path: "/api/x", headers: [bearer(expired)], expected: "401 token.expired"),
            Row(
                name: "an API key on the catch-all", path: "/api/x", headers: [("X-API-Key", Self.key.key)],
                expected: "allowed"),
        ]
    }

    /// `RequestCheck`'s decision for `row` (the peer is 127.0.0.1, as the live test's).
    static func offline(_ row: Row, configuration: GatewayConfiguration, now: Double) -> Decision {
        var options = RequestCheck.Options(request: "\(row.method.rawValue) \(row.path)")
        options.headers = row.headers.map { "\($0.0): \($0.1)" }
        options.clientIP = "127.0.0.1"
        let text = RequestCheck(configuration: configuration, options: options, now: now).run().text
        let lines = text.split(separator: "\n").map(String.init)
        func value(_ label: String) -> String? {
            lines.first { $0.hasPrefix(label + ":") }.map {
                String($0.dropFirst(label.count + 1)).trimmingCharacters(in: .whitespaces)
            }
        }
        let route = value("route").flatMap { line -> String? in
            let parts = line.split(separator: "\"")
            return parts.count >= 2 ? String(parts[1]) : nil
        }
        var outcome = value("decision") ?? "none: \(text)"
        if outcome.hasPrefix("refused: ") {
            outcome = outcome.dropFirst("refused: ".count).split(separator: " ").prefix(2).joined(separator: " ")
        } else if outcome.hasPrefix("redirected: 302") {
            outcome = "302"
        }
        var headers: [String] = []
        if let start = lines.firstIndex(where: { $0.hasPrefix("identity headers:") }) {
            for line in lines[(start + 1)...] where line.hasPrefix("  ") {
                headers.append(line.trimmingCharacters(in: .whitespaces))
            }
        }
        return Decision(route: route, outcome: outcome, identityHeaders: headers.sorted())
    }

    /// The requests counted per route so far.
    static func counts(_ fixture: SignInFixture) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for line in try await fixture.metrics().split(separator: "\n")
        where line.hasPrefix("auth_gateway_requests_total{route=\"") {
            let route = String(line.dropFirst("auth_gateway_requests_total{route=\"".count).prefix { $0 != "\"" })
            counts[route, default: 0] += Int(line.split(separator: " ").last ?? "") ?? 0
        }
        return counts
    }

    static func live(_ row: Row, _ fixture: SignInFixture) async throws -> Decision {
        let before = try await Self.counts(fixture)
        let response = try await fixture.gateway.send(TestRequest(row.method, row.path, headers: row.headers))
        var after: [String: Int] = [:]
        // The access log and metrics are written once the answer is out: poll for the count.
        _ = await eventually {
            after = (try? await Self.counts(fixture)) ?? [:]
            return after.values.reduce(0, +) > before.values.reduce(0, +)
        }
        let route = after.keys.first { after[$0, default: 0] > before[$0, default: 0] }
        let outcome: String
        switch response.status {
        case 200..<300:
            outcome = "allowed"
        case 302 where response.header("location")?.hasPrefix(fixture.provider.authorizationEndpoint) == true:
            outcome = "302"
        default:
            let type = response.json?["type"]?.stringValue?.replacingOccurrences(
                of: "urn:auth-gateway:problem:", with: "")
            outcome = "\(response.status) \(type ?? "?")"
        }
        var headers: [String] = []
        if outcome == "allowed" {
            for name in Self.identityNames {
                for value in response.echoedHeader(name) { headers.append("\(name): \(value)") }
            }
        }
        return Decision(
            route: route.flatMap { $0.isEmpty ? nil : $0 }, outcome: outcome, identityHeaders: headers.sorted())
    }

    @Test("a table of requests: the same route, outcome and identity headers offline and live")
    func parity() async throws {
        let fixture = try await SignInFixture.start(configure: Self.configure)
        atTestEnd { await fixture.stop() }
        let configuration = fixture.gateway.application.configuration
        for row in Self.rows() {
            let live = try await Self.live(row, fixture)
            let offline = Self.offline(row, configuration: configuration, now: fixture.gateway.clock.now)
            #expect(live.outcome == row.expected, "\(row.name): live \(live)")
            #expect(offline == live, "\(row.name): offline \(offline), live \(live)")
            #expect(live.route != nil, "\(row.name): no route counted")
        }
    }
}
