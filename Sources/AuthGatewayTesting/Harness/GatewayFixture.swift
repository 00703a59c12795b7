import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

import AuthGatewayDemo
import AuthGateway

/// Unix time for the gateway under test: real time plus an adjustable offset, so tests can
/// move past TTLs and grace periods without sleeping.
package final class TestClock: Sendable {
    private let offset = NIOLockedValueBox<Double>(0)
    private let fixed: Double?

    package init(fixed: Double? = nil) { self.fixed = fixed }

    package var now: Double { (self.fixed ?? Date().timeIntervalSince1970) + self.offset.withLockedValue { $0 } }

    package func advance(by seconds: Double) { self.offset.withLockedValue { $0 += seconds } }

    package var function: @Sendable () -> Double { { [self] in self.now } }
}

/// Signing keys the integration tests issue tokens with (made once per test run).
package enum TestKeys {
    package static let issuer = "https://issuer.test"
    package static let audience = "gateway-tests"
    package static let rsa: JWTSigner = try! JWTSigner.generateRS256(kid: "test-rs")
    package static let otherRSA: JWTSigner = try! JWTSigner.generateRS256(kid: "test-rs")

    /// A token from `signer` with the usual claims; `expiresIn` relative to `now`.
    package static func token(
        signer: JWTSigner = TestKeys.rsa,
        subject: String = "user-42",
        now: Double = Date().timeIntervalSince1970,
        expiresIn: Double = 300,
        audience: String = TestKeys.audience,
        issuer: String = TestKeys.issuer,
        extra: JSONObject = JSONObject()
    ) -> String {
        var claims: JSONObject = [
            "iss": .string(issuer), "sub": .string(subject), "aud": .string(audience),
            "iat": .number(JSONNumber(Int(now) - 10)), "exp": .number(JSONNumber(Int(now + expiresIn))),
            "email": .string("\(subject)@example.com"),
        ]
        for entry in extra.entries { claims[entry.key] = entry.value }
        return try! signer.sign(claims)
    }
}

