import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Waits for a connection from an `UpstreamPool`.
protocol UpstreamLeaseRequester: AnyObject {
    func leaseSucceeded(_ connection: UpstreamConnection, reused: Bool)
    func leaseFailed(_ error: GatewayError)
}

/// Keep-alive connections from one event loop to one upstream (a backend's URLs, or the auth
/// service), Envoy-style: each loop has its own pools, so leasing takes no lock.
///
/// - Idle connections are reused last-in first-out (the warmest first).
/// - At most `maxConnections` are open or opening; further requests wait in line, each for at
///   most `connectTimeout`, then get 503.
/// - A connect failure moves on to the next URL (round robin, failed URLs sit out a moment);
///   when every URL failed the requester gets 502.
final class UpstreamPool {
    typealias Target = UpstreamURL

    let name: String
    let eventLoop: EventLoop
    let targets: [Target]
    let maxConnections: Int
    let connectTimeout: TimeAmount
    private let tlsContext: NIOSSLContext?
    /// Opens connections; replaced only by the in-process benchmark.
    var connector: UpstreamConnector = SocketConnector()
    private var selector: TargetSelector
    private var idle: [UpstreamConnection] = []
    /// Connections open or being opened.
    private var openCount = 0
    private var waiters = CircularBuffer<Waiter>()
    private var closed = false
    /// Told about each connect attempt (for `/healthz`): target index, success, error text.
    var onConnectResult: ((Int, Bool, String?) -> Void)?

    private struct Waiter {
        let requester: UpstreamLeaseRequester
        let timeout: Scheduled<Void>
    }

    init(name: String, eventLoop: EventLoop, targets: [Target], maxConnections: Int, connectTimeout: TimeAmount, tlsContext: NIOSSLContext?) {
        self.name = name
        self.eventLoop = eventLoop
        self.targets = targets
        self.maxConnections = maxConnections
        self.connectTimeout = connectTimeout
        self.tlsContext = tlsContext
        self.selector = TargetSelector(count: targets.count)
    }

    enum LeaseResult {
        case leased(UpstreamConnection, reused: Bool)
        /// The requester will be called back.
        case pending
    }

    /// Leases a connection: an idle one at once, else a new or freed one later.
    func lease(for requester: UpstreamLeaseRequester) -> LeaseResult {
        self.eventLoop.preconditionInEventLoop()
        while let connection = self.idle.popLast() {
            if connection.isActive { return .leased(connection, reused: connection.completedRequests > 0) }
        }
        if self.openCount < self.maxConnections {
            self.openCount += 1
            self.connect(for: requester, tried: [])
        } else {
            let timeout = self.eventLoop.assumeIsolated().scheduleTask(in: self.connectTimeout) { [weak self, weak requester] in
                guard let self, let requester else { return }
                self.removeWaiter(requester)
                requester.leaseFailed(.upstreamBusy)
            }
            self.waiters.append(Waiter(requester: requester, timeout: timeout))
        }
        return .pending
    }

    /// Forgets a queued lease (the client went away). A connection already being opened for
    /// the requester is still delivered; the requester gives it back with `returnUnused`.
    func cancelLease(for requester: UpstreamLeaseRequester) {
        self.removeWaiter(requester)
    }

    /// Takes back a connection that was leased but never used.
    func returnUnused(_ connection: UpstreamConnection) {
        self.eventLoop.preconditionInEventLoop()
        connection.handler.delegate = nil
        guard connection.reusable, connection.isActive, !self.closed else {
            connection.close()
            return
        }
        self.handOut(connection)
    }

    /// Returns a connection after a complete exchange.
    func release(_ connection: UpstreamConnection) {
        self.eventLoop.preconditionInEventLoop()
        connection.handler.delegate = nil
        connection.completedRequests += 1
        guard connection.reusable, connection.isActive, !self.closed else {
            connection.close()
            return
        }
        self.handOut(connection)
    }

