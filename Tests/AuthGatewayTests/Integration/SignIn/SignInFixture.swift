import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

/// A gateway with browser sign-in in front of the demo's OpenID Provider and an echo backend,
/// and a scripted browser (a cookie jar that follows nothing by itself): the protocol tests of
/// docs/browser-sign-in.md. The real browser runs the same flows in `RealBrowserTests`.
struct SignInFixture {
    let gateway: GatewayFixture
    let provider: DemoAuthService
    let publicBaseURL: String
    /// Whether `stop()` stops the provider too (the first of several instances owns it).
    var ownsProvider = true

    /// `scheme`: of the public base URL (`https` on localhost: the `__Host-` cookies with
    /// `Secure`; the scripted browser still talks plain HTTP to the gateway's listener).
    static func start(
        tokenLifetimeSeconds: Int = 300, scheme: String = "http",
        configure: @escaping (inout JSONObject) -> Void = { _ in }
    ) async throws -> SignInFixture {
        try await Self.start(
            instances: 1, tokenLifetimeSeconds: tokenLifetimeSeconds, scheme: scheme, configure: configure)[0]
    }

    /// `instances` gateways in front of one provider, sharing one clock and one public base URL
    /// (the first one's: as behind a load balancer, every instance answers for the same
    /// origin), with `sharedState` (its `${…}` from `environment`) when given.
    static func start(
        instances: Int, tokenLifetimeSeconds: Int = 300, scheme: String = "http", sharedState: JSONValue? = nil,
        environment: [String: String] = [:], configure: @escaping (inout JSONObject) -> Void = { _ in }
    ) async throws -> [SignInFixture] {
        let provider = try DemoAuthService(tokenLifetimeSeconds: tokenLifetimeSeconds)
        try await provider.start(group: TestGroup.shared)
        var gateways: [GatewayFixture] = []
        do {
            func configuration(_ publicBaseURL: String) -> (inout JSONObject) -> Void {
                { document in
                    document["tokens"] = [
                        "issuers": [
                            [
                                "issuer": .string(provider.issuer), "discovery": true, "audiences": ["demo-api"],
                                "leewaySeconds": 0,
                            ]
                        ]
                    ]
                    // Discovery and keys are fetched with the auth service's timeout: the
                    // product's 3 s is too short for the provider on a loaded machine.
                    document["authService"] = [
                        "discoveryIssuer": .string(provider.issuer), "timeoutMilliseconds": 20000,
                    ]
                    document["browserSignIn"] = [
                        "issuer": .string(provider.issuer), "clientId": "gateway", "clientSecret": "gateway-secret",
                        "publicBaseURL": .string(publicBaseURL), "scopes": ["openid", "profile", "email"],
                    ]
                    document["identityHeaders"] = ["X-User-Subject": "claims.sub", "X-User-Email": "claims.email"]
                    document["routes"] = [
                        ["name": "api", "pathPrefix": "/api/", "backend": "api", "auth": "required"],
                        ["name": "open", "pathPrefix": "/open/", "backend": "api", "auth": "optional", "signIn": true],
                        ["name": "app", "pathPrefix": "/", "backend": "api", "auth": "required", "signIn": true],
                    ]
                    if let sharedState { document["sharedState"] = sharedState }
                    configure(&document)
                }
            }
            // The public base names the first gateway's port, known once it listens: start with
            // a placeholder, then reload with the real one (and register it at the provider).
            // One clock for all: a test moving time moves the provider's token clocks too.
            let clock = TestClock()
            for _ in 0..<instances {
                gateways.append(
                    try await GatewayFixture.start(
                        clock: clock, environment: environment, configure: configuration("http://localhost:1")))
            }
            provider.useClock(clock.function)
            let base = "\(scheme)://localhost:\(gateways[0].port)"
            provider.register(.gateway(publicBaseURL: base))
            for gateway in gateways { try gateway.reload(configuration(base)) }
            var fixtures: [SignInFixture] = []
            for (index, gateway) in gateways.enumerated() {
                let fixture = SignInFixture(
                    gateway: gateway, provider: provider, publicBaseURL: base, ownsProvider: index == 0)
                let applied = await eventually {
                    let start = try? await fixture.gateway.send(TestRequest(.GET, "/.gateway/sign-in"))
                    return start?.header("location")?.contains(FormEncoding.encode(base + "/.gateway/callback")) == true
                }
                guard applied else { throw AuthStepFailure("the reloaded public base never applied") }
                fixtures.append(fixture)
            }
            return fixtures
        } catch {
            for gateway in gateways { await gateway.stop() }
            await provider.stop()
            throw error
        }
    }

