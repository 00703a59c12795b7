import Foundation
import NIOCore
import NIOHTTP1

/// `auth-gateway check --config F --request "METHOD URL"` (docs/policies.md, "check --request"):
/// decides one request offline and explains the decision.
///
/// No second evaluator: the route comes from the proxy's `RouteTable`, an API key from the
/// `APIKeyAuthentication` step, a token from `TokenVerifier` over the configured static keys,
/// the requirement from `RequirementCheck.explain` (the very walk that decides), rate-limit keys
/// and identity headers from `IdentityFields` and `RequestPlanner.identityHeaders`. Nothing is
/// contacted: keys that only a `jwksURL` or discovery would give are not fetched (`--no-verify`
/// reads a token's claims instead).
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
        var headers = HTTPHeaders()
        for header in self.options.headers {
            guard let colon = header.firstIndex(of: ":"), HTTPToken.isValid(String(header[..<colon])) else {
                throw UsageError("--header \"\(header)\": expected \"Name: value\"")
            }
            headers.add(
                name: String(header[..<colon]),
                value: header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        if let path = self.options.token {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw UsageError("--token \(path): cannot read the file")
            }
            let token = Self.tokenHeader(
                text.trimmingCharacters(in: .whitespacesAndNewlines), sources: self.configuration.tokens.sources)
            headers.add(name: token.name, value: token.value)
        }
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
        let backendNames = self.configuration.backends.map(\.name)
        let routes = RouteTable(self.configuration.routes, backendNames: backendNames)
        if LenientRoutes(self.configuration.routes, backendNames: backendNames).namesAnotherRoute(
            target, method: method.rawValue, in: routes)
        {
            report.refusal(TargetRefusal.ambiguousPath(.lenientVariant).error)
            return .refused
        }
        guard let resolved = routes.match(host: target.host?.name, path: target.path, method: method.rawValue) else {
            report.line("route", "none matches")
            report.refusal(.routeNotFound)
            return .refused
        }
        let route = resolved.configuration
        let index = self.configuration.routes.firstIndex { $0.name == route.name } ?? 0
        report.line(
            "route", "routes[\(index)] \"\(route.name)\" → backend \"\(route.backend)\" (auth \(route.auth.rawValue))")
        let peer = self.options.clientIP ?? "127.0.0.1"
        guard let peerAddress = try? SocketAddress(ipAddress: peer, port: 0) else {
            throw UsageError("--client-ip \(peer): not an IP address")
        }
        let trustedProxies = self.configuration.trustedProxies
        // The static keys, as the key store starts with them; nothing is fetched.
        let keys = KeySnapshot(generation: 1, issuers: KeySnapshot.issuers(from: self.configuration.tokens))
        let request = AuthRequest(
            headers: headers, route: route, keys: keys, now: self.now,
            connection: ClientConnectionInfo(
                peerIP: peer, peerIsTrustedProxy: trustedProxies.contains { $0.contains(peerAddress) },
                isTLS: uri.lowercased().hasPrefix("https://")),
            trustedProxies: trustedProxies, method: method, target: target)

        let identity: Identity?
        switch try self.authenticate(request) {
        case .identity(var found, let how):
            if let profile = self.options.profile {
                found.profile = try Self.object(profile, option: "--profile")
            }
            report.line("authentication", how)
            identity = found
        case .anonymous(let why):
            report.line("authentication", why)
            identity = nil
        case .refused(let error, let why):
            report.line("authentication", why)
            report.refusal(error)
            return .refused
        }
        let fields = IdentityFields(identity: identity, request: request)
        if identity != nil {
            let explanation = RequirementCheck.explain(route.require, fields)
            report.requirements(explanation, route: route)
            if case .fails(let clause) = explanation.verdict {
                report.refusal(.forbidden(clause))
                return .refused
            }
        } else {
            report.line("requirements", "not checked (anonymous)")
        }
        report.rateLimits(self.configuration.rateLimits.filter { $0.applies(to: route.name) }, fields: fields)
        let identityHeaders =
            identity == nil
            ? [] : RequestPlanner.identityHeaders(fields, policy: ForwardingPolicy(configuration: self.configuration))
        report.identityHeaders(identityHeaders)
        report.line("decision", "allowed")
        return .allowed
    }
}
