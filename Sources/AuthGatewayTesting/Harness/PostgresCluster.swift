import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A throwaway PostgreSQL cluster for the shared-state tests: `initdb` into a temporary
/// folder, `pg_ctl start` on a free loopback port (its unix socket in the same folder), TLS on
/// with a certificate from a test CA made by `openssl`, a `gateway` role with a password.
/// PostgreSQL refuses to run as root, so under root (as CI runs) the folder belongs to, and
/// the server binaries run as, the `postgres` user (else `nobody`).
///
/// When the server binaries are missing the tests fail with how to install them; they never
/// pass without a database.
package final class PostgresCluster: Sendable {
    package static let gatewayRole = "gateway"
    package static let gatewayPassword = "gateway-pw-\(UUID().uuidString.prefix(8))"
    package static let superuser = "postgres"

    package let directory: URL
    package let binaries: URL
    /// The server's TCP port (chosen once, when the cluster first starts; kept on restarts).
    package var port: Int { self.chosenPort.withLockedValue { $0 } }
    private let chosenPort = NIOLockedValueBox(0)
    private let owner: (uid: UInt32, gid: UInt32)?
    private let databases = NIOLockedValueBox(0)

    package struct Missing: Error, CustomStringConvertible {
        package let description: String
    }

    package var dataDirectory: URL { self.directory.appendingPathComponent("data") }
    package var socketDirectory: URL { self.directory }
    package var logFile: URL { self.directory.appendingPathComponent("server.log") }
    /// The CA that signed the server's certificate (`verify-full` trusts it).
    package var caCertificate: URL { self.directory.appendingPathComponent("tls/ca.pem") }
    /// A CA that signed nothing of this server's.
    package var otherCACertificate: URL { self.directory.appendingPathComponent("tls/other-ca.pem") }

    // MARK: One cluster per test run

    private static let sharedCluster = NIOLockedValueBox<Task<PostgresCluster, Error>?>(nil)

    /// The cluster most tests share, started on first use and stopped when the test process
    /// exits.
    package static func shared() async throws -> PostgresCluster {
        let task = Self.sharedCluster.withLockedValue { existing -> Task<PostgresCluster, Error> in
            if let existing { return existing }
            let task = Task { try await Self.start() }
            existing = task
            return task
        }
        let cluster = try await task.value
        return cluster
    }

    private static let running = NIOLockedValueBox<[PostgresCluster]>([])

    /// A cluster of its own (for a test that stops and restarts the server).
    package static func start() async throws -> PostgresCluster {
        let binaries = try Self.findBinaries()
        await Self.afterTheRunsFirstSeconds()
        // Seconds of child processes (openssl, initdb, the server's start), waited for on a
        // thread of their own: blocking one of the cooperative pool's two threads here starved
        // the timing-sensitive tests running beside this one.
        return try await onOwnThread { try Self.startBlocking(binaries: binaries) }
    }

    private static func startBlocking(binaries: URL) throws -> PostgresCluster {
        Self.stopAbandoned(binaries: binaries)
        let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("agpg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("tls"), withIntermediateDirectories: true)
        try "\(getpid())".write(
            to: directory.appendingPathComponent("test-process.pid"), atomically: true, encoding: .utf8)
        let owner = getuid() == 0 ? Self.unprivilegedUser() : nil
        let cluster = PostgresCluster(directory: directory, binaries: binaries, owner: owner)
        try cluster.makeCertificates()
        try cluster.initialize()
        try cluster.startOnAFreePort()
        try Self.execute(
            binaries.appendingPathComponent("psql").path,
            [
                "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", cluster.socketDirectory.path, "-p", "\(cluster.port)", "-U",
                Self.superuser, "-d", "postgres",
                "-c", "CREATE ROLE \(Self.gatewayRole) LOGIN PASSWORD '\(Self.gatewayPassword)'",
            ],
            as: owner, in: directory
        )
        Self.running.withLockedValue { clusters in
            if clusters.isEmpty { atexit { PostgresCluster.stopAll() } }
            clusters.append(cluster)
        }
        return cluster
    }

    /// When the first cluster was asked for: in practice the start of the test run, when every
    /// suite starts at once and several of them measure sub-second timeouts. A cluster (initdb,
    /// the server, its first connections) is started 3 s later, so that those tests are not
    /// starved of the two cores by it; the PostgreSQL tests run one at a time anyway.
    private static let firstRequest = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    private static func afterTheRunsFirstSeconds() async {
        let first = Self.firstRequest.withLockedValue { first in
            if first == nil { first = .now }
            return first!
        }
        try? await Task.sleep(until: first + .seconds(3), clock: .continuous)
    }

    private init(directory: URL, binaries: URL, owner: (uid: UInt32, gid: UInt32)?) {
        self.directory = directory
        self.binaries = binaries
        self.owner = owner
    }

    /// Stops the clusters of test processes that died without their `atexit` (killed, or
    /// crashed), so that no server outlives its run for long.
    private static func stopAbandoned(binaries: URL) {
        let tmp = URL(fileURLWithPath: "/tmp")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? [] where name.hasPrefix("agpg-")
        {
            let folder = tmp.appendingPathComponent(name)
            guard
                let text = try? String(contentsOf: folder.appendingPathComponent("test-process.pid"), encoding: .utf8),
                let pid = pid_t(text), Glibc.kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            let data = folder.appendingPathComponent("data")
            if let attributes = try? FileManager.default.attributesOfItem(atPath: data.path),
                let uid = attributes[.ownerAccountID] as? NSNumber,
                let gid = attributes[.groupOwnerAccountID] as? NSNumber
            {
                let owner = getuid() == 0 ? (uid.uint32Value, gid.uint32Value) : nil
                _ = try? Self.execute(
                    binaries.appendingPathComponent("pg_ctl").path, ["-D", data.path, "-m", "immediate", "-w", "stop"],
                    as: owner, in: folder)
            }
            try? FileManager.default.removeItem(at: folder)
        }
    }

    private static func stopAll() {
        for cluster in Self.running.withLockedValue({ $0 }) { cluster.stop() }
    }

    // MARK: Databases

    /// A new, empty database owned by `owner` (the `gateway` role, which may then create
    /// tables in it; or the superuser, and `gateway` may only connect).
    package func createDatabase(owner: String = PostgresCluster.gatewayRole) async throws -> String {
        let number = self.databases.withLockedValue { count in
            count += 1
            return count
        }
        let name = "gateway_test_\(number)_\(UUID().uuidString.prefix(6).lowercased())"
        try await self.psql("CREATE DATABASE \(name) OWNER \(owner)", database: "postgres")
        return name
    }

    /// `postgres://gateway:${PGPASSWORD}@127.0.0.1:PORT/database`: the password comes from the
    /// environment, as an operator's configuration takes it.
    package func gatewayURL(database: String, host: String = "127.0.0.1") -> String {
        "postgres://\(Self.gatewayRole):${PGPASSWORD}@\(host):\(self.port)/\(database)"
    }

    package var environment: [String: String] { ["PGPASSWORD": Self.gatewayPassword] }

    /// Runs SQL as the superuser over the unix socket; returns psql's unaligned output.
    @discardableResult
    package func psql(_ sql: String, database: String) async throws -> String {
        try await self.run(
            "psql",
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.socketDirectory.path, "-p", "\(self.port)",
                "-U", Self.superuser, "-d", database, "-c", sql,
            ]
        )
    }

    /// Everything in `database` (schema and data) as `pg_dump` prints it.
    package func dump(database: String) async throws -> String {
        try await self.run(
            "pg_dump", ["-h", self.socketDirectory.path, "-p", "\(self.port)", "-U", Self.superuser, "-d", database])
    }

    // MARK: Server

    /// Kills the server the hard way (`immediate`: no clean shutdown, connections dropped).
    package func kill() async throws {
        try await self.run("pg_ctl", ["-D", self.dataDirectory.path, "-m", "immediate", "-w", "stop"])
    }

    package func startServer() async throws {
        try await onOwnThread { try self.startServerBlocking() }
    }

    private func startServerBlocking() throws {
        let options = [
            "-p \(self.port)", "-k \(self.socketDirectory.path)", "-c listen_addresses=127.0.0.1,127.0.0.2",
            "-c ssl=on", "-c ssl_cert_file=\(self.directory.path)/tls/server.pem",
            "-c ssl_key_file=\(self.directory.path)/tls/server.key",
            "-c fsync=off", "-c max_connections=200",
        ].joined(separator: " ")
        try self.runBlocking(
            "pg_ctl",
            ["-D", self.dataDirectory.path, "-l", self.logFile.path, "-o", options, "-w", "-t", "30", "start"])
    }

    /// Starts the server on a port of its own, without a bind–close race: the server binds the
    /// port itself (no port is bound, closed and handed over), and when the bind fails
    /// (another process has that port) the start is retried on another one.
    ///
    /// Candidates lie just below the kernel's ephemeral range (`ip_local_port_range`), which
    /// the kernel never hands out to a socket bound to port 0 or to an outgoing connection —
    /// every other socket of the test run — so no test running beside it can take the port
    /// while the server is stopped for a restart either.
    private func startOnAFreePort() throws {
        var failures: [String] = []
        for _ in 0..<10 {
            let port = Self.candidatePort()
            self.chosenPort.withLockedValue { $0 = port }
            let logBefore = (try? Data(contentsOf: self.logFile).count) ?? 0
            do {
                try self.startServerBlocking()
                return
            } catch {
                let log =
                    (try? Data(contentsOf: self.logFile)).map {
                        String(decoding: $0.dropFirst(logBefore), as: UTF8.self)
                    } ?? ""
                guard log.contains("could not bind") || log.contains("Address already in use") else { throw error }
                failures.append(
                    "port \(port): \(log.split(separator: "\n").first { $0.contains("could not bind") } ?? "in use")")
            }
        }
        throw CommandFailed(
            description: "no free port for the PostgreSQL server after 10 tries: \(failures.joined(separator: "; "))")
    }

    /// A random port in the 10 000 ports below the ephemeral range (32768–60999 by default:
    /// 22768–32767).
    package static func candidatePort() -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        let ephemeralLow = range?.first ?? 32768
        let low = max(1024, ephemeralLow - 10_000)
        return Int.random(in: low..<max(low + 1000, ephemeralLow))
    }

    package func stop() {
        _ = try? self.runBlocking("pg_ctl", ["-D", self.dataDirectory.path, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: self.directory)
    }

    private func initialize() throws {
        try self.chown(self.directory)
        try self.runBlocking(
            "initdb",
            [
                "-D", self.dataDirectory.path, "-U", Self.superuser, "--auth-local=trust", "--auth-host=scram-sha-256",
                "-E", "UTF8", "--no-sync",
            ])
    }

    /// A CA, a server certificate it signs for `localhost` and 127.0.0.1, and an unrelated CA.
    private func makeCertificates() throws {
        let tls = self.directory.appendingPathComponent("tls").path
        guard
            let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw Missing(
                description:
                    "The shared-state TLS tests make their certificates with openssl, which was not found: apt-get install -y openssl"
            )
        }
        func ssl(_ arguments: [String]) throws { _ = try Self.execute(openssl, arguments, as: nil, in: self.directory) }
        for ca in ["ca", "other-ca"] {
            try ssl([
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
                "/CN=auth-gateway test \(ca)",
                "-keyout", "\(tls)/\(ca).key", "-out", "\(tls)/\(ca).pem",
            ])
        }
        try ssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
            "-keyout", "\(tls)/server.key", "-out", "\(tls)/server.csr",
        ])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
            toFile: "\(tls)/server.ext", atomically: true, encoding: .utf8)
        try ssl([
            "x509", "-req", "-in", "\(tls)/server.csr", "-CA", "\(tls)/ca.pem", "-CAkey", "\(tls)/ca.key",
            "-CAcreateserial", "-days", "2",
            "-extfile", "\(tls)/server.ext", "-out", "\(tls)/server.pem",
        ])
        // PostgreSQL insists that only its owner can read the key.
        chmod("\(tls)/server.key", 0o600)
    }

    // MARK: Processes

    private func chown(_ url: URL) throws {
        guard let owner = self.owner else { return }
        _ = try Self.execute("/bin/chown", ["-R", "\(owner.uid):\(owner.gid)", url.path], as: nil, in: self.directory)
    }

    /// Runs one of the server's binaries (as the unprivileged owner under root) on a thread of
    /// its own: the test waits without holding one of the cooperative pool's threads.
    @discardableResult
    private func run(_ binary: String, _ arguments: [String]) async throws -> String {
        try await onOwnThread { try self.runBlocking(binary, arguments) }
    }

    @discardableResult
    private func runBlocking(_ binary: String, _ arguments: [String]) throws -> String {
        try Self.execute(
            self.binaries.appendingPathComponent(binary).path, arguments, as: self.owner, in: self.directory)
    }

    package struct CommandFailed: Error, CustomStringConvertible {
        package let description: String
    }

    /// Runs `path` to completion (through `setpriv` as `owner` when given) in `directory` and
    /// returns its standard output. `posix_spawn` and `waitpid`, not `Process`: `pg_ctl start`
    /// leaves a daemon behind, and Foundation's `Process` was seen never to notice such a
    /// child's exit.
    ///
    /// `directory` is the cluster's own folder, which `owner` can enter: a child run as another
    /// user never inherits the test process's working directory (the checkout, perhaps private
    /// to its owner — psql then prints `could not change directory to "…": Permission
    /// denied`). Standard error goes to a file of its own, so that nothing a tool warns about
    /// is ever read as a query's result; it is part of the error when the command fails.
    /// Bounded: a command still running after `timeout` is killed and fails.
    @discardableResult
    package static func execute(
        _ path: String, _ arguments: [String], as owner: (uid: UInt32, gid: UInt32)?, in directory: URL,
        timeout: Duration = .seconds(120)
    ) throws -> String {
        var command = [path] + arguments
        if let owner {
            command = ["/usr/bin/setpriv", "--reuid=\(owner.uid)", "--regid=\(owner.gid)", "--clear-groups"] + command
        }
        let shown = command.dropFirst(owner == nil ? 0 : 4).prefix(6).joined(separator: " ")
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C"
        environment["PGCONNECT_TIMEOUT"] = "5"
        // Nothing of the test process's location: tools that look at $PWD find the cluster's.
        environment["PWD"] = directory.path
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("agpg-out-\(UUID().uuidString)")
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("agpg-err-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: output)
            try? FileManager.default.removeItem(at: errors)
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Nothing else of this process's (hundreds of sockets while the whole suite runs):
        // the server counts inherited descriptors against its limit and refuses to start.
        SpawnActions.closeInheritedDescriptors(&actions)
        if !SpawnActions.changeDirectory(&actions, to: directory.path) {
            command = SpawnActions.throughShell(command, in: directory.path)
        }

        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        guard spawned == 0 else { throw CommandFailed(description: "cannot start \(command[0]): error \(spawned)") }
        guard let status = SpawnActions.waitForExit(pid, timeout: timeout) else {
            SpawnActions.killAndReap(pid)
            throw CommandFailed(
                description: "\(shown) did not finish within \(timeout) and was killed: \(Self.read(errors))")
        }
        let text = Self.read(output)
        // WIFEXITED && WEXITSTATUS == 0
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw CommandFailed(description: "\(shown) failed (status \(status)): \(text)\(Self.read(errors))")
        }
        return text
    }

    private static func read(_ url: URL) -> String {
        FileManager.default.contents(atPath: url.path).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// `initdb` and `pg_ctl` on PATH, else the newest `/usr/lib/postgresql/*/bin`.
    package static func findBinaries() throws -> URL {
        let fileManager = FileManager.default
        var candidates: [URL] = []
        let versions = ((try? fileManager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted {
            (Int($0) ?? 0) > (Int($1) ?? 0)
        }
        for version in versions { candidates.append(URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin")) }
        for entry in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let folder = URL(fileURLWithPath: String(entry))
            let initdb = folder.appendingPathComponent("initdb").resolvingSymlinksInPath()
            if fileManager.isExecutableFile(atPath: initdb.path) {
                candidates.insert(initdb.deletingLastPathComponent(), at: 0)
            }
        }
        for folder in candidates
        where ["initdb", "pg_ctl", "postgres", "psql", "pg_dump"].allSatisfy({
            fileManager.isExecutableFile(atPath: folder.appendingPathComponent($0).path)
        }) {
            return folder
        }
        throw Missing(
            description: """
                The shared-state tests need a PostgreSQL server: initdb, pg_ctl, postgres, psql and pg_dump were not found on PATH \
                or under /usr/lib/postgresql/*/bin. Install them (Debian/Ubuntu: apt-get install -y postgresql; macOS: brew install \
                postgresql) — .ci/run does this in CI.
                """
        )
    }

    package static func unprivilegedUser() -> (uid: UInt32, gid: UInt32) {
        for name in ["postgres", "nobody"] {
            if let entry = getpwnam(name) { return (entry.pointee.pw_uid, entry.pointee.pw_gid) }
        }
        return (65534, 65534)
    }
}