/// A gateway on 127.0.0.1:0 in front of an `EchoBackend`, built from a JSON configuration the
/// test adjusts.
package final class GatewayFixture: Sendable {
    package let application: GatewayApplication
    package let backend: EchoBackend
    package let clock: TestClock
    package let directory: URL
    /// The configuration the gateway started with.
    package let document: JSONObject
    /// What `${NAME}` in the configuration reads.
    package let environment: [String: String]
    /// The application's background services (the trace exporter), run as `serve` runs them.
    private let services: Task<Void, Never>?

    private init(
        application: GatewayApplication, backend: EchoBackend, clock: TestClock, directory: URL, document: JSONObject,
        environment: [String: String],
        services: Task<Void, Never>?
    ) {
        self.services = services
        self.application = application
        self.backend = backend
        self.clock = clock
        self.directory = directory
        self.document = document
        self.environment = environment
    }

    /// Reloads (as SIGHUP does) the starting configuration changed by `configure`.
    package func reload(_ configure: (inout JSONObject) -> Void) throws {
        var document = self.document
        configure(&document)
        Self.loosenTimeouts(&document)
        let path = self.directory.appendingPathComponent("gateway.json").path
        try JSONValue.object(document).jsonText.write(toFile: path, atomically: true, encoding: .utf8)
        self.application.reload(try ConfigurationLoader(environment: self.environment).load(path: path))
    }

    package var port: Int { self.application.mainAddress?.port ?? 0 }
    package var adminPort: Int { self.application.adminAddress?.port ?? 0 }

    /// The base configuration: one issuer with the test RSA key, one backend, one route.
    package static func baseConfiguration(backendURL: String) -> JSONObject {
        [
            "listener": ["host": "127.0.0.1", "port": 0],
            "admin": ["host": "127.0.0.1", "port": 0],
            "eventLoopThreads": 1,
            "tokens": [
                "issuers": [
                    [
                        "issuer": .string(TestKeys.issuer),
                        "audiences": [.string(TestKeys.audience)],
                        "keys": [
                            [
                                "kid": "test-rs", "algorithm": "RS256",
                                "publicKeyPEM": .string(TestKeys.rsa.publicKeyPEM),
                            ]
                        ],
                        "leewaySeconds": 0,
                    ]
                ]
            ],
            "backends": ["api": ["urls": [.string(backendURL)]]],
            "routes": [["name": "default", "pathPrefix": "/", "backend": "api"]],
            "logging": ["accessLog": false],
        ]
    }

    package static func start(
        backend existingBackend: EchoBackend? = nil,
        clock: TestClock = TestClock(),
        waitUntilReady: Bool = true,
        environment: [String: String] = [:],
        assembly: AuthenticationAssembly = .standard,
        configure: (inout JSONObject) -> Void = { _ in }
    ) async throws -> GatewayFixture {
        let backend: EchoBackend
        if let existingBackend {
            backend = existingBackend
        } else {
            backend = try await EchoBackend.start(group: TestGroup.shared)
        }
        var document = Self.baseConfiguration(backendURL: backend.baseURL)
        configure(&document)
        Self.loosenTimeouts(&document)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "auth-gateway-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("gateway.json").path
        try JSONValue.object(document).jsonText.write(toFile: path, atomically: true, encoding: .utf8)
        let configuration = try ConfigurationLoader(environment: environment).load(path: path)
        var logger = Logger(label: "auth-gateway.test")
        logger.logLevel = .critical
        let application = try await GatewayApplication.make(
            configuration: configuration, logger: logger, clock: clock.function, assembly: assembly)
        try await application.start()
        var services: Task<Void, Never>?
        if !application.backgroundServices.isEmpty {
            let group = ServiceGroup(
                services: application.backgroundServices, gracefulShutdownSignals: [], logger: logger)
            services = Task { try? await group.run() }
        }
        let fixture = GatewayFixture(
            application: application, backend: backend, clock: clock, directory: directory, document: document,
            environment: environment, services: services
        )
        // A fixed 2 s wait that went on regardless let a slow first key fetch on a loaded
        // machine turn into 503s; a gateway that does not become ready is now the failure.
        if waitUntilReady, !(await eventually { application.isReady }) {
            await fixture.stop()
            throw FixtureError.notReady
        }
        return fixture
    }

    /// The product's short default timeouts, loosened for tests (on start and on each reload)
    /// where a test has not set its own: they tripped on a loaded 2-core machine running the
    /// whole suite in parallel. A test about a timeout sets it.
    private static func loosenTimeouts(_ document: inout JSONObject) {
        // The 1 s default connect timeout is also the wait for a free pooled connection.
        if case .object(var backends)? = document["backends"] {
            for name in backends.keys {
                guard case .object(var backend)? = backends[name], backend["connectTimeoutMilliseconds"] == nil else {
                    continue
                }
                backend["connectTimeoutMilliseconds"] = 20_000
                backends[name] = .object(backend)
            }
            document["backends"] = .object(backends)
        }
        // The product's 3 s default call timeout turned answers of the scripted auth services
        // into 503s in the same way.
        if case .object(var authService)? = document["authService"], authService["timeoutMilliseconds"] == nil {
            authService["timeoutMilliseconds"] = 20_000
            document["authService"] = .object(authService)
        }
    }

    package func connect(countOnly: Bool = false) async throws -> TestConnection {
        try await TestConnection.connect(port: self.port, countOnly: countOnly)
    }

    package func raw() async throws -> RawConnection {
        try await RawConnection.connect(port: self.port)
    }

    /// One request on a fresh connection.
    package func send(_ request: TestRequest) async throws -> TestResponse {
        let connection = try await self.connect()
        return try await withCleanup({ await connection.close() }) { () async throws in
            return try await connection.send(request)
        }
    }

    package func stop() async {
        self.services?.cancel()
        await self.application.shutdown()
        await self.backend.close()
        try? FileManager.default.removeItem(at: self.directory)
    }
}

extension JSONObject {
    /// Sets a value at a dotted path of objects (`"tokens.verifiedCacheEntries"`).
    package mutating func set(_ path: String, _ value: JSONValue) {
        let parts = path.split(separator: ".").map(String.init)
        self.set(parts[...], value)
    }

    private mutating func set(_ parts: ArraySlice<String>, _ value: JSONValue) {
        guard let first = parts.first else { return }
        if parts.count == 1 {
            self[first] = value
            return
        }
        var child = self[first]?.objectValue ?? JSONObject()
        child.set(parts.dropFirst(), value)
        self[first] = .object(child)
    }
}

package enum FixtureError: Error, CustomStringConvertible {
    case notReady

    package var description: String {
        "the gateway did not become ready within 30 s (a test about an unready gateway passes waitUntilReady: false)"
    }
}
