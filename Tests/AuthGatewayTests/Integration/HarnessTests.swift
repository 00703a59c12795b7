import Foundation
import Testing
import AuthGatewayTesting

/// The test harness's own guarantees (not the gateway's behaviour): children run as another user
/// start in a folder they can enter and their stderr is not read as output; waits on children are
/// bounded.
@Suite("Test harness: child processes", .timeLimit(.minutes(5)))
struct HarnessTests {
    /// A cluster tool run as the unprivileged user starts in the given folder — never in the
    /// test process's working directory (the checkout, perhaps private: psql then printed
    /// `could not change directory … Permission denied`) — and only its standard output is
    /// returned.
    @Test func aToolRunAsAnotherUserStartsInItsFolderAndItsStderrIsNotOutput() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("harness-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let owner = getuid() == 0 ? PostgresCluster.unprivilegedUser() : nil
        let printed = try await onOwnThread {
            try PostgresCluster.execute("/bin/sh", ["-c", "pwd; echo warning >&2"], as: owner, in: folder)
        }
        #expect(printed == folder.resolvingSymlinksInPath().path + "\n")
        #expect(FileManager.default.currentDirectoryPath != folder.path)
        // A failure reports its stderr.
        await #expect {
            try await onOwnThread {
                try PostgresCluster.execute("/bin/sh", ["-c", "echo the-reason >&2; exit 3"], as: owner, in: folder)
            }
        } throws: { error in
            "\(error)".contains("the-reason")
        }
    }

    @Test func aChildStartsInItsOwnFolderNotTheCheckout() async throws {
        let pwd = try #require(ExternalTool.find("pwd"))
        let result = try await ExternalTool.run(pwd, [])
        #expect(result.status == 0)
        let folder = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!folder.isEmpty && folder != FileManager.default.currentDirectoryPath, "\(folder)")
    }

    /// The bound is far above the 300 ms limit and far below the child's own 600 s: a loaded
    /// 2-core machine once took 20 s to spawn, kill and reap (a bound of 20 s failed there), and
    /// a time limit that was not kept would show as a 600 s wait.
    @Test func aChildStillRunningAtItsTimeLimitIsKilledAndFails() async throws {
        let sleep = try #require(ExternalTool.find("sleep"))
        let started = ContinuousClock.now
        await #expect(throws: ChildProcess.TimedOut.self) {
            try await ExternalTool.run(sleep, ["600"], timeout: .milliseconds(300))
        }
        #expect(ContinuousClock.now - started < .seconds(120))
    }

    /// (On a thread of its own, as the cluster runs its commands: a blocked pool thread would
    /// slow the timing-sensitive tests running beside it.)
    @Test func aClusterCommandStillRunningAtItsTimeLimitIsKilledAndFails() async throws {
        let folder = FileManager.default.temporaryDirectory
        let started = ContinuousClock.now
        await #expect {
            try await onOwnThread {
                try PostgresCluster.execute("/bin/sleep", ["600"], as: nil, in: folder, timeout: .milliseconds(300))
            }
        } throws: { error in
            "\(error)".contains("did not finish within")
        }
        #expect(ContinuousClock.now - started < .seconds(120))
    }
}
