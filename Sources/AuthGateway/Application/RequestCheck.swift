import Foundation
import NIOCore
import NIOHTTP1

/// `auth-gateway check --config F --request "METHOD URL"` (docs/policies.md, "check --request"):
/// decides one request offline and explains the decision.
///
/// No second evaluator: the request is decided by `OfflineGateway` — the canonical target, the
/// route table, the registered authentication steps, the rate limits and identity headers of
/// the live gateway, in the live order — and only explained here. Nothing is contacted: keys
/// that only a `jwksURL` or discovery would give are not fetched (`--no-verify` reads a token's
/// claims instead), and an answer that needs the auth service, the introspection endpoint or a
/// provider is reported as such.
public struct RequestCheck {
    public struct Options: Sendable {
        /// `"GET https://api.example.com/admin/x"` (or an origin-form target, `"GET /x"`).
        public var request: String
        /// The access token, read from this file (`--token FILE`).
        public var token: String?
        /// `--no-verify`: the token's claims are read without checking its signature.
        public var verify = true
        /// `--claims JSON`: the identity's claims, as a verified token's.
        public var claims: String?
        /// `--profile JSON`: the identity's profile.
        public var profile: String?
        /// `--header "Name: value"`, repeatable.
        public var headers: [String] = []
        /// `--client-ip IP`: the peer's address (default 127.0.0.1).
        public var clientIP: String?

        public init(request: String) { self.request = request }
    }

    /// The process's exit status: 0 allowed, 3 refused, 1 configuration (or usage) error.
    public enum Status: Int32, Sendable {
        case allowed = 0
        case invalid = 1
        case refused = 3
    }

    let configuration: GatewayConfiguration
    let options: Options
    /// Unix seconds: token and key expiry are judged at this instant.
    let now: Double

    public init(configuration: GatewayConfiguration, options: Options, now: Double = Date().timeIntervalSince1970) {
        self.configuration = configuration
        self.options = options
        self.now = now
    }

    /// The explanation's text and the exit status.
    public func run() -> (text: String, status: Status) {
        var report = RequestCheckReport()
        let status: Status
        do {
            status = try self.decide(&report)
        } catch {
            report.line("error", error.description)
            status = .invalid
        }
        return (report.text, status)
    }

    struct UsageError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private func decide(_ report: inout RequestCheckReport) throws(UsageError) -> Status {
        let parts = self.options.request.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2, let method = Optional(HTTPMethod(rawValue: parts[0])), !parts[0].isEmpty else {
            throw UsageError("--request must be \"METHOD URL\", e.g. \"GET https://api.example.com/x\"")
        }
        let uri = parts[1].trimmingCharacters(in: .whitespaces)
        let gateway: OfflineGateway
        do {
            gateway = try OfflineGateway(configuration: self.configuration, now: self.now)
        } catch {
            throw UsageError("cannot build the gateway offline: \(error)")
        }
        var headers = try self.headers()
        let caller = try self.caller(gateway, headers: &headers)
        report.line("request", "\(method.rawValue) \(uri)")
        // The same canonical target the live gateway decides on (docs/forwarding.md).
        let target: RequestTarget
        do {
            target = try RequestTarget(
                uri: uri, hostField: headers.first(name: "host")?[...], settings: self.configuration.paths)
        } catch .malformed {
            throw UsageError("\(uri): not a request target (an http(s) URL or a path starting with \"/\")")
        } catch {
            report.refusal(error.error)
            return .refused
        }
        report.line(
            "target", "\(target.upstreamURI(strippingPrefix: nil))" + (target.host.map { " (host \($0.name))" } ?? ""))
        let peer = self.options.clientIP ?? "127.0.0.1"
        guard let peerAddress = try? SocketAddress(ipAddress: peer, port: 0) else {
            throw UsageError("--client-ip \(peer): not an IP address")
        }
        let connection = ClientConnectionInfo(
            peerIP: peer, peerIsTrustedProxy: self.configuration.trustedProxies.contains { $0.contains(peerAddress) },
            isTLS: uri.lowercased().hasPrefix("https://"))
        guard let decision = gateway.decide(method: method, target: target, headers: headers, connection: connection)
        else {
            report.line("decision", "undecided: it waits on a call that is not made offline")
            return .refused
        }
        return self.explain(decision, gateway: gateway, caller: caller, into: &report)
    }

    /// The request's headers: `--header`s, and the token of `--token`.
    private func headers() throws(UsageError) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for header in self.options.headers {
            guard let colon = header.firstIndex(of: ":"), HTTPToken.isValid(String(header[..<colon])) else {
                throw UsageError("--header \"\(header)\": expected \"Name: value\"")
            }
            headers.add(
                name: String(header[..<colon]),
                value: header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return headers
    }

    /// Puts the command line's caller where the live gateway would have it: `--token` in the
    /// first token source; `--claims` and `--no-verify` as a verification the cache holds;
    /// `--profile` as the auth service's answer. Says how the caller is known.
    private func caller(_ gateway: OfflineGateway, headers: inout HTTPHeaders) throws(UsageError) -> String? {
        let sources = self.configuration.tokens.sources
        var claims: JSONObject?
        var how: String?
        if let path = self.options.token {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw UsageError("--token \(path): cannot read the file")
            }
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            let header = Self.tokenHeader(token, sources: sources)
            headers.add(name: header.name, value: header.value)
            var bytes = token
            claims = bytes.withUTF8 { try? CompactJWS.parse(UnsafeRawBufferPointer($0)).payload }
            if !self.options.verify, let read = claims {
                guard gateway.trust(token, claims: read) != nil else {
                    throw UsageError("--no-verify needs tokens.issuers")
                }
                how = "token read without verification (--no-verify)"
            }
        }
        if let text = self.options.claims {
            guard TokenExtractor.extract(from: headers, sources: sources) == .none else {
                throw UsageError("give either --claims or a token, not both")
            }
            let given = try Self.object(text, option: "--claims")
            // A token no issuer signed, which the cache holds as verified with these claims.
            let token = "check." + Base64URL.encode(Array(JSONValue.object(given).jsonText.utf8)) + ".claims"
            guard gateway.trust(token, claims: given) != nil else { throw UsageError("--claims needs tokens.issuers") }
            let header = Self.tokenHeader(token, sources: sources)
            headers.add(name: header.name, value: header.value)
            claims = given
            how = "claims from --claims (not verified)"
        }
        // The profile the auth service would answer: `--profile`, else none at all (its fields
        // read as absent) — the auth service is not asked offline.
        let profile = try self.options.profile.map { text throws(UsageError) in
            try Self.object(text, option: "--profile")
        }
        let keys = gateway.keys
        if let claims, let subject = claims["sub"]?.stringValue, !keys.issuers.isEmpty {
            let index = claims["iss"]?.stringValue.flatMap { keys.issuerIndex(for: $0) } ?? 0
            gateway.remember(profile: profile ?? [:], issuer: keys.issuers[index].issuer, subject: subject)
        }
        return how
    }