    /// Closes idle connections and refuses new leases (config reload removed this pool).
    func shutdown() {
        self.closed = true
        for connection in self.idle { connection.close() }
        self.idle.removeAll()
        while let waiter = self.waiters.popFirst() {
            waiter.timeout.cancel()
            waiter.requester.leaseFailed(.upstreamUnreachable)
        }
    }


    // MARK: Internals

    private func handOut(_ connection: UpstreamConnection) {
        if let waiter = self.waiters.popFirst() {
            waiter.timeout.cancel()
            waiter.requester.leaseSucceeded(connection, reused: connection.completedRequests > 0)
        } else {
            self.idle.append(connection)
        }
    }

    private func removeWaiter(_ requester: UpstreamLeaseRequester) {
        if let index = self.waiters.firstIndex(where: { $0.requester === requester }) {
            self.waiters[index].timeout.cancel()
            self.waiters.remove(at: index)
        }
    }

    private func connectionClosed(_ identity: ObjectIdentifier) {
        self.openCount -= 1
        if let index = self.idle.firstIndex(where: { ObjectIdentifier($0) == identity }) {
            self.idle.remove(at: index)
        }
        // Room for a new connection: serve the longest waiter.
        if let waiter = self.waiters.popFirst(), !self.closed {
            waiter.timeout.cancel()
            self.openCount += 1
            self.connect(for: waiter.requester, tried: [])
        }
    }

    private func connect(for requester: UpstreamLeaseRequester, tried: Set<Int>) {
        guard !self.closed, let targetIndex = self.selector.pick(now: .now(), excluding: tried) else {
            self.openCount -= 1
            requester.leaseFailed(.upstreamUnreachable)
            return
        }
        let target = self.targets[targetIndex]
        self.connector.connect(to: target, eventLoop: self.eventLoop, timeout: self.connectTimeout, tls: target.isTLS ? self.tlsContext : nil)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    self.selector.connectSucceeded(targetIndex)
                    self.onConnectResult?(targetIndex, true, nil)
                    guard let handler = try? channel.pipeline.syncOperations.handler(type: UpstreamHandler.self) else {
                        channel.close(promise: nil)
                        self.openCount -= 1
                        requester.leaseFailed(.upstreamUnreachable)
                        return
                    }
                    let connection = UpstreamConnection(channel: channel, handler: handler, targetIndex: targetIndex)
                    connection.pool = self
                    // Identity only: the connection object may be gone by the time its channel closes.
                    let identity = ObjectIdentifier(connection)
                    handler.onClose = { [weak self] in self?.connectionClosed(identity) }
                    if self.closed {
                        connection.close()
                        requester.leaseFailed(.upstreamUnreachable)
                    } else {
                        // A requester that no longer wants it hands it back with `returnUnused`.
                        requester.leaseSucceeded(connection, reused: false)
                    }
                case .failure(let error):
                    self.selector.connectFailed(targetIndex, now: .now())
                    self.onConnectResult?(targetIndex, false, "\(error)")
                    var tried = tried
                    tried.insert(targetIndex)
                    if tried.count < self.targets.count {
                        self.connect(for: requester, tried: tried)
                    } else {
                        self.openCount -= 1
                        requester.leaseFailed(.upstreamUnreachable)
                    }
                }
            }
    }

}

@available(*, unavailable)
extension UpstreamPool: Sendable {}

/// Opens a channel to an upstream target whose pipeline ends in an `UpstreamHandler`.
protocol UpstreamConnector {
    func connect(to target: UpstreamURL, eventLoop: EventLoop, timeout: TimeAmount, tls: NIOSSLContext?) -> EventLoopFuture<Channel>
}

/// TCP (and TLS) connections with NIO's `ClientBootstrap`.
struct SocketConnector: UpstreamConnector {
    func connect(to target: UpstreamURL, eventLoop: EventLoop, timeout: TimeAmount, tls: NIOSSLContext?) -> EventLoopFuture<Channel> {
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
    static func addHTTPHandlers(to channel: Channel) throws {
        try channel.pipeline.syncOperations.addHandler(UpstreamHandler())
    }
}
