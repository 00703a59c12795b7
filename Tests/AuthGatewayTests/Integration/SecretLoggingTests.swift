import Crypto
import Foundation
import NIOHTTP1
import Testing

import AuthGatewayDemo
import AuthGatewayTesting
@testable import AuthGateway

extension PostgreSQLTests {
    /// "No log line prints the environment, a configuration secret or a key"
    /// (docs/operations.md, "What is never logged"), on the real `serve` process at `logging.level: debug`:
    /// every secret-bearing field of the configuration holds a fresh random value from the
    /// environment — the oauth2 refresh's, the introspection endpoint's and browser sign-in's
    /// client secrets, the shared state's database password and state key — beside an API key
    /// and a variable the configuration never names. The process starts (swift-service-lifecycle
    /// describes its services at debug level), refreshes, introspects, takes an API key, signs a
    /// browser in and out, and reloads on SIGHUP (once with a valid file, once with an invalid
    /// one). None of those values, in any spelling they could be printed in, reaches standard
    /// output or standard error.
    @Suite("Secrets are never logged (auth-gateway serve)", .serialized, .timeLimit(.minutes(5)), .awaitsCleanups)
    struct SecretLoggingTests {
        /// A fresh value with characters that read differently percent-, form- and
        /// base64-encoded.
        static func secret(_ label: String) -> String {
            "\(label)-" + UUID().uuidString.lowercased() + "+/@:" + UUID().uuidString.prefix(8)
        }

