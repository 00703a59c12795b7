import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing

import AuthGatewayTesting
@testable import AuthGateway

/// `GatewayListeners`: the main and admin listeners on real sockets.
@Suite("GatewayListeners (real sockets)", .awaitsCleanups)
struct GatewayListenersTests {
    /// Listeners in front of one worker of a one-loop group (closed by `stop`).
    private static func make(
        _ configure: (inout JSONObject) -> Void = { _ in }
    ) async throws -> (GatewayListeners, stop: @Sendable () async -> Void) {
        let configuration = try ApplicationTesting.configuration(configure)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let worker = try await loop.submit {
            NIOLoopBound(
                try GatewayApplication.makeWorker(
                    configuration: configuration, eventLoop: loop, clock: GatewayApplication.systemClock,
                    connector: SocketConnector()),
                eventLoop: loop
            )
        }.get()
        let listeners = GatewayListeners(
            group: group, workers: [worker], tls: nil,
            metrics: MetricsCollector(workers: [worker], shared: try await loop.submit { worker.value.shared }.get())
        )
        return (
            listeners,
            {
                await listeners.closeAll(); try? await group.shutdownGracefully()
            }
        )
    }

    private static let loopbackAnyPort = ListenerConfiguration(host: "127.0.0.1", port: 0)

    @Test func bothListenersBindPortZeroReportTheirRealPortsAndServe() async throws {
        let (listeners, stop) = try await Self.make()
        atTestEnd { await stop() }
        #expect(listeners.mainAddress == nil)

        try await listeners.bind(main: Self.loopbackAnyPort, admin: Self.loopbackAnyPort)

        let main = try #require(listeners.mainAddress?.port)
        let admin = try #require(listeners.adminAddress?.port)
        #expect(main > 0 && admin > 0 && main != admin)
        #expect(listeners.mainAddress?.ipAddress == "127.0.0.1")
        // The main listener runs the client pipeline: no token on the default route is a 401.
        let unauthenticated = try await TestConnection.connect(port: main)
        atTestEnd { await unauthenticated.close() }
        #expect(try await unauthenticated.send(.get("/anything")).status == 401)
        // The admin listener serves health and metrics.
        let adminConnection = try await TestConnection.connect(port: admin)
        atTestEnd { await adminConnection.close() }
        #expect(try await adminConnection.send(.get("/livez")).status == 200)
        let metrics = try await adminConnection.send(.get("/metrics"))
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("auth_gateway_open_connections"))
    }

    @Test func closeMainStopsAcceptingClientsAndKeepsTheAdminListener() async throws {
        let (listeners, stop) = try await Self.make()
        atTestEnd { await stop() }
        try await listeners.bind(main: Self.loopbackAnyPort, admin: Self.loopbackAnyPort)
        let main = try #require(listeners.mainAddress?.port)
        let admin = try #require(listeners.adminAddress?.port)

        let mainSockets = listeningSockets().filter { $0.port == main }
        let adminSockets = listeningSockets().filter { $0.port == admin }
        #expect(!mainSockets.isEmpty && !adminSockets.isEmpty)

        await listeners.closeMain()

        // Whether this process's listening socket is gone, not whether the port answers: a
        // connection to the freed port reaches whoever holds it next (once in seven runs of the
        // whole suite, something accepted there).
        #expect(listeningSockets().isDisjoint(with: mainSockets))
        #expect(listeningSockets().isSuperset(of: adminSockets))
        #expect(await acceptsConnections(port: admin))
        await listeners.closeAll()
        #expect(listeningSockets().isDisjoint(with: adminSockets))
    }

    @Test func withoutAnAdminSectionOnlyTheMainListenerBinds() async throws {
        let (listeners, stop) = try await Self.make()
        atTestEnd { await stop() }

        try await listeners.bind(main: Self.loopbackAnyPort, admin: nil)

        #expect(listeners.mainAddress?.port ?? 0 > 0)
        #expect(listeners.adminAddress == nil)
    }

    /// An admin port already taken: the start fails and the main listener is closed again.
    @Test func anAdminPortInUseFailsTheBindAndLeavesNothingListening() async throws {
        let (holder, stopHolder) = try await Self.make()
        atTestEnd { await stopHolder() }
        try await holder.bind(main: Self.loopbackAnyPort, admin: nil)
        let taken = try #require(holder.mainAddress?.port)
        let (listeners, stop) = try await Self.make()
        atTestEnd { await stop() }

        // The bind's own error, EADDRINUSE, not any failure on the way.
        let error = await #expect(throws: IOError.self) {
            try await listeners.bind(
                main: Self.loopbackAnyPort, admin: ListenerConfiguration(host: "127.0.0.1", port: taken))
        }
        #expect(error?.errnoCode == EADDRINUSE, "\(String(describing: error))")
        #expect(listeners.mainAddress == nil)
        #expect(listeners.adminAddress == nil)
    }

    /// The certificate file is read first: its absence is the error NIOSSL reports for a
    /// certificate it cannot load, not a crash and not an error about the key.
    @Test func aMissingCertificateFileIsAnErrorNotACrash() throws {
        let missing = "/nonexistent/\(UUID().uuidString)/cert.pem"
        #expect(throws: NIOSSLError.failedToLoadCertificate) {
            try GatewayListeners.makeServerTLS(
                ListenerTLS(certificatePEMFile: missing, privateKeyPEMFile: "/nonexistent/key.pem"), http2: true)
        }
    }
}