    /// The admin listener's `/metrics`.
    func metrics() async throws -> String {
        let connection = try await TestConnection.connect(port: self.gateway.adminPort)
        return try await withCleanup({ await connection.close() }) { () async throws in
            try await connection.send(TestRequest(.GET, "/metrics")).text
        }
    }

    func stop() async {
        await self.gateway.stop()
        if self.ownsProvider { await self.provider.stop() }
    }

    /// Signs `browser` in as `user` starting from a navigation to `path`; returns the callback's
    /// response (a redirect to the return path, with the session cookie).
    func signIn(
        _ browser: inout ScriptedBrowser, to path: String, as user: String = "alice@example.com",
        expecting status: Int = 302
    ) async throws -> TestResponse {
        let navigation = try await browser.navigate(self.gateway, path)
        #expect(navigation.status == 302)
        let authorize = try #require(navigation.header("location"))
        #expect(authorize.hasPrefix(self.provider.authorizationEndpoint + "?"))
        let callback = try #require(self.provider.signIn(authorizationURL: authorize, userName: user))
        let callbackPath = try #require(
            callback.range(of: "/.gateway/callback").map { String(callback[$0.lowerBound...]) })
        let response = try await browser.get(self.gateway, callbackPath)
        #expect(response.status == status, "the callback: \(response.status) \(response.text)")
        return response
    }
}

/// A browser as far as cookies go: it keeps what `Set-Cookie` gives and sends it back.
struct ScriptedBrowser {
    var cookies: [String: String] = [:]
    var acceptsHTML = true

    var cookieHeader: [(String, String)] {
        self.cookies.isEmpty
            ? []
            : [
                (
                    "Cookie",
                    self.cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
                )
            ]
    }

    mutating func absorb(_ response: TestResponse) {
        for value in response.headers["set-cookie"] {
            let pair = value.split(separator: ";")[0]
            guard let equals = pair.firstIndex(of: "=") else { continue }
            let name = String(pair[..<equals])
            let content = String(pair[pair.index(after: equals)...])
            if value.contains("Max-Age=0") || content.isEmpty {
                self.cookies[name] = nil
            } else {
                self.cookies[name] = content
            }
        }
    }

    /// A top-level navigation, as a browser sends it.
    mutating func navigate(_ gateway: some RequestSender, _ path: String) async throws -> TestResponse {
        let headers =
            [
                ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"), ("Sec-Fetch-Mode", "navigate"),
                ("Sec-Fetch-Site", "none"),
            ]
            + self.cookieHeader
        let response = try await gateway.send(TestRequest(.GET, path, headers: headers))
        self.absorb(response)
        return response
    }

    mutating func get(
        _ gateway: some RequestSender, _ path: String, headers: [(String, String)] = []
    ) async throws -> TestResponse {
        let response = try await gateway.send(TestRequest(.GET, path, headers: headers + self.cookieHeader))
        self.absorb(response)
        return response
    }

    mutating func send(_ gateway: some RequestSender, _ request: TestRequest) async throws -> TestResponse {
        var request = request
        request.headers += self.cookieHeader
        let response = try await gateway.send(request)
        self.absorb(response)
        return response
    }
}

/// Where a scripted browser sends its requests: an in-process gateway or a `serve` process.
protocol RequestSender {
    func send(_ request: TestRequest) async throws -> TestResponse
}

extension GatewayFixture: RequestSender {}

/// A gateway listening on `port` (a `serve` process): one request per fresh connection.
struct GatewayAtPort: RequestSender {
    let port: Int

    func send(_ request: TestRequest) async throws -> TestResponse {
        let connection = try await TestConnection.connect(port: self.port)
        return try await withCleanup({ await connection.close() }) { () async throws in
            try await connection.send(request)
        }
    }
}