        /// RFC 6749 §2.3.1's form encoding (as the gateway sends client credentials).
        static func formEncoded(_ text: String) -> String {
            var output = ""
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."),
                    UInt8(ascii: "_"):
                    output.unicodeScalars.append(Unicode.Scalar(byte))
                case UInt8(ascii: " "): output += "+"
                default: output += String(format: "%%%02X", byte)
                }
            }
            return output
        }

        /// Every spelling of `secret` a log line could carry: as it is, percent- and
        /// form-encoded, base64 (alone and as a Basic credential of client `gateway`), and its
        /// first, middle and last 16 characters.
        static func spellings(of secret: String) -> [String] {
            let encoded = Self.formEncoded(secret)
            let percent = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? secret
            return [
                secret, encoded, percent, encoded.lowercased(), Data(secret.utf8).base64EncodedString(),
                Data("gateway:\(secret)".utf8).base64EncodedString(),
                Data("gateway:\(encoded)".utf8).base64EncodedString(),
            ] + TokenLoggingTests.windows(of: secret)
        }

        /// Every spelling of key bytes: base64, base64url, hex, and Swift's `[UInt8]` text.
        static func spellings(ofKey bytes: [UInt8]) -> [String] {
            let base64 = Data(bytes).base64EncodedString()
            return [
                base64, Base64URL.encode(bytes), bytes.map { String(format: "%02x", $0) }.joined(), "\(bytes)",
                String(base64.prefix(16)), String(base64.suffix(16)),
            ]
        }

        /// An oauth2 token endpoint (RFC 6749 §6) that records the client's `Authorization`.
        static func refreshService() async throws -> ScriptedAuthService {
            try await ScriptedAuthService.start { request in
                guard request.path == "/oauth2/token" else { return SimpleResponse(status: .notFound) }
                return .json(
                    .ok,
                    [
                        "access_token": .string(TestKeys.token(subject: "alice", extra: ["nonce": "refreshed"])),
                        "refresh_token": .string("rt-rotated-" + UUID().uuidString),
                    ])
            }
        }

        @Test func noSecretOnStandardOutputOrStandardError() async throws {
            let unrelated = Self.secret("unrelated")
            let refreshSecret = Self.secret("refresh")
            let introspectionSecret = Self.secret("introspection")
            let signInSecret = Self.secret("signin")
            let databasePassword = Self.secret("database")
            let stateKey = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
            let apiKey = APIKeyEntry.new(id: "secret-logging-bot")

            // A role of its own in the shared cluster, with the random password.
            let cluster = try await PostgresCluster.shared()
            let role = "secrets_" + UUID().uuidString.prefix(8).lowercased()
            try await cluster.psql("CREATE ROLE \(role) LOGIN PASSWORD '\(databasePassword)'", database: "postgres")
            let database = try await cluster.createDatabase(owner: role)

            let provider = try DemoAuthService(tokenLifetimeSeconds: 300)
            try await provider.start(group: TestGroup.shared)
            let refresh = try await Self.refreshService()
            let introspection = try await ScriptedIntrospection.start()
            let backend = try await EchoBackend.start(group: TestGroup.shared)
            atTestEnd {
                await backend.close()
                await introspection.service.stop()
                await refresh.stop()
                await provider.stop()
            }
            let opaque = "opq-" + UUID().uuidString.lowercased()
            introspection.set(opaque, IntrospectionTests.activeAnswer(subject: "opaque-user", clock: TestClock()))

            func configuration(publicBaseURL: String) -> JSONObject {
                var document = RunningGateway.configuration(
                    backendURL: backend.baseURL, drainSeconds: 1, admin: true, level: "debug")
                document["tokens"] = [
                    "issuers": [
                        [
                            "issuer": .string(TestKeys.issuer), "audiences": [.string(TestKeys.audience)],
                            "keys": [
                                [
                                    "kid": "test-rs", "algorithm": "RS256",
                                    "publicKeyPEM": .string(TestKeys.rsa.publicKeyPEM),
                                ]
                            ],
                        ],
                        [
                            "issuer": .string(provider.issuer), "discovery": true, "audiences": ["demo-api"],
                            "leewaySeconds": 0,
                        ],
                    ],
                    "introspection": [
                        "url": .string(introspection.service.baseURL + "/oauth2/introspect"), "clientId": "gateway",
                        "clientSecret": "${INTROSPECTION_SECRET}", "clientAuthentication": "form",
                        "timeoutMilliseconds": 20_000, "issuer": "https://idp.test",
                    ],
                    "apiKeys": ["keys": [apiKey.entry.json]],
                ]
                document["authService"] = [
                    "url": .string(refresh.baseURL), "timeoutMilliseconds": 20_000,
                    "refresh": [
                        "protocol": "oauth2", "path": "/oauth2/token", "clientId": "gateway",
                        "clientSecret": "${REFRESH_SECRET}", "maxExpiredSeconds": 3600,
                    ],
                ]
                document["browserSignIn"] = [
                    "issuer": .string(provider.issuer), "clientId": "gateway", "clientSecret": "${SIGNIN_SECRET}",
                    "publicBaseURL": .string(publicBaseURL),
                ]
                document["sharedState"] = [
                    "postgres": [
                        "url": .string("postgres://\(role):${DATABASE_PASSWORD}@127.0.0.1:\(cluster.port)/\(database)"),
                        "tls": "disable", "timeoutMilliseconds": 20_000,
                    ],
                    "encryptionKeyBase64": "${STATE_KEY}",
                ]
                document["identityHeaders"] = ["X-User-Subject": "claims.sub"]
                document["routes"] = [
                    ["name": "app", "pathPrefix": "/app/", "backend": "api", "signIn": true],
                    ["name": "default", "pathPrefix": "/", "backend": "api"],
                ]
                return document
            }

            // The public base names the port, known once the process listens: start with a
            // placeholder, then reload (SIGHUP) with the real one.
            var document = configuration(publicBaseURL: "http://localhost:1")
            let process = try RunningGateway(
                configuration: document,
                environment: [
                    "UNRELATED_SECRET": unrelated, "REFRESH_SECRET": refreshSecret,
                    "INTROSPECTION_SECRET": introspectionSecret, "SIGNIN_SECRET": signInSecret,
                    "DATABASE_PASSWORD": databasePassword, "STATE_KEY": Data(stateKey).base64EncodedString(),
                ])
            atTestEnd {
                process.kill()
                _ = try? await process.waitForExit(timeout: .seconds(30))
            }
            let port = try await process.waitForPort()
            let adminPort = try await process.waitForAdminPort()
            let instance = SharedInstance(process: process, port: port, adminPort: adminPort, document: document)
            try await instance.waitUntilShared(seconds: 30)

            let gateway = GatewayAtPort(port: port)
            let base = "http://localhost:\(port)"
            provider.register(.gateway(publicBaseURL: base, clientSecret: signInSecret))
            document = configuration(publicBaseURL: base)
            try process.rewrite(document)
            process.signal(SIGHUP)
            let applied = await eventually {
                let start = try? await gateway.send(TestRequest(.GET, "/.gateway/sign-in"))
                return start?.header("location")?.contains(FormEncoding.encode(base + "/.gateway/callback")) == true
            }
            try #require(applied, "the reloaded public base never applied:\n\(process.output)")

            // A refresh: the client secret reaches the token endpoint (as Basic credentials).
            let expired = TestKeys.token(subject: "alice", expiresIn: -60)
            let refreshed = try await gateway.send(
                .get("/r", token: expired, headers: [("X-Refresh-Token", "rt-" + UUID().uuidString)]))
            #expect(refreshed.status == 200, "\(refreshed.text)")
            #expect(refreshed.header("x-access-token") != nil)
            let basic = "Basic " + Data("gateway:\(Self.formEncoded(refreshSecret))".utf8).base64EncodedString()
            #expect(refresh.requests.map { $0.headers.first(name: "authorization") } == [basic])

            // An introspection: the client secret reaches the endpoint (in the form).
            let introspected = try await gateway.send(.get("/i", token: opaque))
            #expect(introspected.status == 200, "\(introspected.text)")
            #expect(
                introspection.service.requests.contains {
                    $0.bodyText.contains("client_secret=\(Self.formEncoded(introspectionSecret))")
                })

            // An API key, accepted and refused.
            let keyed = try await gateway.send(TestRequest(.GET, "/k", headers: [("X-API-Key", apiKey.key)]))
            #expect(keyed.status == 200)
            #expect(keyed.echoedHeader("x-user-subject") == ["secret-logging-bot"])
            let refused = try await gateway.send(TestRequest(.GET, "/k", headers: [("X-API-Key", apiKey.key + "x")]))
            #expect(refused.status == 401)

            // A browser signs in (the provider checks the client secret at its token endpoint),
            // is served from its session (kept in the database), and signs out.
            var browser = ScriptedBrowser()
            let navigation = try await browser.navigate(gateway, "/app/page")
            #expect(navigation.status == 302)
            let authorize = try #require(navigation.header("location"))
            let callback = try #require(provider.signIn(authorizationURL: authorize, userName: "alice@example.com"))
            let callbackPath = String(callback[try #require(callback.range(of: "/.gateway/callback")).lowerBound...])
            let landed = try await browser.get(gateway, callbackPath)
            #expect(landed.status == 302, "\(landed.text)")
            let page = try await browser.navigate(gateway, "/app/page")
            #expect(page.status == 200)
            #expect(page.echoedHeader("x-user-subject").count == 1)
            let out = try await browser.send(
                gateway, TestRequest(.POST, "/.gateway/sign-out", headers: [("Sec-Fetch-Site", "same-origin")]))
            #expect(out.status == 302)

            // A reload with an invalid file whose database URL holds the password: refused,
            // logged, and the old configuration stays. Then a valid one again.
            var invalid = document
            invalid.set(
                "sharedState.postgres.url",
                .string("postgres://\(role):${DATABASE_PASSWORD}@127.0.0.1:notaport/\(database)"))
            try process.rewrite(invalid)
            process.signal(SIGHUP)
            #expect(try await process.waitForOutput { $0.contains("config.reload_failed") }, "\(process.output)")
            try process.rewrite(document)
            process.signal(SIGHUP)
            #expect(
                try await process.waitForOutput {
                    $0.components(separatedBy: "config.reloaded").count - 1 >= 2
                }, "\(process.output)")
            #expect(try await gateway.send(TestRequest(.GET, "/k", headers: [("X-API-Key", apiKey.key)])).status == 200)

            #expect(try await process.waitForOutput { $0.contains("/.gateway/sign-out") })
            process.signal(SIGTERM)
            #expect(try await process.waitForExit(timeout: .seconds(30)) == 0)
            let stdout = process.standardOutput
            let stderr = process.standardError
            // The capture works: the access log is on stdout, the application log at debug on
            // stderr, with swift-service-lifecycle's description of every service.
            #expect(stdout.contains("\"path\":\"/.gateway/callback\""), "\(stdout)")
            #expect(stderr.contains(" debug "), "no debug line on stderr:\n\(stderr)")
            #expect(stderr.contains("Starting service"), "\(stderr)")
            #expect(stderr.contains("ConfigReloadService"), "\(stderr)")

            var secrets: [(what: String, text: String)] = [("the variable's name", "UNRELATED_SECRET")]
            for (what, value) in [
                ("an unrelated variable", unrelated), ("the refresh client secret", refreshSecret),
                ("the introspection client secret", introspectionSecret),
                ("the sign-in client secret", signInSecret), ("the database password", databasePassword),
                ("the API key", apiKey.key),
            ] {
                secrets += Self.spellings(of: value).map { (what, $0) }
            }
            secrets += Self.spellings(ofKey: stateKey).map { ("the state key", $0) }
            secrets += Self.spellings(ofKey: apiKey.entry.sha256).map { ("the API key's digest", $0) }
            // Named, never quoted: a failure must not print what it found.
            let onStandardOutput = Set(secrets.filter { stdout.contains($0.text) }.map(\.what))
            let onStandardError = Set(secrets.filter { stderr.contains($0.text) }.map(\.what))
            #expect(onStandardOutput.isEmpty, "stdout holds \(onStandardOutput.sorted())")
            #expect(onStandardError.isEmpty, "stderr holds \(onStandardError.sorted())")
        }
    }
}
