import Foundation
import NIOConcurrencyHelpers

import AuthGateway

/// Why a process-level test could not run or measure what it must.
package struct ProcessHarnessError: Error, CustomStringConvertible {
    package let description: String

    package init(description: String) {
        self.description = description
    }
}

/// `auth-gateway serve` as a child process: the real executable, its signals, its own memory.
package final class RunningGateway: Sendable {
    /// Its standard output and error go to files (`ChildProcess`).
    package let process: ChildProcess
    package let configurationPath: String
    /// The configuration's folder (and the executable's link when run under a prefix):
    /// removed with this object.
    private let directory: URL

    /// The `auth-gateway` executable of this build.
    ///
    /// The test runner is itself a product of the same build, so the executable is its
    /// sibling in the build's products directory (`swift build --show-bin-path`), whatever the
    /// configuration (debug or release), triple or `--scratch-path`: on Linux the runner is
    /// the `…PackageTests.xctest` executable (or the swift-testing runner) in that directory; on
    /// macOS it is the `.xctest` bundle there. Never a hard-coded `.build/debug`.
    package static func executable() throws -> URL {
        var directories: [URL] = []
        if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        if let runner = Bundle.main.executableURL {
            directories.append(runner.deletingLastPathComponent())
            directories.append(runner.resolvingSymlinksInPath().deletingLastPathComponent())
        }
        let runner = URL(fileURLWithPath: CommandLine.arguments.first ?? "")
        if runner.path.hasPrefix("/") { directories.append(runner.deletingLastPathComponent()) }
        for directory in directories {
            let candidate = directory.appendingPathComponent("auth-gateway")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw ProcessHarnessError(
            description: "the auth-gateway executable is not in the build's products directory (looked in: "
                + Set(directories.map(\.path)).sorted().joined(separator: ", ")
                + "); build it with `swift build --build-tests` (or run `swift test`, which builds every product)"
        )
    }

    /// A configuration for a process on 127.0.0.1:0 (no admin listener unless `admin`).
    package static func configuration(
        backendURL: String, drainSeconds: Int, admin: Bool = false, level: String = "info"
    ) -> JSONObject {
        var document = GatewayFixture.baseConfiguration(backendURL: backendURL)
        document.set("timeouts.drainSeconds", .number(JSONNumber(drainSeconds)))
        if !admin { document["admin"] = nil }
        document["logging"] = ["level": .string(level), "accessLog": true]
        return document
    }

    /// How the process is told its configuration file (docs/operations.md).
    package enum Invocation: Sendable {
        /// `auth-gateway serve --config PATH`
        case serveWithConfigOption
        /// `auth-gateway serve` with `AUTH_GATEWAY_CONFIG=PATH` in its environment
        case serveWithEnvironment
        /// `auth-gateway` (no command: `serve` is the default) with `AUTH_GATEWAY_CONFIG=PATH`
        case defaultCommandWithEnvironment
    }

    /// `prefix`: a command the gateway runs under (e.g. `setpriv` to drop privileges);
    /// `environment`: variables added to this process's (for `${NAME}` in the configuration).
    package init(
        configuration: JSONObject, prefix: [String] = [], environment: [String: String] = [:],
        invocation: Invocation = .serveWithConfigOption
    ) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.configurationPath = directory.appendingPathComponent("gateway.json").path
        try JSONValue.object(configuration).jsonText.write(
            toFile: self.configurationPath, atomically: true, encoding: .utf8)
        // Readable by an unprivileged user too.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: self.configurationPath)
        var executable = try Self.executable().path
        if !prefix.isEmpty {
            // Run as another user (the prefix drops privileges), the build's executable may be
            // out of its reach: a checkout private to its owner (a clone under /root, a 0700
            // `mktemp -d`). A link (else a copy) in this world-readable folder is not.
            executable = try Self.reachableCopy(of: executable, in: directory)
        }
        var environment = environment
        let arguments: [String]
        switch invocation {
        case .serveWithConfigOption:
            arguments = ["serve", "--config", self.configurationPath]
        case .serveWithEnvironment:
            arguments = ["serve"]
            environment["AUTH_GATEWAY_CONFIG"] = self.configurationPath
        case .defaultCommandWithEnvironment:
            arguments = []
            environment["AUTH_GATEWAY_CONFIG"] = self.configurationPath
        }
        self.process = try ChildProcess(
            prefix + [executable] + arguments, environment: environment, workingDirectory: directory.path)
    }

    deinit {
        // Its process has exited or been killed by now (every test stops what it started); a
        // thousand test runs' folders stayed behind in the temporary directory before.
        try? FileManager.default.removeItem(at: self.directory)
    }

    private static func reachableCopy(of executable: String, in directory: URL) throws -> String {
        let target = directory.appendingPathComponent("auth-gateway").path
        do {
            try FileManager.default.linkItem(atPath: executable, toPath: target)
        } catch {
            try FileManager.default.copyItem(atPath: executable, toPath: target)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: target)
        return target
    }

    /// Everything written so far, both streams.
    package var output: String { self.standardOutput + self.standardError }
    /// Standard output: the access log.
    package var standardOutput: String { self.process.standardOutput }
    /// Standard error: the application log.
    package var standardError: String { self.process.standardError }

    package var pid: Int32 { self.process.processIdentifier }

    package func rewrite(_ configuration: JSONObject) throws {
        try JSONValue.object(configuration).jsonText.write(
            toFile: self.configurationPath, atomically: true, encoding: .utf8)
    }

    /// The main listener's port, from the `gateway.listening` log line.
    package func waitForPort(timeout: Duration = .seconds(30)) async throws -> Int {
        try await self.waitForListeningPort(key: "listener.address", timeout: timeout)
    }

    /// The admin listener's port, from the `gateway.listening` log line.
    package func waitForAdminPort(timeout: Duration = .seconds(30)) async throws -> Int {
        try await self.waitForListeningPort(key: "admin.address", timeout: timeout)
    }

    private func waitForListeningPort(key: String, timeout: Duration) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = self.output.split(separator: "\n").first(where: { $0.contains("gateway.listening") }),
                let range = line.range(of: key + #"=\S+:(\d+)"#, options: .regularExpression)
            {
                let match = line[range]
                if let port = Int(match.split(separator: ":").last ?? "") { return port }
            }
            guard self.process.isRunning else {
                throw ProcessHarnessError(description: "auth-gateway exited before listening:\n\(self.output)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ProcessHarnessError(description: "auth-gateway logged no \(key) within \(timeout):\n\(self.output)")
    }

    /// Waits until `condition` holds for the combined output.
    @discardableResult
    package func waitForOutput(timeout: Duration = .seconds(30), _ condition: (String) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(self.output) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition(self.output)
    }

    package func signal(_ number: Int32) {
        self.process.signal(number)
    }

    package func waitForExit(timeout: Duration) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while self.process.isRunning {
            guard ContinuousClock.now < deadline else {
                throw ProcessHarnessError(description: "auth-gateway did not exit within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return self.process.terminationStatus
    }

    package func kill() {
        if self.process.isRunning { self.signal(SIGKILL) }
    }

    /// The process's resident memory (`VmRSS` of `/proc/<pid>/status`), in bytes. Throws —
    /// never returns a harmless 0 — when it cannot be read, so a memory assertion cannot pass
    /// by measuring nothing.
    package func residentMemoryBytes() throws -> Int {
        try Self.residentMemoryBytes(pid: self.pid)
    }

    package static func residentMemoryBytes(pid: Int32) throws -> Int {
        try Self.statusKilobytes("VmRSS", pid: pid) * 1024
    }

    /// The process's peak resident memory (`VmHWM` of `/proc/<pid>/status`), in bytes: the
    /// highest it has been since the process started or since `resetPeakResidentMemory()`.
    /// Exact where sampling `VmRSS` could miss a short spike. Throws when it cannot be read.
    package func peakResidentMemoryBytes() throws -> Int {
        try Self.statusKilobytes("VmHWM", pid: self.pid) * 1024
    }

    /// Starts a new peak: writing "5" to `/proc/<pid>/clear_refs` sets `VmHWM` back to the
    /// current resident size (Linux 4.0 and later). Throws when the file cannot be written (a
    /// kernel or container that does not allow it).
    package func resetPeakResidentMemory() throws {
        let path = "/proc/\(self.pid)/clear_refs"
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw ProcessHarnessError(description: "cannot open \(path) for writing")
        }
        defer { try? handle.close() }
        try handle.write(contentsOf: Data("5".utf8))
    }

    /// A `kB` field of `/proc/<pid>/status`, e.g. "VmRSS:     12345 kB".
    private static func statusKilobytes(_ field: String, pid: Int32) throws -> Int {
        let path = "/proc/\(pid)/status"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ProcessHarnessError(description: "cannot read \(path): memory checks need Linux /proc")
        }
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else {
            throw ProcessHarnessError(description: "\(path) has no \(field) line")
        }
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count == 3, fields[2] == "kB", let kilobytes = Int(fields[1]), kilobytes > 0 else {
            throw ProcessHarnessError(description: "unexpected \(field) line in \(path): \(line)")
        }
        return kilobytes
    }
}
