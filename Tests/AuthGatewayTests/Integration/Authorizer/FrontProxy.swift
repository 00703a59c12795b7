import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// A real nginx (`auth_request`) or Caddy (`forward_auth`) in front of the gateway, configured
/// with the snippet docs/authorizer.md shows: the test reads it from the doc (the fenced block
/// after `<!-- tested: nginx -->` or `<!-- tested: caddy -->`) and only puts its own ports in
/// place of the doc's (gateway 127.0.0.1:8080, application 127.0.0.1:9000, proxy 8000; Caddy's
/// site, for any host as in the doc, bound to 127.0.0.1), so the documented configuration is
/// the one that works here.
///
/// Everything lives in a temporary folder; the proxy listens on 127.0.0.1 on a port below the
/// ephemeral range (another one when it cannot bind), runs in the foreground (`daemon off`,
/// `caddy run`), and is stopped with SIGTERM then waited for (SIGKILL after 10 s). A missing
/// binary fails the test with how to install it.
final class FrontProxy: Sendable {
    enum Kind: String, Sendable {
        case nginx
        case caddy

        var debianPackage: String { self.rawValue }
    }

    let kind: Kind
    let port: Int
    let directory: URL
    private let process: ChildProcess

    var log: String { self.process.standardOutput + self.process.standardError + self.errorLog }
    private var errorLog: String {
        (try? String(contentsOf: self.directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    private init(kind: Kind, port: Int, directory: URL, process: ChildProcess) {
        self.kind = kind
        self.port = port
        self.directory = directory
        self.process = process
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let docPath = ProcessTests.packageRoot.appendingPathComponent("docs/authorizer.md").path

    /// The fenced block after `<!-- tested: <kind> -->` in docs/authorizer.md.
    static func snippet(_ kind: Kind) throws -> String {
        let text = try String(contentsOfFile: Self.docPath, encoding: .utf8)
        guard let marker = text.range(of: "<!-- tested: \(kind.rawValue) -->"),
            let open = text.range(of: "```", range: marker.upperBound..<text.endIndex),
            let lineEnd = text.range(of: "\n", range: open.upperBound..<text.endIndex),
            let close = text.range(of: "\n```", range: lineEnd.upperBound..<text.endIndex)
        else { throw Failure(description: "docs/authorizer.md has no block marked <!-- tested: \(kind.rawValue) -->") }
        return String(text[lineEnd.upperBound..<close.lowerBound])
    }

    /// The snippet with this test's ports in place of the doc's.
    static func configured(_ snippet: String, gatewayPort: Int, backendPort: Int, port: Int) -> String {
        snippet.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(gatewayPort)")
            .replacingOccurrences(of: "127.0.0.1:9000", with: "127.0.0.1:\(backendPort)")
            .replacingOccurrences(of: "listen 8000;", with: "listen 127.0.0.1:\(port);")
            // Any host, as the doc's site: only bound to loopback (`http://127.0.0.1:…` would
            // also make it a site for the host 127.0.0.1 only, and answer others empty).
            .replacingOccurrences(of: "http://:8000 {", with: "http://:\(port) {\n    bind 127.0.0.1")
    }

    /// The binary; a missing one fails the test with the package that installs it.
    static func executable(_ kind: Kind) throws -> String {
        // Debian puts nginx in /usr/sbin, which an unprivileged PATH may lack.
        let sbin = "/usr/sbin/\(kind.rawValue)"
        return FileManager.default.isExecutableFile(atPath: sbin)
            ? sbin : try ExternalTool.require(kind.rawValue, package: kind.debianPackage)
    }

    static func start(_ kind: Kind, gatewayPort: Int, backendPort: Int) async throws -> FrontProxy {
        let executable = try Self.executable(kind)
        let snippet = try Self.snippet(kind)
        let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("agproxy-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // nginx's workers run as nobody when the tests run as root: they write their temp files here.
        _ = chmod(directory.path, 0o777)
        var failures: [String] = []
        for _ in 0..<5 {
            let port = PostgresCluster.candidatePort()
            let config = Self.configured(snippet, gatewayPort: gatewayPort, backendPort: backendPort, port: port)
            let process = try Self.launch(kind, executable: executable, config: config, directory: directory)
            let proxy = FrontProxy(kind: kind, port: port, directory: directory, process: process)
            if await proxy.waitUntilListening() { return proxy }
            let log = proxy.log
            await proxy.stopProcess()
            failures.append("port \(port): \(log.suffix(600))")
            guard log.contains("in use") else { break }
        }
        try? FileManager.default.removeItem(at: directory)
        throw Failure(description: "\(kind.rawValue) did not start: \(failures.joined(separator: "; "))")
    }

    /// Starts `kind` in the foreground with `config` (what goes inside nginx's `http { }`, or
    /// Caddyfile sites) in `directory`. Also used by the request-target tests' location servers.
    static func launch(_ kind: Kind, executable: String, config: String, directory: URL) throws -> ChildProcess {
        let path = directory.path
        switch kind {
        case .nginx:
            let file = directory.appendingPathComponent("nginx.conf")
            let whole = """
                daemon off;
                worker_processes 1;
                pid \(path)/nginx.pid;
                error_log \(path)/error.log warn;
                events { worker_connections 256; }
                http {
                    access_log off;
                    client_body_temp_path \(path)/client_body;
                    proxy_temp_path \(path)/proxy;
                    fastcgi_temp_path \(path)/fastcgi;
                    uwsgi_temp_path \(path)/uwsgi;
                    scgi_temp_path \(path)/scgi;
                \(config)
                }

                """
            try whole.write(to: file, atomically: true, encoding: .utf8)
            return try ChildProcess([executable, "-p", path, "-e", "\(path)/error.log", "-c", file.path])
        case .caddy:
            let file = directory.appendingPathComponent("Caddyfile")
            let whole = """
                {
                    admin off
                    auto_https off
                }
                \(config)

                """
            try whole.write(to: file, atomically: true, encoding: .utf8)
            return try ChildProcess(
                [executable, "run", "--config", file.path, "--adapter", "caddyfile"],
                environment: [
                    "HOME": path, "XDG_DATA_HOME": "\(path)/data", "XDG_CONFIG_HOME": "\(path)/config",
                ])
        }
    }

    /// Bounded wait (20 s) until the proxy accepts a connection; false when it exited first.
    private func waitUntilListening() async -> Bool {
        let port = self.port
        return await eventually(timeout: .seconds(20)) {
            guard self.process.isRunning else { return true }
            return (try? await Self.probe(port: port)) == true
        } && self.process.isRunning
    }

    private static func probe(port: Int) async throws -> Bool {
        let connection = try await TestConnection.connect(port: port)
        await connection.close()
        return true
    }

    private func stopProcess() async {
        self.process.signal(SIGTERM)
        try? await self.process.exited(timeout: .seconds(10))
    }

    func stop() async {
        await self.stopProcess()
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// One request through the proxy, on a fresh connection.
    func send(_ request: TestRequest) async throws -> TestResponse {
        let connection = try await TestConnection.connect(port: self.port)
        return try await withCleanup({ await connection.close() }) { () async throws in
            try await connection.send(request)
        }
    }
}