    /// The report of `decision`: route, authentication, requirements, rate limits, identity
    /// headers, and the decision itself.
    private func explain(
        _ decision: AccessDecision, gateway: OfflineGateway, caller: String?, into report: inout RequestCheckReport
    ) -> Status {
        if let name = decision.routeName, let index = self.configuration.routes.firstIndex(where: { $0.name == name }) {
            let route = self.configuration.routes[index]
            report.line(
                "route",
                "routes[\(index)] \"\(route.name)\" → backend \"\(route.backend)\" (auth \(route.auth.rawValue))")
        } else {
            report.line("route", "none matches")
        }
        switch decision {
        case .allowed(let allowed):
            report.line("authentication", Self.authentication(allowed, caller: caller))
            let fields = IdentityFields(identity: allowed.identity, request: allowed.request)
            if allowed.identity != nil {
                report.requirements(RequirementCheck.explain(allowed.route.require, fields), route: allowed.route)
            } else {
                report.line("requirements", "not checked (anonymous)")
            }
            report.rateLimits(
                self.configuration.rateLimits.filter { $0.applies(to: allowed.route.name) }, fields: fields)
            report.identityHeaders(allowed.identityHeaders)
            if let exchange = gateway.notes.exchange {
                report.line(
                    "exchange",
                    "the caller's token would be exchanged at \(exchange.tokenEndpoint) (\(exchange.grant.rawValue)"
                        + (exchange.audience.isEmpty ? "" : ", audience \(exchange.audience.joined(separator: " "))")
                        + "); the backend gets the exchanged token, never the caller's (not contacted offline)")
            }
            if let assertion = gateway.notes.assertion, let signing = self.configuration.identityAssertion {
                let claims = JSONValue.object(assertion.claims).jsonText
                report.line(
                    "assertion",
                    "\(signing.header): sub \(assertion.subject), aud \(assertion.audience), auth \(assertion.authKind.rawValue)"
                        + (assertion.thumbprint.map { ", cnf.jkt \($0)" } ?? "") + ", claims \(claims)"
                        + " (signed with kid \(signing.keys.current.kid) at request time)")
            }
            report.line("decision", "allowed")
            return .allowed
        case .preflight(let response, _):
            report.line(
                "decision", response.status == .noContent ? "allowed (CORS preflight)" : "refused: CORS preflight")
            return response.status == .noContent ? .allowed : .refused
        case .denied(let response, let route):
            if let explanation = gateway.notes.requirements, let route {
                report.requirements(explanation, route: self.configuration.routes.first { $0.name == route }!)
            }
            guard let error = response.error else {
                if let location = response.headers.first(name: "Location") {
                    report.line("decision", "redirected: \(response.status.code) to \(location)")
                } else {
                    report.line("decision", "refused: \(response.status.code)")
                }
                return .refused
            }
            let route = route.flatMap { name in self.configuration.routes.first { $0.name == name } }
            if error == .signInUnavailable, route?.signIn == true {
                // Sign-in was started: its URL needs the provider's discovery document.
                report.line(
                    "decision",
                    "redirected: 302 to sign in (browserSignIn; the provider's authorization_endpoint comes from"
                        + " discovery, not fetched offline)")
                return .refused
            }
            report.refusal(error)
            if let missing = Self.offlineGap(error) { report.line("offline", missing) }
            return .refused
        }
    }

    private static func authentication(_ allowed: AllowedRequest, caller: String?) -> String {
        guard let identity = allowed.identity else {
            return allowed.route.auth == .none ? "none needed (auth none)" : "anonymous (no credential)"
        }
        switch identity.kind {
        case .apiKey: return "API key \"\(identity.apiKeyID ?? "")\""
        case .jwt: return caller ?? "token verified (issuer \(identity.issuer))"
        case .introspection: return "token introspected"
        case .session: return "browser session"
        }
    }

    /// What a refusal needed that `check` does not contact.
    private static func offlineGap(_ error: GatewayError) -> String? {
        switch error {
        case .authServiceUnavailable:
            return "the auth service would be called (a refresh, a profile); check contacts nothing: give --profile"
        case .introspectionUnavailable:
            return "the introspection endpoint would be asked; check contacts nothing"
        case .keysUnavailable, .tokenRejected(.unknownKey):
            return "the issuer's keys come from a JWKS, not fetched offline: try --no-verify"
        default:
            return nil
        }
    }
}
