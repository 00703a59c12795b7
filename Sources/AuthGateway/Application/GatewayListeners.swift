import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The two listeners: the main one (clients, with the listener's TLS when configured, each
/// accepted connection handed to its event loop's worker through `ClientPipeline`) and the
/// admin one (health and metrics, `AdminHandler`). Both bind at `start()`; their addresses
/// are real even when the configured port is 0.
final class GatewayListeners: Sendable {
    private let group: EventLoopGroup
    private let workers: [NIOLoopBound<Worker>]
    private let tls: NIOSSLContext?
    private let metrics: MetricsCollector
    private let channels = NIOLockedValueBox<(main: Channel?, admin: Channel?)>((nil, nil))

    /// `tls`: the main listener's (`makeServerTLS`), built before the workers so that a bad
    /// certificate file fails `GatewayApplication.make`.
    init(group: EventLoopGroup, workers: [NIOLoopBound<Worker>], tls: NIOSSLContext?, metrics: MetricsCollector) {
        self.group = group
        self.workers = workers
        self.tls = tls
        self.metrics = metrics
    }

    /// The listener's TLS; ALPN offers `h2` and `http/1.1` while HTTP/2 is on (docs/http2.md).
    static func makeServerTLS(_ files: ListenerTLS, http2: Bool) throws -> NIOSSLContext {
        let certificates = try NIOSSLCertificate.fromPEMFile(files.certificatePEMFile)
        let key = try NIOSSLPrivateKey(file: files.privateKeyPEMFile, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
        return try NIOSSLContext(configuration: configuration)
    }

    var mainAddress: SocketAddress? { self.channels.withLockedValue { $0.main?.localAddress } }
    var adminAddress: SocketAddress? { self.channels.withLockedValue { $0.admin?.localAddress } }

    /// Binds the main listener, then the admin one when configured; when the admin one cannot
    /// bind, the main one is closed again and the error thrown.
    func bind(main: ListenerConfiguration, admin: ListenerConfiguration?) async throws {
        let mainChannel = try await self.bindMain(main)
        var adminChannel: Channel?
        if let admin {
            do {
                adminChannel = try await self.bindAdmin(admin)
            } catch {
                try? await mainChannel.close()
                throw error
            }
        }
        self.channels.withLockedValue { $0 = (mainChannel, adminChannel) }
    }

    /// Stops accepting clients (drain); the admin listener stays for health and metrics.
    func closeMain() async {
        try? await self.channels.withLockedValue { $0.main }?.close()
    }

    /// Closes both listeners.
    func closeAll() async {
        let (main, admin) = self.channels.withLockedValue { $0 }
        try? await main?.close()
        try? await admin?.close()
    }

    private func bindMain(_ listener: ListenerConfiguration) async throws -> Channel {
        let workers = self.workers
        let tls = self.tls
        return try await ServerBootstrap(group: self.group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelInitializer { channel in
                do {
                    // Called on the channel's loop; `value` checks that.
                    let worker = workers.first { $0.eventLoop === channel.eventLoop }!.value
                    try ClientPipeline.configure(channel: channel, worker: worker, tls: tls)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .bind(host: listener.host, port: listener.port)
            .get()
    }

    private func bindAdmin(_ listener: ListenerConfiguration) async throws -> Channel {
        let workers = self.workers
        let collector = self.metrics
        return try await ServerBootstrap(group: self.group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                do {
                    let worker = workers.first { $0.eventLoop === channel.eventLoop }!.value
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(AdminHandler(worker: worker, metrics: collector))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .bind(host: listener.host, port: listener.port)
            .get()
    }
}
