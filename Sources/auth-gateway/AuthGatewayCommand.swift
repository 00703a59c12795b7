import ArgumentParser
import AuthGateway
import AuthGatewayDemo
import Foundation
import Logging
import ServiceLifecycle

@main
struct AuthGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth-gateway",
        abstract: "An authentication gateway: verifies JWTs, refreshes sessions, forwards to backends.",
        subcommands: [Serve.self, Check.self, APIKey.self, AssertionKey.self, Demo.self],
        defaultSubcommand: Serve.self
    )
}

/// `--config PATH`, else `$AUTH_GATEWAY_CONFIG`, else `config/gateway.json` (docs/operations.md).
struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: "Configuration file (default: $AUTH_GATEWAY_CONFIG, else config/gateway.json).")
    var config: String?

    var path: String {
        self.config ?? ProcessInfo.processInfo.environment["AUTH_GATEWAY_CONFIG"] ?? "config/gateway.json"
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the gateway.")

    @OptionGroup var options: ConfigOption

    func run() async throws {
        let (application, logger) = try await Self.application(path: self.options.path)
        // Background services (the trace exporter, the shared-state connections) first: a
        // service group shuts down in reverse order, so they stop after the gateway drained,
        // and the spans and refreshes of the drained requests still get out.
        let group = ServiceGroup(
            services: application.backgroundServices + [
                GatewayService(application: application),
                KeyRefreshService(application: application),
                ConfigReloadService(application: application, path: self.options.path),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        try await group.run()
    }

    /// The application of the file at `path`. The loaded configuration lives only as long as
    /// this call: kept in `run`'s frame, the first configuration (with, say, a million API keys)
    /// would outlive every reload (docs/policies.md, "API keys").
    private static func application(path: String) async throws -> (GatewayApplication, Logger) {
        let configuration: GatewayConfiguration
        do {
            configuration = try ConfigurationLoader().load(path: path)
        } catch {
            FileHandle.standardError.write(Data("auth-gateway: invalid configuration \(path):\n\(error)\n".utf8))
            throw ExitCode(1)
        }
        LoggingSetup.bootstrap(level: configuration.logging.level)
        let logger = Logger(label: "auth-gateway")
        return (try await GatewayApplication.make(configuration: configuration, logger: logger), logger)
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate the configuration and the files it names; with --request, decide one request offline.",
        discussion: "With --request: exit 0 when allowed, 3 when refused, 1 on a configuration error."
    )

    @OptionGroup var options: ConfigOption

    @Option(help: "Decide and explain this request offline: \"METHOD URL\".")
    var request: String?

    @Option(help: "With --request: a file holding the access token.")
    var token: String?

    @Flag(help: "With --token: read the token's claims without verifying its signature.")
    var noVerify = false

    @Option(help: "With --request: the caller's claims, as a JSON object.")
    var claims: String?

    @Option(help: "With --request: the caller's profile, as a JSON object.")
    var profile: String?

    @Option(help: "With --request: a request header \"Name: value\" (repeatable).")
    var header: [String] = []

    @Option(help: "With --request: the client's IP address (default 127.0.0.1).")
    var clientIP: String?

    func run() throws {
        let configuration: GatewayConfiguration
        do {
            configuration = try ConfigurationLoader().load(path: self.options.path)
        } catch {
            FileHandle.standardError.write(
                Data("\(self.options.path): \(error.issues.count) error(s)\n\(error)\n".utf8))
            throw ExitCode(1)
        }
        for warning in configuration.warnings {
            FileHandle.standardError.write(Data("\(self.options.path): warning: \(warning)\n".utf8))
        }
        guard let request else {
            if self.token != nil || self.noVerify || self.claims != nil || self.profile != nil || !self.header.isEmpty
                || self.clientIP != nil
            {
                FileHandle.standardError.write(
                    Data("--token, --no-verify, --claims, --profile, --header and --client-ip need --request\n".utf8))
                throw ExitCode(1)
            }
            let sharedState =
                configuration.sharedState.map { ", shared state on \($0.postgres.url) (not contacted)" } ?? ""
            print(
                "\(self.options.path): OK (\(configuration.routes.count) routes, \(configuration.backends.count) backends, \(configuration.tokens.issuers.count) issuers\(sharedState))"
            )
            return
        }
        var options = RequestCheck.Options(request: request)
        options.token = self.token
        options.verify = !self.noVerify
        options.claims = self.claims
        options.profile = self.profile
        options.headers = self.header
        options.clientIP = self.clientIP
        let (text, status) = RequestCheck(configuration: configuration, options: options).run()
        print(text, terminator: "")
        if status != .allowed { throw ExitCode(status.rawValue) }
    }
}

/// `auth-gateway apikey new --id ID` (docs/policies.md, "API keys").
struct APIKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apikey", abstract: "Manage API keys for machine clients.", subcommands: [New.self])

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a fresh random API key and the tokens.apiKeys entry to paste.")

        @Option(help: "The key's id (named in the access log).")
        var id: String

        func run() throws {
            guard !self.id.isEmpty else { throw ValidationError("--id must not be empty") }
            let (key, entry) = APIKeyEntry.new(id: self.id)
            print(APIKeyEntry.newKeyText(key: key, entry: entry), terminator: "")
        }
    }
}

/// `auth-gateway assertion-key new --kid K [--algorithm ES256|RS256|EdDSA]` (docs/assertions.md).
struct AssertionKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assertion-key", abstract: "Manage the keys the gateway signs identity assertions with.",
        subcommands: [New.self])

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a fresh private key as an identityAssertion.keysFile entry (status \"next\") to paste.")

        @Option(help: "The key's kid (published in the JWKS and in each assertion's header).")
        var kid: String

        @Option(help: "ES256 (EC P-256, the default), RS256 (RSA 2048) or EdDSA (Ed25519).")
        var algorithm: String = "ES256"

        func run() throws {
            guard !self.kid.isEmpty else { throw ValidationError("--kid must not be empty") }
            guard let algorithm = SigningKey.Algorithm(rawValue: self.algorithm) else {
                throw ValidationError("--algorithm must be ES256, RS256 or EdDSA")
            }
            print(try SigningKey.newEntryText(kid: self.kid, algorithm: algorithm), terminator: "")
        }
    }
}

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Run a sample auth service, an echo backend and the gateway on loopback, and print a curl walk-through."
    )

    @Option(help: "Gateway port (0 picks a free one).")
    var port: Int = 8080

    @Option(help: "Sample auth service port.")
    var authPort: Int = 9000

    @Option(help: "Echo backend port.")
    var backendPort: Int = 9100

    @Option(help: "Lifetime of the demo's access tokens, in seconds.")
    var tokenLifetime: Int = 30

    @Flag(help: "Run only the auth service and the backend, for `serve --config config/gateway.json`.")
    var servicesOnly = false

    func run() async throws {
        LoggingSetup.bootstrap(level: .notice)
        let runner = DemoRunner(
            gatewayPort: self.port,
            authServicePort: self.authPort,
            backendPort: self.backendPort,
            tokenLifetimeSeconds: self.tokenLifetime,
            servicesOnly: self.servicesOnly
        )
        try await runner.run()
    }
}

enum LoggingSetup {
    static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
