import Foundation
import NIOCore
import Testing

@testable import AuthGateway

/// `sharedState` (docs/configuration.md, docs/shared-state.md): checked without connecting, every
/// error with its JSON path, no error quoting the URL's password or the key.
@Suite("ConfigurationLoader: sharedState")
struct ConfigurationLoaderSharedStateTests {
    static let key = Data(repeating: 0xA5, count: 32).base64EncodedString()

    func document(_ sharedState: String) -> String {
        """
        {
          "listener": { "port": 8080 },
          "backends": { "api": { "urls": ["http://127.0.0.1:9100"] } },
          "routes": [ { "name": "all", "pathPrefix": "/", "backend": "api", "auth": "none" } ],
          "sharedState": \(sharedState)
        }
        """
    }

    func load(
        _ sharedState: String, environment: [String: String] = [:], baseDirectory: String = "/nonexistent"
    ) -> Result<GatewayConfiguration, ConfigurationError> {
        do throws(ConfigurationError) {
            return .success(
                try ConfigurationLoader(environment: environment).load(
                    text: self.document(sharedState), baseDirectory: baseDirectory))
        } catch {
            return .failure(error)
        }
    }

    func issues(
        _ sharedState: String, environment: [String: String] = [:], baseDirectory: String = "/nonexistent"
    ) -> [ConfigurationError.Issue] {
        if case .failure(let error) = self.load(sharedState, environment: environment, baseDirectory: baseDirectory) {
            return error.issues
        }
        return []
    }

    @Test func absentMeansProcessLocal() throws {
        let configuration = try ConfigurationLoader(environment: [:]).load(
            text:
                #"{"listener":{},"backends":{"api":{"urls":["http://127.0.0.1:1"]}},"routes":[{"name":"a","pathPrefix":"/","backend":"api","auth":"none"}]}"#,
            baseDirectory: "/"
        )
        #expect(configuration.sharedState == nil)
    }

    @Test func readsTheSectionWithItsDefaults() throws {
        let configuration = try self.load(
            #"{ "postgres": { "url": "postgres://gateway:pw@db.internal/auth" }, "encryptionKeyBase64": "\#(Self.key)" }"#
        ).get()
        let sharedState = try #require(configuration.sharedState)
        #expect(sharedState.postgres.url.host == "db.internal")
        #expect(sharedState.postgres.tls == .require)
        #expect(sharedState.postgres.timeoutMilliseconds == 1000)
        #expect(sharedState.postgres.caCertificatePEMFile == nil)
        #expect(sharedState.encryptionKey.bytes == Array(repeating: 0xA5, count: 32))
        #expect(sharedState.sweepIntervalSeconds == 60)
        #expect(!"\(sharedState)".contains("pw@"))
        #expect("\(sharedState.encryptionKey)" == "<redacted>")
    }

    @Test func takesThePasswordAndTheKeyFromTheEnvironment() throws {
        let configuration = try self.load(
            #"{ "postgres": { "url": "postgres://gateway:${PGPASSWORD}@db.internal/auth", "tls": "disable", "timeoutMilliseconds": 250 }, "encryptionKeyBase64": "${STATE_KEY}", "sweepIntervalSeconds": 5 }"#,
            environment: ["PGPASSWORD": "p@ss/word", "STATE_KEY": Self.key]
        ).get()
        let sharedState = try #require(configuration.sharedState)
        #expect(sharedState.postgres.url.password?.value == "p@ss/word")
        #expect(sharedState.postgres.tls == .disable)
        #expect(sharedState.postgres.timeoutMilliseconds == 250)
        #expect(sharedState.sweepIntervalSeconds == 5)
    }

