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

/// A peer process that runs beside a test (a gRPC server): started, asked for the first line
/// it prints, stopped by closing its standard input (then SIGTERM).
final class BackgroundTool: @unchecked Sendable {
    private let process = Process()
    private let stdin = Pipe()
    private let stdout = Pipe()

    init(_ executable: String, _ arguments: [String]) throws {
        self.process.executableURL = URL(fileURLWithPath: executable)
        self.process.arguments = arguments
        self.process.standardInput = self.stdin
        self.process.standardOutput = self.stdout
        self.process.standardError = FileHandle.nullDevice
        try self.process.run()
    }

    /// The first line of its output (blocking a thread of its own, up to `timeout`).
    func firstLine(timeout: Duration = .seconds(20)) async throws -> String {
        let handle = self.stdout.fileHandleForReading
        let line: String? = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var bytes: [UInt8] = []
                while true {
                    let data = handle.readData(ofLength: 1)
                    guard let byte = data.first else { break }
                    if byte == UInt8(ascii: "\n") { break }
                    bytes.append(byte)
                }
                continuation.resume(returning: bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self))
            }
        }
        guard let line else { throw ExternalTool.Missing(name: "output of \(self.process.executableURL?.lastPathComponent ?? "tool")") }
        return line
    }

    func stop() {
        try? self.stdin.fileHandleForWriting.close()
        if self.process.isRunning { self.process.terminate() }
        self.process.waitUntilExit()
    }
}
