import AuthGateway
import Crypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UnixSignals

/// `auth-gateway demo`: the sample auth service, the echo backend and the gateway, all on
/// loopback, plus a walk-through: a page to sign in to in a browser, and curl commands
/// (docs/operations.md, docs/browser-sign-in.md).
public struct DemoRunner: Sendable {
    public var gatewayPort: Int
    public var authServicePort: Int
    public var backendPort: Int
    public var tokenLifetimeSeconds: Int
    /// Run only the auth service and the backend (for `serve --config config/gateway.json`).
    public var servicesOnly: Bool

    public init(
        gatewayPort: Int = 8080, authServicePort: Int = 9000, backendPort: Int = 9100, tokenLifetimeSeconds: Int = 30,
        servicesOnly: Bool = false
    ) {
        self.gatewayPort = gatewayPort
        self.authServicePort = authServicePort
        self.backendPort = backendPort
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        self.servicesOnly = servicesOnly
    }

    public func run() async throws {
        let logger = Logger(label: "auth-gateway.demo")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let authService = try DemoAuthService(tokenLifetimeSeconds: self.tokenLifetimeSeconds)
        try await authService.start(group: group, port: self.authServicePort)
        let backend = try await EchoBackend.start(
            group: group, port: self.backendPort, assertions: DemoAssertionKeys.shared.check)
        if self.servicesOnly {
            // A gateway started separately on `gatewayPort` signs browsers in here too
            // (scripts/bench/session.sh).
            authService.register(Self.gatewayClient(publicBaseURL: Self.publicBaseURL(gatewayPort: self.gatewayPort)))
            FileHandle.standardOutput.write(
                Data(
                    """
                    demo services running (Ctrl-C to stop):
                      auth service  \(authService.baseURL)
                      echo backend  \(backend.baseURL)
                    start the gateway with: swift run auth-gateway serve --config config/gateway.json

                    """.utf8))
            let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
            for await _ in signals { break }
            await authService.stop()
            await backend.close()
            try? await group.shutdownGracefully()
            return
        }
        let configuration = try Self.configuration(
            gatewayPort: self.gatewayPort, authService: authService, backend: backend)
        authService.register(Self.gatewayClient(publicBaseURL: Self.publicBaseURL(gatewayPort: self.gatewayPort)))
        let application = try await GatewayApplication.make(configuration: configuration, logger: logger)
        let serviceGroup = ServiceGroup(
            services: [
                DemoService(
                    application: application, authService: authService, backend: backend, group: group,
                    gatewayPort: self.gatewayPort),
                KeyRefreshService(application: application),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        try await serviceGroup.run()
    }

    /// The gateway configuration the demo runs with (the same shape as config/gateway.json).
    static func configuration(
        gatewayPort: Int, authService: DemoAuthService, backend: EchoBackend, publicBaseURL: String? = nil
    ) throws -> GatewayConfiguration {
        try ConfigurationLoader(environment: [:]).load(
            text: Self.configurationText(
                gatewayPort: gatewayPort, authService: authService, backend: backend, publicBaseURL: publicBaseURL),
            baseDirectory: FileManager.default.currentDirectoryPath
        )
    }

    /// Where the browser walk-through starts: a route with `signIn: true`, and where a browser
    /// lands after signing out (back at the login form, since the provider's session ended too).
    public static let browserPath = "/app/"

    /// The live page (docs/streams.md, "The demo"): a WebSocket tunnel through the gateway,
    /// let in by the session cookie, closed with 1008 when the session ends.
    public static let livePath = "/live/"

    /// The origin browsers use for the gateway: `localhost`, while the demo provider is reached
    /// as `127.0.0.1`, so the two keep their cookies apart (a browser scopes cookies by host,
    /// not by port).
    public static func publicBaseURL(gatewayPort: Int) -> String {
        "http://localhost:\(gatewayPort)"
    }

    /// The gateway's registration at the demo provider for `publicBaseURL`
    /// (docs/browser-sign-in.md, "Registering the gateway at the provider").
    public static func gatewayClient(publicBaseURL: String) -> DemoOIDCClient {
        .gateway(publicBaseURL: publicBaseURL, postSignOutPath: Self.browserPath)
    }

    /// The demo's API key for machine clients (docs/policies.md, "API keys"): fixed, so the
    /// walk-through can print it; the configuration holds only its SHA-256.
    public static let apiKey = "agk_demo-ci-bot-0123456789abcdefghijklmnopqrstu"

    /// The demo's one policy: the deploy route lets in a caller with the `deploy` scope (the
    /// API key) or a super admin (admin@example.com's profile), and never `mallory`.
    public static let deployPolicy =
        #"{ "anyOf": [ { "claims.scope": "deploy" }, { "profile.super_admin": true } ], "not": { "claims.sub": "mallory" } }"#

    /// The demo's configuration as JSON (the tests run the demo's walkthrough against it).
    /// `publicBaseURL`: browser sign-in's, when not `publicBaseURL(gatewayPort:)`; a gateway
    /// on port 0 learns its port only once it listens, so until then its configuration names
    /// port 1 (a placeholder: a port must be named) and is reloaded with the real one.
    ///
    /// The auth service's issuer is discovery-based, because browser sign-in takes its
    /// endpoints from the discovery document; its keys come from the document's `jwks_uri`.
    public static func configurationText(
        gatewayPort: Int, authService: DemoAuthService, backend: EchoBackend, publicBaseURL: String? = nil
    ) -> String {
        """
        {
          "listener": { "host": "127.0.0.1", "port": \(gatewayPort) },
          "eventLoopThreads": 1,
          "tokens": {
            "issuers": [ {
              "issuer": "\(authService.issuer)",
              "discovery": true,
              "audiences": ["\(authService.audience)"],
              "leewaySeconds": 0,
              "requiredClaims": ["sub"]
            } ],
            "apiKeys": { "keys": [ {
              "id": "demo-ci-bot",
              "sha256": "\(SHA256.hash(data: Array(Self.apiKey.utf8)).map { String(format: "%02x", $0) }.joined())",
              "claims": { "sub": "ci-bot", "scope": "deploy read", "email": "ci-bot@example.com" }
            } ] }
          },
          "authService": {
            "url": "\(authService.baseURL)",
            "refresh": { "protocol": "json", "path": "/v1/login" },
            "profile": { "path": "/v1/user", "authorization": "raw" }
          },
          "browserSignIn": {
            "issuer": "\(authService.issuer)",
            "clientId": "\(DemoOIDCClient.gatewayClientID)",
            "clientSecret": "\(DemoOIDCClient.gatewaySecret)",
            "publicBaseURL": "\(publicBaseURL ?? Self.publicBaseURL(gatewayPort: gatewayPort == 0 ? 1 : gatewayPort))",
            "scopes": ["openid", "profile", "email"],
            "postSignOutPath": "\(Self.browserPath)"
          },
          "identityAssertion": {
            "issuer": "\(DemoAssertionKeys.issuer)",
            "keysFile": "\(DemoAssertionKeys.shared.keysFile)"
          },
          "backends": { "echo": { "urls": ["\(backend.baseURL)"] } },
          "routes": [
            { "name": "public", "pathPrefix": "/public/", "backend": "echo", "auth": "none" },
            { "name": "admin", "pathPrefix": "/admin/", "backend": "echo", "require": { "profile.super_admin": true } },
            { "name": "app", "pathPrefix": "\(Self.browserPath)", "backend": "echo", "signIn": true },
            { "name": "deploy", "pathPrefix": "/deploy/", "backend": "echo", "require": \(Self.deployPolicy) },
            { "name": "live", "pathPrefix": "\(Self.livePath)", "backend": "echo", "signIn": true },
            { "name": "api", "pathPrefix": "/", "backend": "echo",
              "assertion": { "audience": "echo", "claims": { "email": "claims.email" } } }
          ],
          "identityHeaders": {
            "X-User-Id": "profile.user_id",
            "X-User-Name": "profile.user_name",
            "X-User-Email": "claims.email",
            "X-User-Subject": "claims.sub",
            "X-User-Super-Admin": "profile.super_admin"
          },
          "logging": { "level": "notice", "accessLog": false }
        }
        """
    }

    /// What the demo prints once it runs. `gateway`: its address for curl; `publicBaseURL`:
    /// the origin browsers use.
    public static func walkthrough(gateway: String, publicBaseURL: String, authService: String, lifetime: Int) -> String
    {
        """

        auth-gateway demo is running (Ctrl-C to stop):
          gateway       \(gateway)
          auth service  \(authService)   (RainMaker-style: POST /v1/login, GET /v1/user, JWKS;
                        and an OpenID Provider: discovery, login form, code + PKCE, end-session)
          echo backend  behind the gateway; it answers with the request it received

        In a browser, open \(publicBaseURL)\(Self.browserPath)
           and sign in as alice@example.com / alice-password on the provider's login form: you land
           back on the page, where the echo backend shows the identity headers the gateway added
           (X-User-*) and the Authorization: Bearer token it sent in place of your session cookie.
           Sign out at \(publicBaseURL)/.gateway/sign-out (the next visit asks you to sign in again).
           A live tunnel: open \(publicBaseURL)\(Self.livePath) (signed in): a WebSocket through the gateway
           ticks every second; sign out in another tab and the gateway closes it at once (code 1008).

        With curl:

        1. Log in as alice and keep the tokens (access tokens live \(lifetime) s):
           LOGIN=$(curl -s \(authService)/v1/login -H 'Content-Type: application/json' \\
                     -d '{"user_name":"alice@example.com","password":"alice-password"}')
           ACCESS=$(printf '%s' "$LOGIN" | sed -E 's/.*"accesstoken":"([^"]+)".*/\\1/')
           REFRESH=$(printf '%s' "$LOGIN" | sed -E 's/.*"refreshtoken":"([^"]+)".*/\\1/')

        2. An authorized call: forwarded, with X-User-* identity headers added by the gateway, and
           X-Gateway-Assertion, a JWT the gateway signed for the backend: the echo backend shows its
           claims ("assertion"), verified with the key the gateway publishes (docs/assertions.md):
           curl -i \(gateway)/api/orders -H "Authorization: Bearer $ACCESS"
           curl -s \(gateway)/.gateway/jwks.json

        3. The RainMaker header form works too, and client-sent identity headers are stripped:
           curl -i \(gateway)/api/orders -H "Authorization: $ACCESS" -H 'X-User-Id: forged'

        4. alice is not a super admin (403); admin@example.com / admin-password is:
           curl -i \(gateway)/admin/users -H "Authorization: Bearer $ACCESS"

        5. Wait \(lifetime + 1) s for the token to expire, then send the refresh token along: the gateway
           refreshes the session transparently and returns the new token in X-Access-Token:
           sleep \(lifetime + 1); curl -i \(gateway)/api/orders -H "Authorization: Bearer $ACCESS" -H "X-Refresh-Token: $REFRESH"

        6. Without the refresh token the expired token is refused (401, WWW-Authenticate):
           curl -i \(gateway)/api/orders -H "Authorization: Bearer $ACCESS"

        7. A tampered signature and a missing token are refused; the public route needs no token:
           curl -i \(gateway)/api/orders -H "Authorization: Bearer ${ACCESS%?????}AAAAA"
           curl -i \(gateway)/api/orders
           curl -i \(gateway)/public/hello

        8. Health: curl -s \(gateway)/healthz ; curl -s \(gateway)/readyz

        API key (a machine client: id demo-ci-bot, claims sub=ci-bot, scope "deploy read"):
           curl -i \(gateway)/deploy/run -H 'X-API-Key: \(Self.apiKey)'
           curl -i \(gateway)/deploy/run -H 'X-API-Key: agk_wrong'            # 401 apikey.invalid
           curl -i \(gateway)/deploy/run -H "Authorization: Bearer $ACCESS"   # 403: no deploy scope

        9. A sender-constrained (DPoP) token works only with a fresh proof by its key
           (scripts/dpop-proof.py, Python joserfc: pip install joserfc):
           JKT=$(scripts/dpop-proof.py --key /tmp/demo-client.jwk --jkt)
           BOUND=$(curl -s \(authService)/v1/login -H 'Content-Type: application/json' \\
                     -d '{"user_name":"alice@example.com","password":"alice-password","dpop_jkt":"'"$JKT"'"}' \\
                   | sed -E 's/.*"accesstoken":"([^"]+)".*/\\1/')
           curl -i \(gateway)/api/orders -H "Authorization: DPoP $BOUND" \\
                -H "DPoP: $(scripts/dpop-proof.py --key /tmp/demo-client.jwk GET \(gateway)/api/orders "$BOUND")"
           curl -i \(gateway)/api/orders -H "Authorization: Bearer $BOUND"    # 401: the proof is missing

        """
    }
}

/// Runs the demo until Ctrl-C, then stops everything it started.
private struct DemoService: Service {
    let application: GatewayApplication
    let authService: DemoAuthService
    let backend: EchoBackend
    let group: MultiThreadedEventLoopGroup
    /// The configured port (0: a free one, learnt once the gateway listens).
    let gatewayPort: Int

    func run() async throws {
        try await self.application.start()
        let port = self.application.mainAddress?.port ?? 0
        let publicBaseURL = DemoRunner.publicBaseURL(gatewayPort: port)
        if port != self.gatewayPort {
            // Browser sign-in must name the real port: in its configuration and at the provider.
            self.authService.register(DemoRunner.gatewayClient(publicBaseURL: publicBaseURL))
            self.application.reload(
                try DemoRunner.configuration(
                    gatewayPort: self.gatewayPort, authService: self.authService, backend: self.backend,
                    publicBaseURL: publicBaseURL))
        }
        // Wait for the discovery and key fetch so the first curl works.
        for _ in 0..<100 where !self.application.isReady {
            try? await Task.sleep(for: .milliseconds(50))
        }
        FileHandle.standardOutput.write(
            Data(
                DemoRunner.walkthrough(
                    gateway: "http://127.0.0.1:\(port)", publicBaseURL: publicBaseURL,
                    authService: self.authService.baseURL, lifetime: self.authService.tokenLifetimeSeconds
                ).utf8))
        try? await gracefulShutdown()
        await self.application.drain()
        await self.application.shutdown()
        await self.authService.stop()
        await self.backend.close()
        try? await self.group.shutdownGracefully()
    }
}
