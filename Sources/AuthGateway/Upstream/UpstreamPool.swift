import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Keep-alive connections from one event loop to one upstream (a backend's URLs, or the auth
/// service), Envoy-style: each loop has its own pools, so leasing takes no lock.
///
/// The decisions — which URL, which idle connection, when to connect, wait or fail — are
/// `PoolStateMachine`'s; this shell runs its actions: it connects (`UpstreamConnector`), arms
/// the wait limits (`connectTimeout`, then 503) and calls the requesters back.
final class UpstreamPool {
    typealias Target = UpstreamURL

    let name: String
    let eventLoop: EventLoop
    let targets: [Target]
    let connectTimeout: TimeAmount
    /// How requests reach these targets (HTTP/1.1 today; HTTP/2 streams for `h2`/`h2c`).
    let wireProtocol: BackendConfiguration.WireProtocol
    private let tlsContext: NIOSSLContext?
    private let connector: UpstreamConnector
    private var state: PoolStateMachine<UpstreamConnection>
    private var nextLeaseID = 0
    /// Leases waiting for a connection (being opened, or in line), by lease id.
    private var pending: [Int: PendingLease] = [:]
    /// Told about each connect attempt (for `/healthz`): target index, success, error text.
    var onConnectResult: ((Int, Bool, String?) -> Void)?

    private struct PendingLease {
        let requester: UpstreamLeaseRequester
        var timeout: Scheduled<Void>?
    }

    init(
        name: String, eventLoop: EventLoop, targets: [Target], maxConnections: Int, connectTimeout: TimeAmount, tlsContext: NIOSSLContext?,
        connector: UpstreamConnector, wireProtocol: BackendConfiguration.WireProtocol = .http1
    ) {
        self.name = name
        self.wireProtocol = wireProtocol
        self.eventLoop = eventLoop
        self.targets = targets
        self.connectTimeout = connectTimeout
        self.tlsContext = tlsContext
        self.connector = connector
        self.state = PoolStateMachine(targetCount: targets.count, maxConnections: maxConnections)
    }

    var maxConnections: Int { self.state.maxConnections }

    enum LeaseResult {
        case leased(UpstreamLease, reused: Bool)
        /// The requester will be called back.
        case pending
    }

    /// Leases a connection: an idle one at once, else a new or freed one later.
    func lease(for requester: UpstreamLeaseRequester) -> LeaseResult {
        self.eventLoop.preconditionInEventLoop()
        let id = self.nextLeaseID
        self.nextLeaseID &+= 1
        let action = self.state.lease(id, now: .now())
        if case .deliver(let connection, to: id, let reused) = action {
            return .leased(connection, reused: reused)
        }
        self.pending[id] = PendingLease(requester: requester)
        self.run(action)
        return .pending
    }

    /// Forgets a pending lease (the requester went away). A connection already being opened
    /// for it goes to the next lease or the idle list.
    func cancelLease(for requester: UpstreamLeaseRequester) {
        guard let id = self.pending.first(where: { $0.value.requester === requester })?.key else { return }
        self.pending.removeValue(forKey: id)?.timeout?.cancel()
        self.state.cancel(id)
    }

    /// Takes back a connection that was leased but never used.
    func returnUnused(_ connection: UpstreamConnection, reused: Bool) {
        self.eventLoop.preconditionInEventLoop()
        connection.handler.delegate = nil
        self.run(self.state.returnedUnused(connection, target: connection.targetIndex, reused: reused, reusable: connection.isReusable))
    }

    /// Returns a connection after a complete exchange.
    func release(_ connection: UpstreamConnection) {
        self.eventLoop.preconditionInEventLoop()
        connection.handler.delegate = nil
        self.run(self.state.released(connection, target: connection.targetIndex, reusable: connection.isReusable))
    }

    /// Closes idle connections and refuses new leases (config reload removed this pool).
    func shutdown() {
        self.run(self.state.shutDown())
    }

    // MARK: Running actions

    private func run(_ action: PoolStateMachine<UpstreamConnection>.Action) {
        switch action {
        case .none:
            break
        case .deliver(let connection, let lease, let reused):
            guard let waiting = self.pending.removeValue(forKey: lease) else {
                // The requester is gone (it cancelled while the connection was on its way).
                self.run(self.state.returnedUnused(connection, target: connection.targetIndex, reused: reused, reusable: connection.isReusable))
                return
            }
            waiting.timeout?.cancel()
            waiting.requester.leaseSucceeded(connection, reused: reused)
        case .connect(let attempt):
            self.connect(attempt)
        case .closeAndConnect(let idle, let attempt):
            idle.close()
            self.connect(attempt)
        case .wait(let lease):
            self.pending[lease]?.timeout = self.eventLoop.assumeIsolated().scheduleTask(in: self.connectTimeout) { [weak self] in
                guard let self else { return }
                self.run(self.state.waitTimedOut(lease))
            }
        case .fail(let lease, let failure):
            guard let waiting = self.pending.removeValue(forKey: lease) else { return }
            waiting.timeout?.cancel()
            waiting.requester.leaseFailed(failure == .busy ? .upstreamBusy : .upstreamUnreachable)
        case .close(let connection):
            connection.close()
        case .shutDown(let idle, let leases):
            for connection in idle { connection.close() }
            for lease in leases { self.run(.fail(lease, .unreachable)) }
        }
    }

    private func connect(_ attempt: PoolStateMachine<UpstreamConnection>.Attempt) {
        let target = self.targets[attempt.target]
        self.connector.connect(to: target, eventLoop: self.eventLoop, timeout: self.connectTimeout, tls: target.isTLS ? self.tlsContext : nil)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    self.onConnectResult?(attempt.target, true, nil)
                    guard let handler = try? channel.pipeline.syncOperations.handler(type: UpstreamHandler.self) else {
                        channel.close(promise: nil)
                        self.run(self.state.connectFailed(attempt.id, now: .now()))
                        return
                    }
                    let connection = UpstreamConnection(channel: channel, handler: handler, targetIndex: attempt.target)
                    connection.pool = self
                    // Every connection's close frees its slot exactly once (the handler calls
                    // this once and then drops it, which ends the reference cycle).
                    handler.onClose = { [weak self] in
                        guard let self else { return }
                        self.run(self.state.closed(connection, target: attempt.target, now: .now()))
                    }
                    self.run(self.state.connected(attempt.id, connection))
                case .failure(let error):
                    self.onConnectResult?(attempt.target, false, "\(error)")
                    self.run(self.state.connectFailed(attempt.id, now: .now()))
                }
            }
    }
}

