import Foundation
import NIOConcurrencyHelpers
import Testing

import AuthGatewayTesting
import AuthGatewayDemo
@testable import AuthGateway

/// The `auth-gateway` executable itself: `check`, and `serve` with its signals (docs/operations.md).
@Suite("auth-gateway executable", .serialized, .timeLimit(.minutes(5)), .awaitsCleanups)
struct ProcessTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs the executable to completion.
    static func run(
        _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> (status: Int32, output: String) {
        let child = try ChildProcess([try RunningGateway.executable().path] + arguments, environment: environment)
        try await child.exited(timeout: .seconds(60))
        return (child.terminationStatus, child.standardOutput + child.standardError)
    }

    @Test func checkAcceptsTheShippedConfigurations() async throws {
        let result = try await Self.run([
            "check", "--config", Self.packageRoot.appendingPathComponent("config/gateway.json").path,
        ])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("OK"))
        let rainmaker = try await Self.run([
            "check", "--config", Self.packageRoot.appendingPathComponent("config/examples/rainmaker.json").path,
        ])
        #expect(rainmaker.status == 0, "\(rainmaker.output)")
        let oidc = try await Self.run(
            ["check", "--config", Self.packageRoot.appendingPathComponent("config/examples/oidc.json").path],
            environment: ["AUTH_CLIENT_SECRET": "s3cret"])
        #expect(oidc.status == 0, "\(oidc.output)")
    }

    @Test func checkReportsEveryErrorWithItsPath() async throws {
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
        let result = try await Self.run(["check", "--config", path])
        #expect(result.status == 1)
        #expect(result.output.contains("listener.port: must be between 0 and 65535, found 70000"))
        #expect(
            result.output.contains(
                "tokens.issuers[0].keys[0].publicKeyPEMFile: cannot read \(directory.appendingPathComponent("missing.pem").path)"
            ))
        #expect(result.output.contains("backends.api.urls[0]: \"ftp://nope\" must start with http:// or https://"))
        #expect(result.output.contains("routes[0].backend: unknown backend \"billing\""))
        #expect(result.output.contains("routes[0].pathPrefx: unknown key"))
    }

    /// docs/shared-state.md: `check` validates `sharedState` without connecting (the host below
    /// does not exist), and neither the password nor the key appears in what it prints.
    @Test func checkValidatesSharedStateWithoutConnecting() async throws {
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
        try write(
            #"{ "postgres": { "url": "postgres://gateway:${PGPASSWORD}@db.does-not-exist.invalid/auth", "tls": "verify-full" }, "encryptionKeyBase64": "${STATE_KEY}" }"#
        )
        let valid = try await Self.run(
            ["check", "--config", path], environment: ["PGPASSWORD": "pw-not-to-print", "STATE_KEY": key])
        #expect(valid.status == 0, "\(valid.output)")
        #expect(
            valid.output.contains(
                "shared state on postgres://gateway:***@db.does-not-exist.invalid:5432/auth (not contacted)"),
            "\(valid.output)")
        #expect(!valid.output.contains("pw-not-to-print") && !valid.output.contains(key))

        try write(
            #"{ "postgres": { "url": "postgres://gateway:pw-not-to-print@db/auth?sslmode=disable", "tls": "verify-ful", "caCertificatePEMFile": "missing.pem" }, "encryptionKeyBase64": "c2hvcnQ=" }"#
        )
        let invalid = try await Self.run(["check", "--config", path])
        #expect(invalid.status == 1)
        #expect(
            invalid.output.contains("sharedState.postgres.url: must not have query parameters"), "\(invalid.output)")
        #expect(
            invalid.output.contains("sharedState.postgres.tls: must be \"disable\", \"require\" or \"verify-full\""))
        #expect(
            invalid.output.contains("sharedState.postgres.caCertificatePEMFile: applies only to tls \"verify-full\""))
        #expect(invalid.output.contains("sharedState.encryptionKeyBase64: must be 32 bytes for AES-256-GCM, found 5"))
        #expect(!invalid.output.contains("pw-not-to-print"))
    }

    /// The `check` errors of docs/authentication.md: `discovery` beside `jwksURL`, a
    /// `discoveryIssuer` without discovery, and a refresh/profile path with no `authService.url` to put it on.
    /// `paths.escapedSlashes: "keep"` is valid but weakens the canonical target's promise:
    /// `check` accepts it and says so (docs/forwarding.md, "The canonical path").
    @Test func checkWarnsAboutKeptEscapedSlashes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("keep.json").path
        try """
        {
          "listener": { "port": 8080 },
          "paths": { "escapedSlashes": "keep" },
          "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
          "routes": [ { "name": "a", "pathPrefix": "/", "backend": "api", "auth": "none" } ]
        }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let kept = try await Self.run(["check", "--config", path])
        #expect(kept.status == 0, "\(kept.output)")
        #expect(kept.output.contains("warning: paths.escapedSlashes: \"keep\" passes %2F and %5C to backends"))
        let request = try await Self.run(["check", "--config", path, "--request", "GET /a%2fb/../c"])
        #expect(request.output.contains("warning: paths.escapedSlashes"))
        // `%2f` kept as a byte of its segment (hex upper-cased), so `..` removes `a%2Fb`.
        #expect(
            request.output.split(separator: "\n").contains { $0.hasPrefix("target:") && $0.hasSuffix(" /c") },
            "\(request.output)")
        let rejecting = try await Self.run([
            "check", "--config", Self.packageRoot.appendingPathComponent("config/gateway.json").path,
        ])
        #expect(!rejecting.output.contains("warning"), "\(rejecting.output)")
    }

    @Test func checkReportsDiscoveryMisconfigurations() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("oidc.json").path
        try """
        {
          "listener": { "port": 8080 },
          "tokens": { "issuers": [
            { "issuer": "https://a.test", "discovery": true, "jwksURL": "https://a.test/certs" },
            { "issuer": "https://b.test", "jwksURL": "https://b.test/certs" }
          ] },
          "authService": { "discoveryIssuer": "https://b.test", "refresh": { "clientId": "gw", "path": "/token" }, "profile": { "path": "/userinfo" } },
          "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
          "routes": [ { "name": "a", "pathPrefix": "/", "backend": "api" } ]
        }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await Self.run(["check", "--config", path])
        #expect(result.status == 1)
        #expect(
            result.output.contains("tokens.issuers[0].jwksURL: cannot be set together with \"discovery\": true"),
            "\(result.output)")
        #expect(
            result.output.contains(
                "authService.discoveryIssuer: issuer \"https://b.test\" does not have \"discovery\": true"),
            "\(result.output)")
        #expect(result.output.contains("authService.refresh.path: needs authService.url"), "\(result.output)")
        #expect(result.output.contains("authService.profile.path: needs authService.url"), "\(result.output)")
    }

    /// docs/operations.md: with no `--config`, `serve` reads the file `$AUTH_GATEWAY_CONFIG` names,
    /// and with no command at all the executable serves. The configuration proves it was read:
    /// the request reaches this test's echo backend (the fallback `config/gateway.json` does
    /// not exist in the process's working directory), and SIGTERM ends it with 0.
    @Test(arguments: [RunningGateway.Invocation.serveWithEnvironment, .defaultCommandWithEnvironment])
    func serveReadsAUTH_GATEWAY_CONFIGAndIsTheDefaultCommand(_ invocation: RunningGateway.Invocation) async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        let gateway = try RunningGateway(
            configuration: RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1),
            invocation: invocation)
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let response = try await TestConnection.connect(port: port).send(
            .get("/from-env", token: TestKeys.token()), timeout: .seconds(30))
        #expect(response.status == 200)
        #expect(response.header("x-echo-backend") == "1")
        #expect(backend.requestCount == 1)
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(30)) == 0, "\(gateway.output)")
    }

    /// `--config` wins over `$AUTH_GATEWAY_CONFIG`; a missing file named only by the variable
    /// is reported with its path and exit status 1 (so the variable is really what is read).
    @Test func theConfigOptionWinsOverAUTH_GATEWAY_CONFIG() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent(
            "absent-\(UUID().uuidString)/gateway.json"
        ).path
        let gateway = try RunningGateway(
            configuration: RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1),
            environment: ["AUTH_GATEWAY_CONFIG": missing]
        )
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        #expect(
            try await TestConnection.connect(port: port).send(
                .get("/flag", token: TestKeys.token()), timeout: .seconds(30)
            ).status == 200)
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(30)) == 0)

        let alone = try await Self.run(["serve"], environment: ["AUTH_GATEWAY_CONFIG": missing])
        #expect(alone.status == 1, "\(alone.output)")
        #expect(alone.output.contains(missing), "\(alone.output)")
    }

    @Test func sigtermDrainsInFlightRequestsAndExitsZero() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        let gateway = try RunningGateway(
            configuration: RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 5))
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let client = try await TestConnection.connect(port: port)
        let inFlight = Task { try await client.send(.get("/delay/1000", token: TestKeys.token())) }
        // Signalled only once the request is in flight at the backend.
        #expect(await eventually { backend.requestCount == 1 })
        gateway.signal(SIGTERM)
        let response = try await inFlight.value
        #expect(response.status == 200)
        #expect(response.header("connection") == "close")
        let status = try await gateway.waitForExit(timeout: .seconds(30))
        #expect(status == 0, "\(gateway.output)")
        #expect(gateway.output.contains("gateway.draining"))
    }

    /// SIGTERM and SIGINT alike (docs/operations.md): readiness turns 503 on the admin listener and
    /// stays so until exit, the main listener refuses new connections, a request the backend holds
    /// longer than `timeouts.drainSeconds` is cut off at the drain deadline, and the process
    /// exits 0. Every step waits for the state it needs by polling.
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalDrainsCutsOffWhatOutlastsTheDrainAndExitsZero(_ signal: Int32) async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        // 8 s of drain: room to observe the draining state on a busy machine (2 s was seen to
        // pass, and the process to exit, before a loaded full run had checked readiness and the
        // listener).
        let gateway = try RunningGateway(
            configuration: RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 8, admin: true))
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let adminPort = try await gateway.waitForAdminPort()
        #expect(
            try await TestConnection.connect(port: adminPort).send(.get("/readyz"), timeout: .seconds(30)).status == 200
        )
        #expect(await acceptsConnections(port: port))
        let mainSockets = listeningSockets(process: gateway.process.processIdentifier).filter { $0.port == port }
        #expect(!mainSockets.isEmpty)

        // A request the backend holds far longer than drainSeconds.
        let client = try await TestConnection.connect(port: port)
        let held = Task { () -> (Result<TestResponse, any Error>, ContinuousClock.Instant) in
            do {
                let response = try await client.send(
                    .get("/delay/60000", token: TestKeys.token()), timeout: .seconds(50))
                return (.success(response), ContinuousClock.now)
            } catch {
                return (.failure(error), ContinuousClock.now)
            }
        }
        #expect(await eventually { backend.requestCount == 1 })

        let signalled = ContinuousClock.now
        gateway.signal(signal)
        func readiness() async -> Int? {
            guard let admin = try? await TestConnection.connect(port: adminPort) else { return nil }
            return await withCleanup({ await admin.close() }) {
                return try? await admin.send(.get("/readyz"), timeout: .seconds(2)).status
            }
        }
        #expect(await eventually { await readiness() == 503 }, "readiness never turned 503")
        // The process's listening socket, not the port: a connection to a freed port reaches
        // whoever holds it next (another test's server may bind it).
        #expect(
            await eventually {
                listeningSockets(process: gateway.process.processIdentifier).isDisjoint(with: mainSockets)
            },
            "the main listener still accepts connections while draining")
        #expect(gateway.process.isRunning, "the held request must keep the process draining")

        // Until the process is gone, every answer of the admin listener's /readyz is 503.
        var answers: [Int] = []
        while gateway.process.isRunning {
            if let status = await readiness() { answers.append(status) }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(!answers.isEmpty)
        #expect(answers.allSatisfy { $0 == 503 }, "\(answers)")

        // The held request was cut off (closed without an answer) at the drain deadline, long
        // before the backend would have answered (60 s).
        let (outcome, ended) = await held.value
        let cutOff = ended - signalled
        #expect(throws: TestClientError.connectionClosed) { try outcome.get() }
        #expect(cutOff >= .milliseconds(7900) && cutOff < .seconds(40), "cut off after \(cutOff)")
        #expect(try await gateway.waitForExit(timeout: .seconds(30)) == 0, "\(gateway.output)")
        #expect(gateway.output.contains("gateway.draining"))
        #expect(gateway.output.contains("gateway.drain_timeout"))
        #expect(backend.requestCount == 1)
    }

    /// As a non-root user without capabilities (the container image and the systemd unit run it
    /// that way): every socket option the gateway sets must be allowed unprivileged.
    @Test func servesAsAnUnprivilegedUser() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        let gateway = try RunningGateway(
            configuration: RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1),
            prefix: [
                "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all",
            ]
        )
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let response = try await TestConnection.connect(port: port).send(.get("/unprivileged", token: TestKeys.token()))
        #expect(response.status == 200)
        #expect(backend.requestCount == 1)
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(30)) == 0)
    }

    @Test func sighupReloadsAValidConfigurationAndKeepsTheOldOneOtherwise() async throws {
        let backend = try await EchoBackend.start(group: TestGroup.shared)
        atTestEnd { await backend.close() }
        let configuration = RunningGateway.configuration(backendURL: backend.baseURL, drainSeconds: 1, admin: true)
        let gateway = try RunningGateway(configuration: configuration)
        defer { gateway.kill() }
        let port = try await gateway.waitForPort()
        let adminPort = try await gateway.waitForAdminPort()
        let token = TestKeys.token()
        #expect(try await TestConnection.connect(port: port).send(.get("/x", token: token)).status == 200)
        func reloads(_ result: String) async throws -> Int? {
            let metrics = try await TestConnection.connect(port: adminPort).send(.get("/metrics")).text
            let prefix = "auth_gateway_config_reloads_total{result=\"\(result)\"} "
            return metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap {
                Int($0.dropFirst(prefix.count))
            }
        }

        // A valid new configuration: the route now needs a claim the token lacks.
        var stricter = configuration
        stricter["routes"] = [
            ["name": "default", "pathPrefix": "/", "backend": "api", "require": ["claims.role": "admin"]]
        ]
        try gateway.rewrite(stricter)
        gateway.signal(SIGHUP)
        #expect(try await gateway.waitForOutput { $0.contains("config.reloaded") })
        #expect(try await TestConnection.connect(port: port).send(.get("/x", token: token)).status == 403)
        #expect(try await reloads("success") == 1)

        // An invalid one: logged, counted, and the previous configuration stays active.
        try "{ \"listener\": {} }".write(toFile: gateway.configurationPath, atomically: true, encoding: .utf8)
        gateway.signal(SIGHUP)
        #expect(try await gateway.waitForOutput { $0.contains("config.reload_failed") })
        #expect(try await TestConnection.connect(port: port).send(.get("/x", token: token)).status == 403)
        #expect(try await reloads("failure") == 1)
        #expect(try await reloads("success") == 1)
        gateway.signal(SIGTERM)
        #expect(try await gateway.waitForExit(timeout: .seconds(30)) == 0)
    }
}
