import Foundation
import NIOConcurrencyHelpers
import Testing

import AuthGatewayDemo
@testable import AuthGateway

/// The `auth-gateway` executable itself: `check`, and `serve` with its signals (SPEC §2).
@Suite("auth-gateway executable", .serialized)
struct ProcessTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var executable: URL {
        // `swift test` builds the executable next to the test bundle.
        let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") }?.bundleURL
        if let sibling = bundle?.deletingLastPathComponent().appendingPathComponent("auth-gateway"), FileManager.default.isExecutableFile(atPath: sibling.path) {
            return sibling
        }
        return Self.packageRoot.appendingPathComponent(".build/debug/auth-gateway")
    }

    /// Runs the executable to completion.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func checkAcceptsTheShippedConfigurations() throws {
        let result = try Self.run(["check", "--config", Self.packageRoot.appendingPathComponent("config/gateway.json").path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("OK"))
        let rainmaker = try Self.run(["check", "--config", Self.packageRoot.appendingPathComponent("config/examples/rainmaker.json").path])
        #expect(rainmaker.status == 0, "\(rainmaker.output)")
        let oidc = try Self.run(["check", "--config", Self.packageRoot.appendingPathComponent("config/examples/oidc.json").path], environment: ["AUTH_CLIENT_SECRET": "s3cret"])
        #expect(oidc.status == 0, "\(oidc.output)")
    }

    @Test func checkReportsEveryErrorWithItsPath() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("bad.json").path
        try """
        {
          "listener": { "port": 70000 },
          "tokens": { "issuers": [ { "issuer": "https://a", "keys": [ { "algorithm": "RS256", "publicKeyPEMFile": "missing.pem" } ] } ] },
          "backends": { "api": { "urls": ["ftp://nope"] } },
          "routes": [ { "name": "a", "pathPrefix": "/", "backend": "billing", "pathPrefx": "/x" } ]
        }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try Self.run(["check", "--config", path])
        #expect(result.status == 1)
        #expect(result.output.contains("listener.port: must be between 0 and 65535, found 70000"))
        #expect(result.output.contains("tokens.issuers[0].keys[0].publicKeyPEMFile: cannot read \(directory.appendingPathComponent("missing.pem").path)"))
        #expect(result.output.contains("backends.api.urls[0]: \"ftp://nope\" must start with http:// or https://"))
        #expect(result.output.contains("routes[0].backend: unknown backend \"billing\""))
        #expect(result.output.contains("routes[0].pathPrefx: unknown key"))
    }

    /// SPEC §4.8: `check` validates `sharedState` without connecting (the host below does not
    /// exist), and neither the password nor the key appears in what it prints.
    @Test func checkValidatesSharedStateWithoutConnecting() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("shared.json").path
        func write(_ sharedState: String) throws {
            try """
            {
              "listener": { "port": 8080 },
              "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
              "routes": [ { "name": "a", "pathPrefix": "/", "backend": "api", "auth": "none" } ],
              "sharedState": \(sharedState)
            }
            """.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let key = Data(repeating: 1, count: 32).base64EncodedString()
        try write(#"{ "postgres": { "url": "postgres://gateway:${PGPASSWORD}@db.does-not-exist.invalid/auth", "tls": "verify-full" }, "encryptionKeyBase64": "${STATE_KEY}" }"#)
        let valid = try Self.run(["check", "--config", path], environment: ["PGPASSWORD": "pw-not-to-print", "STATE_KEY": key])
        #expect(valid.status == 0, "\(valid.output)")
        #expect(valid.output.contains("shared state on postgres://gateway:***@db.does-not-exist.invalid:5432/auth (not contacted)"), "\(valid.output)")
        #expect(!valid.output.contains("pw-not-to-print") && !valid.output.contains(key))

        try write(#"{ "postgres": { "url": "postgres://gateway:pw-not-to-print@db/auth?sslmode=disable", "tls": "verify-ful", "caCertificatePEMFile": "missing.pem" }, "encryptionKeyBase64": "c2hvcnQ=" }"#)
        let invalid = try Self.run(["check", "--config", path])
        #expect(invalid.status == 1)
        #expect(invalid.output.contains("sharedState.postgres.url: must not have query parameters"), "\(invalid.output)")
        #expect(invalid.output.contains("sharedState.postgres.tls: must be \"disable\", \"require\" or \"verify-full\""))
        #expect(invalid.output.contains("sharedState.postgres.caCertificatePEMFile: applies only to tls \"verify-full\""))
        #expect(invalid.output.contains("sharedState.encryptionKeyBase64: must be 32 bytes for AES-256-GCM, found 5"))
        #expect(!invalid.output.contains("pw-not-to-print"))
    }

    @Test func sigtermDrainsInFlightRequestsAndExitsZero() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        defer { Task { await backend.close() } }
        let gateway = try RunningGateway(configuration: RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 5))
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let client = try await TestConnection.connect(port: port)
        let inFlight = Task { try await client.send(.get("/delay/1000", token: TestKeys.token())) }
        try await Task.sleep(for: .milliseconds(200))
        gateway.signal(SIGTERM)
        let response = try await inFlight.value
        #expect(response.status == 200)
        let status = try await gateway.waitForExit(timeout: .seconds(8))
        #expect(status == 0, "\(gateway.output)")
        #expect(gateway.output.contains("gateway.draining"))
    }

    /// As a non-root user without capabilities (the container image and the systemd unit run it
    /// that way): every socket option the gateway sets must be allowed unprivileged.
    @Test func servesAsAnUnprivilegedUser() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        defer { Task { await backend.close() } }
        let gateway = try RunningGateway(
            configuration: RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1),
            prefix: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
        )
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let response = try await TestConnection.connect(port: port).send(.get("/unprivileged", token: TestKeys.token()))
        #expect(response.status == 200)
        #expect(backend.requestCount == 1)
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(5)) == 0)
    }

    @Test func sighupReloadsAValidConfigurationAndKeepsTheOldOneOtherwise() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        defer { Task { await backend.close() } }
        let configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1)
        let gateway = try RunningGateway(configuration: configuration)
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let token = TestKeys.token()
        #expect(try await TestConnection.connect(port: port).send(.get("/x", token: token)).status == 200)

        // A valid new configuration: the route now needs a claim the token lacks.
        var stricter = configuration
        stricter["routes"] = [["name": "default", "pathPrefix": "/", "backend": "api", "require": ["claims.role": "admin"]]]
        try gateway.rewrite(stricter)
        gateway.signal(SIGHUP)
        var status = 0
        for _ in 0..<100 {
            status = try await TestConnection.connect(port: port).send(.get("/x", token: token)).status
            if status == 403 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(status == 403)

        // An invalid one: logged, counted, and the previous configuration stays active.
        try "{ \"listener\": {} }".write(toFile: gateway.configurationPath, atomically: true, encoding: .utf8)
        gateway.signal(SIGHUP)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await TestConnection.connect(port: port).send(.get("/x", token: token)).status == 403)
        #expect(gateway.output.contains("config.reload_failed"))
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(5)) == 0)
    }
}

/// `auth-gateway serve` as a child process.
final class RunningGateway: Sendable {
    let process: Process
    let configurationPath: String
    private let buffer = NIOLockedValueBox("")

    static func configuration(backendURL: String, drainSeconds: Int) -> JSONObject {
        var document = GatewayFixture.baseConfiguration(backendURL: backendURL)
        document.set("timeouts.drainSeconds", .number(JSONNumber(drainSeconds)))
        document["admin"] = nil
        document["logging"] = ["level": "info", "accessLog": true]
        return document
    }

    /// `prefix`: a command the gateway runs under (e.g. `setpriv` to drop privileges);
    /// `environment`: variables added to this process's (for `${NAME}` in the configuration).
    init(configuration: JSONObject, prefix: [String] = [], environment: [String: String] = [:]) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.configurationPath = directory.appendingPathComponent("gateway.json").path
        try JSONValue.object(configuration).jsonText.write(toFile: self.configurationPath, atomically: true, encoding: .utf8)
        // Readable by an unprivileged user too.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: self.configurationPath)
        let process = Process()
        let command = prefix + [ProcessTests.executable.path, "serve", "--config", self.configurationPath]
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let buffer = self.buffer
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { buffer.withLockedValue { $0 += String(decoding: data, as: UTF8.self) } }
        }
        try process.run()
        self.process = process
    }

    var output: String { self.buffer.withLockedValue { $0 } }

    func rewrite(_ configuration: JSONObject) throws {
        try JSONValue.object(configuration).jsonText.write(toFile: self.configurationPath, atomically: true, encoding: .utf8)
    }

    /// The port from the `gateway.listening` log line.
    func waitForPort(timeout: Duration = .seconds(10)) async throws -> Int {
        try await self.waitForPort(named: "listener.address", timeout: timeout)
    }

    /// The admin listener's port, from the same line.
    func waitForAdminPort(timeout: Duration = .seconds(10)) async throws -> Int {
        try await self.waitForPort(named: "admin.address", timeout: timeout)
    }

    private func waitForPort(named key: String, timeout: Duration) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = self.output.split(separator: "\n").first(where: { $0.contains("gateway.listening") }),
                let range = line.range(of: key + #"=\S+:(\d+)"#, options: .regularExpression)
            {
                let match = line[range]
                if let port = Int(match.split(separator: ":").last ?? "") { return port }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestClientError.timeout
    }

    func signal(_ number: Int32) {
        Foundation.kill(self.process.processIdentifier, number)
    }

    func waitForExit(timeout: Duration) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while self.process.isRunning {
            guard ContinuousClock.now < deadline else { throw TestClientError.timeout }
            try await Task.sleep(for: .milliseconds(20))
        }
        return self.process.terminationStatus
    }

    func kill() {
        if self.process.isRunning { self.signal(SIGKILL) }
    }
}
