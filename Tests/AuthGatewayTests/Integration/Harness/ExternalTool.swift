import Foundation
import Testing

/// Runs a command-line peer (curl, nghttp, h2load, python3) the tests use as an independent
/// implementation. A missing tool fails the test with how to install it: these tests never
/// pass silently on a machine without the peer (`.ci/run` installs them).
enum ExternalTool {
    struct Result: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The tool's path on PATH, or nil.
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = "\(folder)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The tool's path; records an issue naming the Debian package when it is missing.
    static func require(_ name: String, package: String) throws -> String {
        guard let path = Self.find(name) else {
            Issue.record("\(name) is not installed: apt-get install -y \(package) (or run .ci/run, which installs it)")
            throw Missing(name: name)
        }
        return path
    }

    /// Written by the reader thread before it signals, read after the wait.
    private final class ErrorOutput: @unchecked Sendable {
        var data = Data()
    }

    struct Missing: Error {
        let name: String
    }

    /// Runs `executable` with `arguments` to completion, off the cooperative thread pool.
    static func run(_ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: executable)
                    process.arguments = arguments
                    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
                    let stdout = Pipe()
                    let stderr = Pipe()
                    let stdin = Pipe()
                    process.standardOutput = stdout
                    process.standardError = stderr
                    process.standardInput = stdin
                    try process.run()
                    if let input { stdin.fileHandleForWriting.write(input) }
                    try? stdin.fileHandleForWriting.close()
                    // Read both pipes while the process runs (a full pipe would block it).
                    let errorBox = ErrorOutput()
                    let done = DispatchSemaphore(value: 0)
                    Thread.detachNewThread {
                        errorBox.data = stderr.fileHandleForReading.readDataToEndOfFile()
                        done.signal()
                    }
                    let outputData = stdout.fileHandleForReading.readDataToEndOfFile()
                    done.wait()
                    let errorData = errorBox.data
                    process.waitUntilExit()
                    continuation.resume(
                        returning: Result(
                            status: process.terminationStatus, stdout: String(decoding: outputData, as: UTF8.self), stderr: String(decoding: errorData, as: UTF8.self)
                        )
                    )
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
