import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `posix_spawn` file actions every harness child gets: a working directory of its own and
/// none of the test process's descriptors.
package enum SpawnActions {
    /// Starts the child in `directory` (glibc's `posix_spawn_file_actions_addchdir_np`, 2.29+,
    /// which Swift's Glibc module does not export). Every child gets a folder it can enter:
    /// inheriting the test process's working directory (the checkout) breaks a child run as
    /// another user when the checkout is private to its owner (`psql` then prints
    /// `could not change directory to "…": Permission denied`). False when the C library lacks
    /// the function; the caller then starts the child through `/bin/sh -c 'cd …'`.
    package static func changeDirectory(_ actions: inout posix_spawn_file_actions_t, to directory: String) -> Bool {
        typealias AddChdir =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addchdir_np") else { return false }
        return directory.withCString { unsafeBitCast(symbol, to: AddChdir.self)(&actions, $0) } == 0
    }

    /// `command` started in `directory` by a shell, for a C library without
    /// `posix_spawn_file_actions_addchdir_np`.
    package static func throughShell(_ command: [String], in directory: String) -> [String] {
        ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory] + command
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which Swift's Glibc module
    /// does not export: the child keeps nothing of the test process's descriptors (hundreds of
    /// sockets while the whole suite runs; a PostgreSQL server counts inherited descriptors
    /// against its limit and refuses to start).
    package static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
    }

    /// Polls `waitpid(pid, WNOHANG)` until the child exits or `timeout` passes: its `waitpid`
    /// status, or nil when it still runs. Blocks the calling thread (call it on a thread of
    /// its own, never on the cooperative pool).
    package static func waitForExit(_ pid: pid_t, timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return status }
            // Not ours to wait for (cannot happen for a child only this code waits for):
            // reported as a failed exit (255), never as a success.
            if result == -1 && errno != EINTR { return 255 << 8 }
            if ContinuousClock.now >= deadline { return nil }
            usleep(5_000)
        }
    }

    /// SIGKILL and reap (after a wait that ran out).
    package static func killAndReap(_ pid: pid_t) {
        _ = Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }
}
