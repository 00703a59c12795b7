import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// What the authentication steps' unit tests share: a configuration with the test issuer
/// (`TestKeys`), its keys, the verification step on an embedded loop, and requests and
/// identities made from values — no sockets.
struct AuthStepFixture {
    let configuration: GatewayConfiguration
    let keyStore: KeyStore
    let keys: KeySnapshot
    let eventLoop = EmbeddedEventLoop()
    let now = Date().timeIntervalSince1970

    /// `extra`: more top-level members of the configuration (`"authService": …`); `tokens`:
    /// more members of `tokens`; `jwksURL`: the issuer's keys come from there instead of the
    /// test key; `routes`: the `routes` array.
    init(
        extra: String = "", tokens: String = "", jwksURL: String? = nil,
        routes: String = #"[{"name":"default","pathPrefix":"/","backend":"api"}]"#
    ) throws {
        let keys =
            if let jwksURL { #""jwksURL":"\#(jwksURL)""# } else {
                #""keys":[{"kid":"test-rs","algorithm":"RS256","publicKeyPEM":\#(JSONValue.string(TestKeys.rsa.publicKeyPEM).jsonText)}]"#
            }
        let text = """
            {"listener":{},"backends":{"api":{"urls":["http://127.0.0.1:1"]}},
             "tokens":{"issuers":[{"issuer":"\(TestKeys.issuer)","audiences":["\(TestKeys.audience)"],"leewaySeconds":0,
               \(keys)}]
               \(tokens.isEmpty ? "" : ", " + tokens)},
             \(extra.isEmpty ? "" : extra + ",")
             "routes":\(routes)}
            """
        self.configuration = try ConfigurationLoader(environment: [:]).load(text: text, baseDirectory: "/")
        self.keyStore = KeyStore(
            configuration: self.configuration.tokens, metrics: ProcessMetrics(), clock: { 0 }, publish: { _ in })
        self.keys = self.keyStore.snapshot
    }

    func verification(cache: VerifiedTokenCache = VerifiedTokenCache(capacity: 16)) -> JWTVerification {
        JWTVerification(
            cache: cache, memo: RecentTokens(), keyStore: self.keyStore, eventLoop: self.eventLoop,
            clients: { _ in nil })
    }

    /// What a worker builds its steps from, offline (no client for any URL): the fixture's
    /// configuration as `serve` would snapshot it, on the fixture's loop; `clock` is the
    /// process's (a refreshed token is judged by it).
    func context(clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) throws -> StepContext {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let shared = try GatewayComposition.makeShared(
            self.configuration, clock: clock, logger: logger, connector: SocketConnector(),
            publisher: KeyPublisher(), group: nil)
        let parts = GatewayComposition.reloadableParts(for: self.configuration, keeping: nil, shared: shared)
        let snapshot = GatewayComposition.makeSnapshot(
            self.configuration, generation: 1, shared: shared, parts: parts,
            backendTLS: self.configuration.backends.map { _ in nil })
        return StepContext(
            eventLoop: self.eventLoop, configuration: self.configuration, features: snapshot.authentication,
            state: shared.authentication, metrics: WorkerMetrics(), clients: { _ in nil },
            endpoints: AuthServiceEndpoints(), introspectionEndpoint: { nil }, logger: logger, clock: clock)
    }

    /// The registered steps (`AuthenticationSteps`), as a worker builds them, offline.
    func pipeline() throws -> RequestAuthenticator { RequestAuthenticator(try self.context()) }

    /// A fresh state for `request`, as the pipeline starts one.
    func state(_ credential: Credential = .none, for request: AuthRequest) -> AuthState {
        AuthState(credential: credential, keys: request.keys)
    }

    func route(
        auth: RouteConfiguration.AuthMode = .required, require: Requirement = .empty,
        dpop: RouteConfiguration.DPoPMode = .allowed
    ) -> RouteConfiguration {
        var route = RouteConfiguration(
            name: "r", host: nil, pathMatch: .prefix("/"), methods: nil, backend: "api", auth: auth, require: require,
            stripPathPrefix: false, forwardAccessToken: true)
        route.dpop = dpop
        return route
    }

    /// A `require` value as the loader reads it for the first route (paths `routes[0].require…`).
    static func requirement(_ value: JSONValue) throws -> Requirement {
        try Requirement(parsing: value, path: "routes[0].require")
    }

    func request(
        _ headers: [(String, String)], route: RouteConfiguration? = nil, isTLS: Bool = false,
        peer: String = "192.0.2.1",
        trustedProxies: [CIDR] = []
    ) -> AuthRequest {
        let trusted =
            (try? SocketAddress(ipAddress: peer, port: 0)).map { address in
                trustedProxies.contains { $0.contains(address) }
            } ?? false
        return AuthRequest(
            headers: HTTPHeaders(headers), route: route ?? self.route(), keys: self.keys, now: self.now,
            connection: ClientConnectionInfo(peerIP: peer, peerIsTrustedProxy: trusted, isTLS: isTLS),
            trustedProxies: trustedProxies)
    }

    func verified(_ token: String) throws -> VerifiedToken {
        guard case .success(let verified) = VerifiedTokenCache(capacity: 4).verify(token[...], keys: self.keys) else {
            throw AuthStepFailure("the test token must verify")
        }
        return verified
    }

    func bearer(_ token: String, dpopScheme: Bool = false) -> ExtractedToken {
        ExtractedToken(
            value: token[...], location: .header(name: "Authorization", bearer: true), dpopScheme: dpopScheme)
    }

    func identity(_ token: String, dpopScheme: Bool = false) throws -> Identity {
        Identity(
            token: try self.verified(token), accessToken: self.bearer(token, dpopScheme: dpopScheme),
            issuer: TestKeys.issuer)
    }
}

struct AuthStepFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
