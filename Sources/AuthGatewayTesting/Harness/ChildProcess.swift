import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, its standard output and error written to files.
///
/// Not Foundation's `Process`: on Linux its `run()` was seen to crash (a `memcpy` inside it)
/// when the test process held many descriptors, as it does while the suite runs in parallel,
/// and `FileHandle.readDataToEndOfFile` crashes on `EINTR` when a child's exit signal arrives.
/// Here the child inherits no descriptor beyond its three standard ones, output goes to files
/// (read whole once written, whoever else holds them), and every wait retries on `EINTR`.
package final class ChildProcess: @unchecked Sendable {
    package let processIdentifier: pid_t
    package let stdoutPath: String
    package let stderrPath: String
    /// The executable and its first arguments, for messages.
    package let command: String
    private let directory: URL
    /// The `waitpid` status once the child has been reaped.
    private let reaped = NIOLockedValueBox<Int32?>(nil)

    /// Starts `command` (an absolute path first). `stdin`: a file for its standard input
    /// (`/dev/null` when nil); `environment`: added to this process's; `workingDirectory`: where
    /// it starts (when nil, the folder of its output files, which any user can enter — never
    /// the test process's own working directory, the checkout, which may be private to its
    /// owner).
    package init(
        _ command: [String], environment: [String: String] = [:], stdin: String? = nil, workingDirectory: String? = nil
    ) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.stdoutPath = directory.appendingPathComponent("stdout").path
        self.stderrPath = directory.appendingPathComponent("stderr").path
        self.command = command.prefix(3).joined(separator: " ")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, self.stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, self.stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        SpawnActions.closeInheritedDescriptors(&actions)
        var command = command
        let workingDirectory = workingDirectory ?? directory.path
        if !SpawnActions.changeDirectory(&actions, to: workingDirectory) {
            command = SpawnActions.throughShell(command, in: workingDirectory)
        }

        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv = command.map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        guard result == 0 else { throw ProcessHarnessError(description: "cannot start \(command[0]): error \(result)") }
        self.processIdentifier = pid
    }

    deinit {
        try? FileManager.default.removeItem(at: self.directory)
    }

    package var standardOutput: String { Self.read(self.stdoutPath) }
    package var standardError: String { Self.read(self.stderrPath) }

    private static func read(_ path: String) -> String {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    package var isRunning: Bool {
        self.reaped.withLockedValue { reaped in
            guard reaped == nil else { return false }
            var status: Int32 = 0
            let result = waitpid(self.processIdentifier, &status, WNOHANG)
            if result == self.processIdentifier { reaped = status }
            return result == 0
        }
    }

    /// The exit code (128 + the signal for a child killed by one); meaningful once it exited.
    package var terminationStatus: Int32 {
        guard let status = self.reaped.withLockedValue({ $0 }) else { return -1 }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    package func signal(_ number: Int32) {
        if self.isRunning { _ = Glibc.kill(self.processIdentifier, number) }
    }

    /// Blocks the calling thread until the child exits.
    package func waitUntilExit() {
        guard self.reaped.withLockedValue({ $0 }) == nil else { return }
        var status: Int32 = 0
        while true {
            let result = waitpid(self.processIdentifier, &status, 0)
            if result == self.processIdentifier {
                self.reaped.withLockedValue { $0 = status }
                return
            }
            if result == -1 && errno == EINTR { continue }
            // Reaped by `isRunning` meanwhile.
            return
        }
    }

    /// Waits for the exit, for at most `timeout`, on a thread of its own (not the cooperative
    /// pool). A child still running then is killed (SIGKILL, reaped) and the wait throws
    /// `ChildProcess.TimedOut`: no test waits on a hung peer without a bound.
    package func exited(timeout: Duration) async throws {
        let exitedInTime = await onOwnThread { () -> Bool in
            let deadline = ContinuousClock.now + timeout
            while self.isRunning {
                guard ContinuousClock.now < deadline else {
                    self.signal(SIGKILL)
                    self.waitUntilExit()
                    return false
                }
                usleep(5_000)
            }
            return true
        }
        guard exitedInTime else {
            throw TimedOut(command: self.command, timeout: timeout, standardError: self.standardError)
        }
    }

    /// A child that was still running when its time ran out (it has been killed).
    package struct TimedOut: Error, CustomStringConvertible {
        package let command: String
        package let timeout: Duration
        package let standardError: String
        package var description: String {
            "\(self.command) did not exit within \(self.timeout) and was killed; its standard error: \(self.standardError)"
        }
    }
}
