import Foundation
import ServiceLifecycle
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// No description of a configuration, its loader or a service prints a secret
/// (docs/operations.md, "What is never logged"): `String(describing:)` (what
/// swift-service-lifecycle logs for every service at `debug`), `String(reflecting:)` and `dump`
/// of each, with every secret-bearing field set from the environment.
@Suite("Secrets are redacted in descriptions and dumps", .awaitsCleanups)
struct RedactionTests {
    static let stateKey = (0..<32).map { UInt8(($0 * 37 + 11) % 256) }
    static let apiKey = APIKeyEntry.new(id: "redaction-bot")
    static let environment = [
        "UNRELATED_SECRET": "unrelated-d41d8cd98f00b204",
        "REFRESH_SECRET": "refresh-secret-6f1ed002ab",
        "INTROSPECTION_SECRET": "introspection-secret-9e107d9d",
        "SIGNIN_SECRET": "signin-secret-e4d909c290d0",
        "TEMPLATE_SECRET": "template-secret-45c48cce2e2d",
        "DATABASE_PASSWORD": "database-password-1679091c5a",
        "STATE_KEY": Data(Self.stateKey).base64EncodedString(),
    ]

    /// The texts that must never appear: each variable's value and the unrelated one's name,
    /// the key's bytes as `[UInt8]` prints them, the API key and its digest.
    static let secrets: [String] =
        Self.environment.values.map { $0 } + [
            "UNRELATED_SECRET", "\(Self.stateKey)", Self.apiKey.key, "\(Self.apiKey.entry.sha256)",
            Self.apiKey.entry.sha256.map { String(format: "%02x", $0) }.joined(),
        ]

    static func document(refresh: JSONObject) -> JSONObject {
        var document = GatewayFixture.baseConfiguration(backendURL: "http://127.0.0.1:9")
        document.set(
            "tokens.introspection",
            [
                "url": "http://127.0.0.1:9/introspect", "clientId": "gateway",
                "clientSecret": "${INTROSPECTION_SECRET}", "clientAuthentication": "form",
            ])
        document.set("tokens.apiKeys", ["keys": [Self.apiKey.entry.json]])
        var issuers = document["tokens"]?["issuers"]?.arrayValue ?? []
        issuers.append(["issuer": "http://127.0.0.1:9/idp", "discovery": true])
        document.set("tokens.issuers", .array(issuers))
        document["authService"] = ["url": "http://127.0.0.1:9", "refresh": .object(refresh)]
        document["browserSignIn"] = [
            "issuer": "http://127.0.0.1:9/idp", "clientId": "gateway", "clientSecret": "${SIGNIN_SECRET}",
            "publicBaseURL": "http://localhost:8080",
        ]
        document["sharedState"] = [
            "postgres": ["url": "postgres://gateway:${DATABASE_PASSWORD}@127.0.0.1:5432/gateway", "tls": "disable"],
            "encryptionKeyBase64": "${STATE_KEY}",
        ]
        return document
    }

    static let oauth2Refresh: JSONObject = [
        "protocol": "oauth2", "path": "/token", "clientId": "gateway", "clientSecret": "${REFRESH_SECRET}",
    ]
    static let jsonRefresh: JSONObject = [
        "protocol": "json", "path": "/v1/login",
        "jsonBody": ["refreshtoken": "{refreshToken}", "app_secret": "${TEMPLATE_SECRET}"],
    ]

    static func load(refresh: JSONObject) throws -> (ConfigurationLoader, GatewayConfiguration) {
        let loader = ConfigurationLoader(environment: Self.environment)
        let text = JSONValue.object(Self.document(refresh: refresh)).jsonText
        return (loader, try loader.load(text: text, baseDirectory: "/"))
    }

    /// What a log line could hold of `value`.
    static func texts(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), dumped]
    }

    static func expectNothingSecret(in value: Any, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for text in Self.texts(value) {
            let found = Self.secrets.filter { text.contains($0) }
            #expect(found.count == 0, "\(name) prints a secret", sourceLocation: sourceLocation)
        }
    }

    @Test("the loader, the configuration and every section holding a secret print none")
    func configurations() throws {
        let (loader, configuration) = try Self.load(refresh: Self.oauth2Refresh)
        // The secrets are in the configuration: the introspection call carries its own.
        let introspection = try #require(configuration.tokens.introspection)
        let call = IntrospectionAnswer.request(for: "t", configuration: introspection)
        #expect(call.body.map { String(buffer: $0) }?.contains("client_secret=introspection-secret-9e107d9d") == true)

        Self.expectNothingSecret(in: loader, "the loader")
        Self.expectNothingSecret(in: configuration, "the configuration")
        Self.expectNothingSecret(in: configuration.tokens, "tokens")
        Self.expectNothingSecret(in: introspection, "tokens.introspection")
        Self.expectNothingSecret(in: try #require(configuration.tokens.apiKeys), "tokens.apiKeys")
        Self.expectNothingSecret(in: try #require(configuration.authService), "authService")
        Self.expectNothingSecret(in: try #require(configuration.authService?.refresh), "authService.refresh")
        Self.expectNothingSecret(in: try #require(configuration.browserSignIn), "browserSignIn")
        Self.expectNothingSecret(in: try #require(configuration.sharedState), "sharedState")
        Self.expectNothingSecret(in: try #require(configuration.sharedState?.postgres.url), "the database URL")
        Self.expectNothingSecret(in: try #require(configuration.sharedState?.encryptionKey), "the state key")
    }

    @Test("a json refresh's template, which may hold a ${NAME} secret, is not printed")
    func jsonTemplate() throws {
        let (_, configuration) = try Self.load(refresh: Self.jsonRefresh)
        let refresh = try #require(configuration.authService?.refresh)
        guard case .json(let template) = refresh.protocol else {
            Issue.record("not a json refresh")
            return
        }
        #expect(template["app_secret"]?.stringValue == "template-secret-45c48cce2e2d")
        Self.expectNothingSecret(in: configuration, "the configuration")
        Self.expectNothingSecret(in: refresh, "authService.refresh")
    }

    /// What `serve` runs in its service group, built from the configuration with every secret.
    @Test("every service of serve's group is named, and prints no secret")
    func services() async throws {
        let (loader, configuration) = try Self.load(refresh: Self.oauth2Refresh)
        let application = try await GatewayApplication.make(configuration: configuration)
        atTestEnd { await application.shutdown() }
        let services: [any Service] =
            application.backgroundServices + [
                GatewayService(application: application), KeyRefreshService(application: application),
                ConfigReloadService(application: application, path: "/etc/gateway.json", loader: loader),
            ]
        #expect(application.backgroundServices.count == 2, "the shared state and the health prober")
        let names = services.map { String(describing: $0) }
        #expect(names.contains("ConfigReloadService(path: \"/etc/gateway.json\")"), "\(names)")
        for service in services {
            Self.expectNothingSecret(in: service, "\(type(of: service))")
        }
        Self.expectNothingSecret(in: application, "the application")
    }
}