    @Test func reportsEveryProblemWithItsPathAndNoSecret() {
        let found = self.issues(
            #"{ "postgres": { "url": "mysql://gateway:hunter2@db/auth", "tls": "prefer", "timeoutMilliseconds": 0, "poolSize": 3 }, "encryptionKeyBase64": "c2hvcnQ=", "sweepIntervalSeconds": 0 }"#
        )
        let described = found.map(\.description)
        #expect(
            described.contains("sharedState.postgres.url: must start with postgres:// or postgresql://"), "\(described)"
        )
        #expect(
            described.contains("sharedState.postgres.tls: must be \"disable\", \"require\" or \"verify-full\""),
            "\(described)")
        #expect(
            described.contains("sharedState.postgres.timeoutMilliseconds: must be between 1 and 600000, found 0"),
            "\(described)")
        #expect(described.contains("sharedState.postgres.poolSize: unknown key"), "\(described)")
        #expect(
            described.contains {
                $0.hasPrefix("sharedState.encryptionKeyBase64: must be 32 bytes for AES-256-GCM, found 5")
            }, "\(described)")
        #expect(
            described.contains("sharedState.sweepIntervalSeconds: must be between 1 and 2147483647, found 0"),
            "\(described)")
        #expect(!described.joined().contains("hunter2"))
        #expect(!described.joined().contains("c2hvcnQ"))
    }

    @Test func requiresTheURLAndTheKey() {
        let found = self.issues(#"{ "postgres": {} }"#).map(\.description)
        #expect(found.contains("sharedState.postgres.url: is required"), "\(found)")
        #expect(found.contains("sharedState.encryptionKeyBase64: is required"), "\(found)")
        #expect(
            self.issues(#"{ "encryptionKeyBase64": "\#(Self.key)" }"#).map(\.description) == [
                "sharedState.postgres: is required"
            ])
    }

    @Test func refusesAKeyThatIsNotBase64() {
        let found = self.issues(
            #"{ "postgres": { "url": "postgres://u@h/d" }, "encryptionKeyBase64": "not base64 at all!" }"#)
        #expect(
            found.map(\.description) == [
                "sharedState.encryptionKeyBase64: is not base64 (make one with: openssl rand -base64 32)"
            ])
    }

    @Test func aMissingEnvironmentVariableIsAnError() {
        let found = self.issues(
            #"{ "postgres": { "url": "postgres://u:${PGPASSWORD}@h/d" }, "encryptionKeyBase64": "\#(Self.key)" }"#)
        #expect(found.map(\.description) == ["sharedState.postgres.url: environment variable PGPASSWORD is not set"])
    }

    @Test func checksTheCAFileOnlyForVerifyFull() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shared-state-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "not a certificate".write(
            to: directory.appendingPathComponent("bad.pem"), atomically: true, encoding: .utf8)
        let base = directory.path

        let missing = self.issues(
            #"{ "postgres": { "url": "postgres://u@h/d", "tls": "verify-full", "caCertificatePEMFile": "ca.pem" }, "encryptionKeyBase64": "\#(Self.key)" }"#,
            baseDirectory: base)
        #expect(
            missing.map(\.description) == [
                "sharedState.postgres.caCertificatePEMFile: cannot read \(base)/ca.pem: no such file"
            ])

        let bad = self.issues(
            #"{ "postgres": { "url": "postgres://u@h/d", "tls": "verify-full", "caCertificatePEMFile": "bad.pem" }, "encryptionKeyBase64": "\#(Self.key)" }"#,
            baseDirectory: base)
        #expect(
            bad.map(\.description) == [
                "sharedState.postgres.caCertificatePEMFile: \(base)/bad.pem holds no PEM certificate"
            ])

        let notVerifying = self.issues(
            #"{ "postgres": { "url": "postgres://u@h/d", "tls": "require", "caCertificatePEMFile": "bad.pem" }, "encryptionKeyBase64": "\#(Self.key)" }"#,
            baseDirectory: base)
        #expect(notVerifying.map(\.path) == ["sharedState.postgres.caCertificatePEMFile"])
        #expect(notVerifying.first?.message.contains("applies only to tls \"verify-full\"") == true)

        // verify-full without a CA file uses the system trust store.
        let system = try self.load(
            #"{ "postgres": { "url": "postgres://u@h/d", "tls": "verify-full" }, "encryptionKeyBase64": "\#(Self.key)" }"#
        ).get()
        #expect(system.sharedState?.postgres.tls == .verifyFull)
    }
}
