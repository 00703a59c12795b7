import Foundation
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// The real WebSocket peers of the streams tests (Python `websockets`,
/// `Fixtures/websocket/ws_peer.py`): a backend that reports each tunnel's open and the close
/// code it received, and a client that reports the close code it received.
struct WebSocketPeers {
    static let script = ProcessTests.packageRoot.appendingPathComponent(
        "Tests/AuthGatewayTests/Fixtures/websocket/ws_peer.py"
    ).path

    static func python() throws -> String {
        let python = try ExternalTool.require("python3", package: "python3")
        guard FileManager.default.fileExists(atPath: Self.script) else { throw ExternalTool.Missing(name: Self.script) }
        return python
    }

    /// A running WebSocket backend.
    struct Backend {
        let tool: BackgroundTool
        let port: Int

        var url: String { "http://127.0.0.1:\(self.port)" }

        /// Its events so far (one JSON object per line after `READY`).
        var events: [JSONValue] {
            self.tool.lines.dropFirst().compactMap { try? JSONValue(parsing: $0) }
        }

        /// The tunnels it saw opened, and those it saw closed.
        var opened: [JSONValue] { self.events.filter { $0["event"]?.stringValue == "open" } }
        var closed: [JSONValue] { self.events.filter { $0["event"]?.stringValue == "closed" } }

        func stop() async { await self.tool.stop() }
    }

    /// Starts a backend; stopped when the test ends.
    static func backend() async throws -> Backend {
        let tool = try BackgroundTool(try Self.python(), [Self.script, "server"])
        atTestEnd { await tool.stop() }
        let ready = try await tool.firstLine()
        if tool.output.contains("No module named 'websockets'") || ready.contains("ModuleNotFoundError") {
            Issue.record(
                "Python websockets is not installed: pip install websockets (or run .ci/run, which installs it)")
        }
        let port = try #require(
            ready.hasPrefix("READY ") ? Int(ready.dropFirst(6)) : nil, "ws_peer.py printed \(ready)")
        return Backend(tool: tool, port: port)
    }

    /// Runs one client tunnel through `port` to `path` until it closes (or `timeout`); its
    /// report. `token`: as `Authorization: Bearer`; `protocolToken`: base64url after `prefix` in
    /// `Sec-WebSocket-Protocol`; `cookie`: a `Cookie` header.
    static func client(
        port: Int, path: String, token: String? = nil, protocolToken: (prefix: String, token: String)? = nil,
        protocols: [String] = [], cookie: String? = nil, timeout: Double = 20
    ) async throws -> JSONValue {
        var arguments = [Self.script, "client", "ws://127.0.0.1:\(port)\(path)", "--timeout", String(timeout)]
        if let token { arguments += ["--token", token] }
        if let protocolToken { arguments += ["--protocol-token", protocolToken.prefix, protocolToken.token] }
        if !protocols.isEmpty { arguments += ["--protocols", protocols.joined(separator: ",")] }
        if let cookie { arguments += ["--cookie", cookie] }
        let result = try await ExternalTool.run(try Self.python(), arguments, timeout: .seconds(Int64(timeout) + 60))
        if result.stderr.contains("No module named 'websockets'") {
            Issue.record(
                "Python websockets is not installed: pip install websockets (or run .ci/run, which installs it)")
        }
        return try #require(
            try? JSONValue(parsing: result.stdout), "ws_peer.py client: \(result.stdout) \(result.stderr)")
    }
}
