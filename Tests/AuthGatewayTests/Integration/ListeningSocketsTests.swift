import NIOCore
import NIOPosix
import Testing

import AuthGatewayTesting

/// The harness's `listeningSockets()`: this process's listeners, from `/proc`.
@Suite("Test harness: listeningSockets (real sockets)", .awaitsCleanups)
struct ListeningSocketsTests {
    /// More listeners than one page of `/proc/net/tcp` holds (~26 rows): each is listed while
    /// it listens and gone once closed.
    @Test func everyListenerIsListedWhileItListensAndNoneAfterItCloses() async throws {
        var servers: [Channel] = []
        for _ in 0..<64 {
            let server = try await ServerBootstrap(group: TestGroup.shared).bind(host: "127.0.0.1", port: 0).get()
            atTestEnd { try? await server.close() }
            servers.append(server)
        }
        let ports = Set(servers.compactMap { $0.localAddress?.port })
        #expect(ports.count == 64)

        let listening = listeningSockets().filter { ports.contains($0.port) }
        #expect(Set(listening.map(\.port)) == ports)

        for server in servers { try await server.close() }
        // The sockets, not the ports: a test running in parallel may bind a freed port at once.
        #expect(listeningSockets().isDisjoint(with: listening))
    }
}