@available(*, unavailable)
extension UpstreamPool: Sendable {}

/// Opens a channel to an upstream target whose pipeline ends in an `UpstreamHandler`.
package protocol UpstreamConnector: Sendable {
    func connect(to target: UpstreamURL, eventLoop: EventLoop, timeout: TimeAmount, tls: NIOSSLContext?) -> EventLoopFuture<Channel>
}

/// TCP (and TLS) connections with NIO's `ClientBootstrap`.
package struct SocketConnector: UpstreamConnector {
    package init() {}

    package func connect(to target: UpstreamURL, eventLoop: EventLoop, timeout: TimeAmount, tls: NIOSSLContext?) -> EventLoopFuture<Channel> {
        ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                do {
                    if let tls {
                        // SNI only for names: RFC 6066 forbids IP literals there.
                        let serverName = target.host.first?.isLetter == true ? target.host : nil
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try Self.addHTTPHandlers(to: channel)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: target.host, port: target.port)
    }

    /// The handler every upstream connection has: the gateway's own HTTP/1.1 client codec
    /// (`UpstreamHandler`; see HeadScanner.swift for why not NIOHTTP1's).
    package static func addHTTPHandlers(to channel: Channel) throws {
        try channel.pipeline.syncOperations.addHandler(UpstreamHandler())
    }
}
