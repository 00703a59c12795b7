import AuthGateway
import Logging
import NIOCore
import NIOEmbedded
import NIOSSL

/// One gateway worker on an `EmbeddedEventLoop`, built exactly as `serve` builds each loop's
/// worker; client connections and upstream connections are `EmbeddedChannel`s. Tests and
/// benchmarks drive whole requests through the real pipeline (`HTTP1ServerConnection`, its parser,
/// planner, verification, header rewriting, the upstream pool, `UpstreamHandler`) without
/// sockets or system calls.
package final class EmbeddedGateway {
    package let loop = EmbeddedEventLoop()
    private let worker: Worker
    private let connector: EmbeddedConnector

    /// `configuration`: a gateway JSON; its backends are never really dialled. The worker logs
    /// through `logger` (the harness's own, as the library makes none).
    package init(
        configuration: String, clock: @escaping @Sendable () -> Double,
        logger: Logger = Logger(label: "auth-gateway")
    ) throws {
        let parsed = try ConfigurationLoader(environment: [:]).load(text: configuration, baseDirectory: "/")
        self.connector = EmbeddedConnector(loop: self.loop)
        self.worker = try GatewayApplication.makeWorker(
            configuration: parsed, eventLoop: self.loop, clock: clock, connector: self.connector, logger: logger)
    }

    /// A new client connection from `peer`, with the gateway's pipeline on it.
    package func connectClient(peer: String = "127.0.0.1", port: Int = 40000) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: self.loop)
        // Connected first, as an accepted socket is when the server's initializer runs.
        try channel.connect(to: SocketAddress(ipAddress: peer, port: port)).wait()
        try ClientPipeline.configure(channel: channel, worker: self.worker, tls: nil)
        return channel
    }

    /// The upstream connections opened so far, oldest first.
    package var upstreams: [EmbeddedChannel] { self.connector.channels }

    /// The targets those connections were opened to ("host:port"), in the same order.
    package var upstreamTargets: [String] { self.connector.targets }
}

/// Hands the pool an embedded channel instead of a TCP connection. `@unchecked Sendable`:
/// used only on its one embedded event loop.
private final class EmbeddedConnector: UpstreamConnector, @unchecked Sendable {
    let loop: EmbeddedEventLoop
    private(set) var channels: [EmbeddedChannel] = []
    private(set) var targets: [String] = []

    init(loop: EmbeddedEventLoop) { self.loop = loop }

    func connect(
        to target: UpstreamURL, eventLoop: EventLoop, timeout: TimeAmount, tls: UpstreamTLS?, http2: Bool
    ) -> EventLoopFuture<Channel> {
        let channel = EmbeddedChannel(loop: self.loop)
        do {
            if http2 {
                try SocketConnector.addHTTP2Handlers(to: channel)
            } else {
                try SocketConnector.addHTTPHandlers(to: channel)
            }
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: target.port)).wait()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        self.channels.append(channel)
        self.targets.append("\(target.host):\(target.port)")
        return eventLoop.makeSucceededFuture(channel)
    }
}
