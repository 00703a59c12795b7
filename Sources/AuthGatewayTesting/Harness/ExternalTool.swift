import Foundation

/// Runs a command-line peer (curl, nghttp, h2load, python3) the tests use as an independent
/// implementation. A missing tool fails the test (a thrown `Missing`) with how to install it: these tests never
/// pass silently on a machine without the peer (`.ci/run` installs them).
package enum ExternalTool {
    package struct Result: Sendable {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    /// The tool's path on PATH, or nil.
    package static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = "\(folder)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The tool's path; throws (failing the test) naming the Debian package when it is missing.
    package static func require(_ name: String, package: String) throws -> String {
        guard let path = Self.find(name) else { throw Missing(name: name, package: package) }
        return path
    }

    /// A peer that is not there; `package`: the Debian package that installs it.
    package struct Missing: Error, CustomStringConvertible {
        package let name: String
        package let debianPackage: String?

        package init(name: String, package: String? = nil) {
            self.name = name
            self.debianPackage = package
        }

        package var description: String {
            guard let package = self.debianPackage else {
                return "\(self.name) is missing (run .ci/run, which installs the test peers)"
            }
            return "\(self.name) is not installed: apt-get install -y \(package) (or run .ci/run, which installs it)"
        }
    }

    /// Runs `executable` with `arguments` to completion (`input`, when given, is its standard
    /// input), waiting on a thread of its own for at most `timeout`: a peer still running then
    /// is killed and the run throws `ChildProcess.TimedOut`, which fails the test.
    package static func run(
        _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:],
        timeout: Duration = .seconds(120)
    ) async throws -> Result {
        var inputPath: String?
        if let input {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("input-\(UUID().uuidString)").path
            guard FileManager.default.createFile(atPath: path, contents: input) else {
                throw ProcessHarnessError(description: "cannot write \(path)")
            }
            inputPath = path
        }
        defer { if let inputPath { try? FileManager.default.removeItem(atPath: inputPath) } }
        let child = try ChildProcess([executable] + arguments, environment: environment, stdin: inputPath)
        try await child.exited(timeout: timeout)
        return Result(status: child.terminationStatus, stdout: child.standardOutput, stderr: child.standardError)
    }
}

/// A peer process that runs beside a test (a gRPC server): started, asked for the first line
/// it prints, stopped with SIGTERM.
package final class BackgroundTool: Sendable {
    private let child: ChildProcess

    package init(_ executable: String, _ arguments: [String]) throws {
        self.child = try ChildProcess([executable] + arguments)
    }

    /// The first line of its output, polled for up to `timeout`.
    package func firstLine(timeout: Duration = .seconds(20)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let output = self.child.standardOutput
            if let newline = output.firstIndex(of: "\n") { return String(output[..<newline]) }
            guard self.child.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ProcessHarnessError(description: "no output line from the peer: \(self.child.standardError)")
    }

    /// Everything it has printed so far (a peer that reports events line by line).
    package var output: String { self.child.standardOutput }

    /// What it has printed on standard error so far.
    package var errorOutput: String { self.child.standardError }

    /// The lines it has printed so far.
    package var lines: [String] { self.output.split(separator: "\n").map(String.init) }

    /// SIGTERM, then SIGKILL if it is still there after two seconds (waited for on a thread of
    /// its own, not the cooperative pool's).
    package func stop() async {
        let child = self.child
        await onOwnThread {
            child.signal(SIGTERM)
            for _ in 0..<200 where child.isRunning { usleep(10_000) }
            child.signal(SIGKILL)
            child.waitUntilExit()
        }
    }
}
