import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// A real server that says which of its `location`s served a request, and the path as it
/// resolved it: nginx, Caddy or Python's `http.server`, each reading the path its own way
/// (docs/forwarding.md, "Request targets"). Every listener `i` answers one line:
///
///     <location> <i> <path as the server resolved it>
///
/// with `<location>` one of `public` (under `/public/`), `admin` (under `/admin/`) and `open`
/// (anything else): nginx `location /public/ { return 200 "public i $uri"; }`, Caddy
/// `handle /public/* { respond "public i {path}" }`, Python `SimpleHTTPRequestHandler.translate_path`
/// (`Fixtures/targets/location_server.py`). nginx also has *virtual-host* listeners: two
/// `server`s on one port, `server_name admin.example.com` (answering `admin-host i $host`) and
/// the default server (`default-host i $host`).
///
/// Each listener stands for one route's backend, so the listener that answers is the route the
/// gateway chose, and the location is what the server made of the path it received.
///
/// On 127.0.0.1 only; nginx and Caddy on ports below the ephemeral range (others when one is
/// taken), Python on ports the system picks; stopped with SIGTERM and awaited. A missing binary
/// fails the test with the package that installs it (never a skip).
final class LocationServer: Sendable {
    enum Kind: String, Sendable, CaseIterable, CustomStringConvertible {
        case nginx
        case caddy
        case python

        var description: String { self.rawValue }
    }

    static let locations = ["public", "admin", "open"]

    let kind: Kind
    /// Listener `i`'s port.
    let ports: [Int]
    /// nginx only: virtual-host listener `i`'s port.
    let virtualHostPorts: [Int]
    private let stopper: @Sendable () async -> Void

    private init(kind: Kind, ports: [Int], virtualHostPorts: [Int], stopper: @escaping @Sendable () async -> Void) {
        self.kind = kind
        self.ports = ports
        self.virtualHostPorts = virtualHostPorts
        self.stopper = stopper
    }

    func stop() async { await self.stopper() }

    static let script = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/targets/location_server.py"
    ).path

    static func start(_ kind: Kind, listeners: Int, virtualHostListeners: Int = 0) async throws -> LocationServer {
        switch kind {
        case .python:
            precondition(virtualHostListeners == 0, "virtual hosts are nginx's")
            let python = try ExternalTool.require("python3", package: "python3")
            let tool = try BackgroundTool(python, [Self.script, String(listeners)])
            let line: String
            do {
                line = try await tool.firstLine()
            } catch {
                await tool.stop()
                throw error
            }
            let ports = try JSONValue(parsing: line)["ports"]?.arrayValue?.compactMap { $0.numberValue?.exactInt } ?? []
            guard ports.count == listeners else {
                await tool.stop()
                throw FrontProxy.Failure(description: "location_server.py printed \(line)")
            }
            return LocationServer(kind: kind, ports: ports, virtualHostPorts: [], stopper: { await tool.stop() })
        case .nginx, .caddy:
            precondition(kind == .nginx || virtualHostListeners == 0, "virtual hosts are nginx's")
            let proxyKind: FrontProxy.Kind = kind == .nginx ? .nginx : .caddy
            let executable = try FrontProxy.executable(proxyKind)
            var failures: [String] = []
            for _ in 0..<5 {
                let chosen = Self.distinctPorts(listeners + virtualHostListeners)
                let ports = Array(chosen.prefix(listeners))
                let hostPorts = Array(chosen.dropFirst(listeners))
                let config =
                    kind == .nginx
                    ? Self.nginxConfig(ports: ports, virtualHostPorts: hostPorts) : Self.caddyConfig(ports: ports)
                let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent(
                    "aglocation-\(UUID().uuidString.prefix(8))")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                // nginx's workers run as nobody when the tests run as root.
                _ = chmod(directory.path, 0o777)
                let process = try FrontProxy.launch(
                    proxyKind, executable: executable, config: config, directory: directory)
                let stop: @Sendable () async -> Void = {
                    process.signal(SIGTERM)
                    try? await process.exited(timeout: .seconds(10))
                    try? FileManager.default.removeItem(at: directory)
                }
                let listening = await eventually(timeout: .seconds(20)) {
                    guard process.isRunning else { return true }
                    for port in chosen where !(await acceptsConnections(port: port)) { return false }
                    return true
                }
                if listening && process.isRunning {
                    return LocationServer(kind: kind, ports: ports, virtualHostPorts: hostPorts, stopper: stop)
                }
                let errorLog =
                    (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
                let log = process.standardOutput + process.standardError + errorLog
                await stop()
                failures.append("ports \(chosen): \(log.suffix(600))")
                guard log.contains("in use") else { break }
            }
            throw FrontProxy.Failure(description: "\(kind) did not start: \(failures.joined(separator: "; "))")
        }
    }

    private static func distinctPorts(_ count: Int) -> [Int] {
        var ports: [Int] = []
        while ports.count < count {
            let port = PostgresCluster.candidatePort()
            if !ports.contains(port) { ports.append(port) }
        }
        return ports
    }

    /// One `server` per listener with a `location` per route; per virtual-host listener, the
    /// default server and `server_name admin.example.com`.
    static func nginxConfig(ports: [Int], virtualHostPorts: [Int]) -> String {
        var text = ""
        for (index, port) in ports.enumerated() {
            text += """
                server {
                    listen 127.0.0.1:\(port);
                    location /public/ { return 200 "public \(index) $uri\\n"; }
                    location /admin/ { return 200 "admin \(index) $uri\\n"; }
                    location / { return 200 "open \(index) $uri\\n"; }
                }

                """
        }
        for (index, port) in virtualHostPorts.enumerated() {
            text += """
                server {
                    listen 127.0.0.1:\(port) default_server;
                    location / { return 200 "default-host \(index) $host $uri\\n"; }
                }
                server {
                    listen 127.0.0.1:\(port);
                    server_name admin.example.com;
                    location / { return 200 "admin-host \(index) $host $uri\\n"; }
                }

                """
        }
        return text
    }

    /// One site per listener, any host, with a `handle` per route (Caddy sorts them by path,
    /// the catch-all last).
    static func caddyConfig(ports: [Int]) -> String {
        var text = ""
        for (index, port) in ports.enumerated() {
            text += """
                http://:\(port) {
                    bind 127.0.0.1
                    handle /public/* {
                        respond "public \(index) {path}" 200
                    }
                    handle /admin/* {
                        respond "admin \(index) {path}" 200
                    }
                    handle {
                        respond "open \(index) {path}" 200
                    }
                }

                """
        }
        return text
    }

    /// What one of these servers said: its location (or virtual host), the listener, and the
    /// rest of the line (the path, or the host and path, as it resolved them).
    struct Reading: Equatable, Sendable, CustomStringConvertible {
        var location: String
        var listener: Int
        var resolved: String

        /// The first line of a 200 answer's body, if it is one of these servers'.
        init?(_ response: RawResponse) {
            guard response.status == 200 else { return nil }
            let line = response.text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, let listener = Int(parts[1]) else { return nil }
            self.location = String(parts[0])
            self.listener = listener
            self.resolved = parts.count > 2 ? String(parts[2]) : ""
        }

        var description: String { "\(self.location) \(self.resolved)" }
    }
}
