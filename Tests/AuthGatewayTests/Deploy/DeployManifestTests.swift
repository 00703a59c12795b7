import Foundation
import Testing

@testable import AuthGateway

/// What `deploy/` ships stays in step with the code: the Kubernetes ConfigMap's gateway.json
/// loads (with the Secret's files and environment values, as the pod sees them), and every
/// metric the Grafana dashboard queries exists. `deploy/validate.sh` checks more (a real
/// `/metrics` scrape, label values) but needs a release build; this runs with `swift test`.
@Suite("deploy/ manifests")
struct DeployManifestTests {
    static let deploy = ProcessTests.packageRoot.appendingPathComponent("deploy")

    /// The lines of the YAML block scalar `key: |` (indented two spaces under its map), with
    /// the block's own indentation removed.
    static func blockScalar(_ key: String, in yaml: String) -> String? {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0 == "  \(key): |" }) else { return nil }
        var block: [Substring] = []
        for line in lines[(start + 1)...] {
            if line.isEmpty {
                block.append("")
                continue
            }
            guard line.hasPrefix("    ") else { break }
            block.append(line.dropFirst(4))
        }
        return block.joined(separator: "\n")
    }

    /// The value of the YAML string `key: "value"` (indented two spaces).
    static func quotedValue(_ key: String, in yaml: String) -> String? {
        let prefix = "  \(key): \""
        guard let line = yaml.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }), line.hasSuffix("\"") else {
            return nil
        }
        return String(line.dropFirst(prefix.count).dropLast())
    }

    @Test func theConfigMapsConfigurationLoadsWithTheSecretsFilesAndValues() throws {
        let configMap = try String(
            contentsOf: Self.deploy.appendingPathComponent("kubernetes/configmap.yaml"), encoding: .utf8)
        let secret = try String(
            contentsOf: Self.deploy.appendingPathComponent("kubernetes/secret.yaml"), encoding: .utf8)
        let json = try #require(Self.blockScalar("gateway.json", in: configMap))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("deploy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("keys"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for file in ["auth-service.pub.pem", "postgres-ca.pem"] {
            let contents = try #require(Self.blockScalar(file, in: secret), "secret.yaml has no \(file)")
            try contents.write(to: directory.appendingPathComponent("keys/\(file)"), atomically: true, encoding: .utf8)
        }
        try json.write(to: directory.appendingPathComponent("gateway.json"), atomically: true, encoding: .utf8)
        var environment: [String: String] = [:]
        for name in ["AUTH_GATEWAY_DATABASE_URL", "AUTH_GATEWAY_STATE_KEY", "AUTH_CLIENT_SECRET"] {
            let value = try #require(Self.quotedValue(name, in: secret), "secret.yaml has no \(name)")
            environment[name] = value
        }
        let configuration = try ConfigurationLoader(environment: environment).load(
            path: directory.appendingPathComponent("gateway.json").path)
        // What the Deployment relies on: both listeners reachable in the pod, shared state on.
        #expect(configuration.listener.host == "0.0.0.0")
        #expect(configuration.admin?.host == "0.0.0.0")
        #expect(configuration.sharedState != nil)
    }

    @Test func everyMetricTheDashboardQueriesExists() throws {
        let dashboard = try String(
            contentsOf: Self.deploy.appendingPathComponent("grafana/auth-gateway.json"), encoding: .utf8)
        let families = Set(MetricName.families.map(\.name))
        let histograms = Set(MetricName.families.filter { $0.type == "histogram" }.map(\.name))
        let queried = Set(dashboard.matches(of: /auth_gateway_[a-z0-9_]+/).map { String($0.output) })
        #expect(queried.count >= 10, "the dashboard queries \(queried.sorted())")
        for name in queried.sorted() {
            let histogram = ["_bucket", "_sum", "_count"].contains {
                name.hasSuffix($0) && histograms.contains(String(name.dropLast($0.count)))
            }
            #expect(families.contains(name) || histogram, "\(name) is not a metric the gateway exports")
        }
    }
}
