import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Keep-alive connections from one event loop to one upstream (a backend's URLs, or the auth
/// service), Envoy-style: each loop has its own pools, so leasing takes no lock.
///
/// The decisions — which URL, which idle connection or stream slot, when to connect, wait or
/// fail — are `PoolStateMachine`'s; this shell runs its actions: it connects
/// (`UpstreamConnector`), opens HTTP/2 streams, arms the wait limits (`connectTimeout`, then
/// 503) and calls the requesters back.
final class UpstreamPool {
    typealias Target = UpstreamURL
    private typealias Machine = PoolStateMachine<PooledConnection>

    let name: String
    let eventLoop: EventLoop
    let targets: [Target]
    let connectTimeout: TimeAmount
    /// How requests reach these targets: HTTP/1.1, or streams of HTTP/2 connections.
    let wireProtocol: BackendConfiguration.WireProtocol
    private let tls: UpstreamTLS?
    /// Which targets are in rotation: a backend's is shared by every loop's pool and the
    /// health prober (docs/forwarding.md); other upstreams have one of their own.
    let availability: TargetAvailability
    private let connector: UpstreamConnector
    private var state: Machine
    private var nextLeaseID = 0
    /// Leases waiting for a connection (being opened, or in line), by lease id.
    private var pending: [Int: PendingLease] = [:]
    /// Told about each connect attempt (for `/healthz`): target index, success, error text.
    var onConnectResult: ((Int, Bool, String?) -> Void)?

    private struct PendingLease {
        let requester: UpstreamLeaseRequester
        var timeout: Scheduled<Void>?
    }

    /// `tls` is used for `https` targets (with ALPN `h2` for an `h2` pool).
    init(
        name: String, eventLoop: EventLoop, targets: [Target], maxConnections: Int, connectTimeout: TimeAmount,
        tls: UpstreamTLS?,
        connector: UpstreamConnector, wireProtocol: BackendConfiguration.WireProtocol = .http1,
        availability: TargetAvailability? = nil
    ) {
        self.availability = availability ?? TargetAvailability(name: name, urls: targets)
        self.name = name
        self.wireProtocol = wireProtocol
        self.eventLoop = eventLoop
        self.targets = targets
        self.connectTimeout = connectTimeout
        self.tls = tls
        self.connector = connector
        self.state = Machine(
            targetCount: targets.count, maxConnections: maxConnections,
            mode: wireProtocol.isHTTP2 ? .multiplexed : .exclusive)
    }

    var maxConnections: Int { self.state.maxConnections }

    enum LeaseResult {
        case leased(UpstreamLease, reused: Bool)
        /// The requester will be called back.
        case pending
    }

    /// Leases a connection (or an HTTP/2 stream): an idle one at once, else a new or freed one
    /// later.
    func lease(for requester: UpstreamLeaseRequester) -> LeaseResult {
        self.eventLoop.preconditionInEventLoop()
        let id = self.nextLeaseID
        self.nextLeaseID &+= 1
        let now = NIODeadline.now()
        self.state.setOutOfRotation(self.availability.outOfRotation(now: now))
        let action = self.state.lease(id, now: now)
        if case .deliver(.http1(let connection), to: id, let reused) = action {
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

    /// Takes back an HTTP/1.1 connection that was leased but never used.
    func returnUnused(_ connection: UpstreamConnection, reused: Bool) {
        self.eventLoop.preconditionInEventLoop()
        connection.handler.delegate = nil
        self.run(
            self.state.returnedUnused(
                .http1(connection), target: connection.targetIndex, reused: reused, reusable: connection.isReusable))
    }

    /// Returns an HTTP/1.1 connection after a complete exchange.
    func release(_ connection: UpstreamConnection) {
        self.eventLoop.preconditionInEventLoop()
        connection.handler.delegate = nil
        self.run(
            self.state.released(.http1(connection), target: connection.targetIndex, reusable: connection.isReusable))
    }

    /// Closes unused connections and refuses new leases (config reload removed this pool).
    func shutdown() {
        self.run(self.state.shutDown())
    }

    // MARK: Running actions

    private func run(_ action: Machine.Action) {
        switch action {
        case .none:
            break
        case .deliver(let connection, let lease, let reused):
            self.deliver(connection, to: lease, reused: reused)
        case .deliverAll(let connection, let leases):
            for lease in leases { self.deliver(connection, to: lease, reused: false) }
        case .connect(let attempt):
            self.connect(attempt)
        case .closeAndConnect(let unused, let attempt):
            unused.close()
            self.connect(attempt)
        case .wait(let lease):
            self.pending[lease]?.timeout = self.eventLoop.assumeIsolated().scheduleTask(in: self.connectTimeout) {
                [weak self] in
                guard let self else { return }
                self.run(self.state.waitTimedOut(lease))
            }
        case .fail(let lease, let failure):
            guard let waiting = self.pending.removeValue(forKey: lease) else { return }
            waiting.timeout?.cancel()
            waiting.requester.leaseFailed(failure == .busy ? .upstreamBusy : .upstreamUnreachable)
        case .failAll(let leases, let failure):
            for lease in leases { self.run(.fail(lease, failure)) }
        case .close(let connection):
            connection.close()
        case .shutDown(let unused, let leases):
            for connection in unused { connection.close() }
            for lease in leases { self.run(.fail(lease, .unreachable)) }
        }
    }

    private func deliver(_ connection: PooledConnection, to lease: Int, reused: Bool) {
        switch connection {
        case .http1(let http1):
            guard let waiting = self.pending.removeValue(forKey: lease) else {
                // The requester is gone (it cancelled while the connection was on its way).
                self.run(
                    self.state.returnedUnused(
                        connection, target: http1.targetIndex, reused: reused, reusable: http1.isReusable))
                return
            }
            waiting.timeout?.cancel()
            waiting.requester.leaseSucceeded(http1, reused: reused)
        case .http2(let http2):
            // The slot is taken; it is given back exactly once: when the stream closes, or when
            // it fails to open (whether or not its handler saw a close first).
            var slotFreed = false
            let freeSlot = { [weak self] in
                guard let self, !slotFreed else { return }
                slotFreed = true
                self.run(self.state.streamClosed(connection, target: http2.targetIndex))
            }
            http2.openStream(onClose: freeSlot).assumeIsolated().whenComplete { result in
                guard let waiting = self.pending.removeValue(forKey: lease) else {
                    switch result {
                    case .success(let stream): stream.close()
                    case .failure: freeSlot()
                    }
                    return
                }
                waiting.timeout?.cancel()
                switch result {
                case .success(let stream):
                    waiting.requester.leaseSucceeded(stream, reused: reused)
                case .failure:
                    freeSlot()
                    waiting.requester.leaseFailed(.upstreamUnreachable)
                }
            }
        }
    }

    private func connect(_ attempt: Machine.Attempt) {
        let target = self.targets[attempt.target]
        self.connector.connect(
            to: target, eventLoop: self.eventLoop, timeout: self.connectTimeout, tls: target.isTLS ? self.tls : nil,
            http2: self.wireProtocol.isHTTP2
        )
        .assumeIsolated()
        .whenComplete { result in
            switch result {
            case .success(let channel):
                self.onConnectResult?(attempt.target, true, nil)
                guard let connection = self.adopt(channel, target: attempt.target) else {
                    channel.close(promise: nil)
                    self.connectFailed(attempt)
                    return
                }
                self.availability.connectSucceeded(attempt.target)
                self.run(self.state.connected(attempt.id, connection))
            case .failure(let error):
                self.onConnectResult?(attempt.target, false, "\(error)")
                self.connectFailed(attempt)
            }
        }
    }

    /// The target sits out (process-wide for a backend) and the lease tries the next one.
    private func connectFailed(_ attempt: Machine.Attempt) {
        let now = NIODeadline.now()
        self.availability.connectFailed(attempt.target, now: now)
        self.state.setOutOfRotation(self.availability.outOfRotation(now: now))
        self.run(self.state.connectFailed(attempt.id, now: now))
    }

    /// Reports each exchange's outcome on `target` to the availability.
    private func outcomeReporter(target: Int) -> (UpstreamOutcome) -> Void {
        let availability = self.availability
        return { outcome in
            switch outcome {
            case .responded(let status) where status == 502 || status == 503 || status == 504:
                availability.failed(target, .status(status), now: .now())
            case .responded:
                // The happy path: one relaxed atomic load, no lock, no clock.
                availability.succeeded(target)
            case .reset: availability.failed(target, .reset, now: .now())
            case .timedOut: availability.failed(target, .timeout, now: .now())
            }
        }
    }

    /// A connected channel as a pooled connection, wired so that its close (and, for HTTP/2,
    /// the peer's stream limit and GOAWAY) reach the state machine. Every connection's close
    /// frees its slot exactly once (the handler calls back once and then drops the closure,
    /// which ends the reference cycle).
    private func adopt(_ channel: Channel, target: Int) -> PooledConnection? {
        let sync = channel.pipeline.syncOperations
        if self.wireProtocol.isHTTP2 {
            guard let handler = try? sync.handler(type: UpstreamHTTP2ConnectionHandler.self),
                let multiplexer = try? sync.handler(type: NIOHTTP2Handler.self).syncMultiplexer()
            else { return nil }
            let http2 = UpstreamHTTP2Connection(
                channel: channel, multiplexer: multiplexer, targetIndex: target,
                scheme: self.targets[target].isTLS ? "https" : "http"
            )
            http2.pool = self
            http2.onOutcome = self.outcomeReporter(target: target)
            let connection = PooledConnection.http2(http2)
            handler.onStreamCapacity = { [weak self] capacity in
                guard let self else { return }
                self.run(self.state.streamCapacityChanged(connection, target: target, to: capacity))
            }
            handler.onGoAway = { [weak self] in
                guard let self else { return }
                self.run(self.state.goAwayReceived(connection, target: target))
            }
            handler.onClose = { [weak self] in
                guard let self else { return }
                self.run(self.state.closed(connection, target: target, now: .now()))
            }
            return connection
        }
        guard let handler = try? sync.handler(type: UpstreamHandler.self) else { return nil }
        let http1 = UpstreamConnection(channel: channel, handler: handler, targetIndex: target)
        http1.pool = self
        handler.onOutcome = self.outcomeReporter(target: target)
        let connection = PooledConnection.http1(http1)
        handler.onClose = { [weak self] in
            guard let self else { return }
            self.run(self.state.closed(connection, target: target, now: .now()))
        }
        return connection
    }
}

@available(*, unavailable)
extension UpstreamPool: Sendable {}
