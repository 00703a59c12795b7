import NIOCore
import NIOHTTP1

/// The events of an exchange's upstream side, which every state machine of a request takes
/// alike: `ExchangeStateMachine` itself, and each framing's machine around it —
/// `HTTP1ConnectionStateMachine` (an HTTP/1.1 connection, around the exchange of its request in
/// flight) and `HTTP2StreamStateMachine` (an HTTP/2 stream, around the exchange of its one
/// request).
protocol ExchangeEvents {
    associatedtype Action
    /// A lease is pending: one that completes now is used (else it goes back unused).
    var awaitsLease: Bool { get }
    var shouldReadFromUpstream: Bool { get }
    mutating func decidedToRespondLocally() -> Action
    mutating func leaseSucceeded(reused: Bool) -> Action
    mutating func leaseFailed(_ error: GatewayError) -> Action
    mutating func upstreamFailed() -> Action
    mutating func upstreamProtocolError() -> Action
    mutating func upstreamWritabilityChanged(_ writable: Bool) -> Action
}

/// What an HTTP/1.1 connection (`HTTP1ServerConnection`) and an HTTP/2 stream (`HTTP2ServerStream`)
/// share — the protocol-independent part of a request's life: its decision (`RequestPlanner`),
/// the upstream lease, the backend's events fed to the state machine, and the finish. Only
/// the framing differs: each handler runs the state machine's actions its own way (`run`) and
/// adopts a plan with its protocol's own checks (`adopt`).
protocol ExchangeHandler: AnyObject, UpstreamLeaseRequester, UpstreamConnectionDelegate, StreamOwner {
    associatedtype StateMachine: ExchangeEvents
    var environment: any ExchangeEnvironment { get }
    var connection: ClientConnectionInfo { get }
    var state: StateMachine { get set }
    var exchange: Exchange? { get set }
    /// The exchange is a long-lived stream in the loop's registry (docs/streams.md).
    var streamOpen: Bool { get set }
    var upstream: UpstreamLease? { get set }
    /// The pool a lease is pending with.
    var leasingPool: UpstreamPool? { get set }
    var context: ChannelHandlerContext? { get }

    func run(_ action: consuming StateMachine.Action, context: ChannelHandlerContext)
    func updateTimer(context: ChannelHandlerContext)
    /// Takes the planner's decision: answer locally or forward.
    func adopt(_ plan: RequestPlan, context: ChannelHandlerContext)
}

extension ExchangeHandler {
    // MARK: Deciding

    /// Plans the request whose head arrived (route, authenticate, rewrite), now or once the
    /// auth service or a key refetch has answered.
    func decide(_ head: HTTPRequestHead, framing: BodyFraming, requestID: String, context: ChannelHandlerContext) {
        let planner = RequestPlanner(
            environment: self.environment, snapshot: self.environment.snapshot, connection: self.connection)
        switch planner.plan(
            head: head, framing: framing, requestID: requestID, now: self.environment.wallClock(),
            trace: self.exchange?.trace)
        {
        case .ready(let plan):
            self.adopt(plan, context: context)
        case .pending(let future, let route):
            self.exchange?.routeName = route
            future.assumeIsolated().whenComplete { result in
                guard let context = self.context, self.exchange?.requestID == requestID else { return }
                switch result {
                case .success(let plan):
                    self.adopt(plan, context: context)
                case .failure:
                    self.exchange?.local = .problem(.authServiceUnavailable, requestID: requestID)
                    self.run(self.state.decidedToRespondLocally(), context: context)
                }
                self.updateTimer(context: context)
            }
        }
    }

    // MARK: Lease

    func lease(context: ChannelHandlerContext) {
        guard let plan = self.exchange?.plan else { return }
        if let local = plan.local {
            // The gateway's own endpoint: "leased" at once, never pooled.
            let lease = local.lease(on: context.eventLoop, method: plan.head.method) { [weak self] route in
                self?.exchange?.routeName = route
            }
            self.leaseSucceeded(lease, reused: false)
            return
        }
        guard let pool = plan.pool else { return }
        // Set before asking: a "pending" lease can be delivered (or failed) before `lease`
        // returns — an HTTP/2 stream opens synchronously — and the callback clears it.
        self.leasingPool = pool
        if case .leased(let lease, let reused) = pool.lease(for: self) {
            self.leaseSucceeded(lease, reused: reused)
        }
    }

    /// The upstream died before answering a replayable request: drop it and lease another.
    func retryOnAnotherUpstream(context: ChannelHandlerContext) {
        self.upstream?.close()
        self.upstream = nil
        self.lease(context: context)
    }

    func cancelLease() {
        if let pool = self.leasingPool {
            self.leasingPool = nil
            pool.cancelLease(for: self)
        }
    }

    func leaseSucceeded(_ lease: UpstreamLease, reused: Bool) {
        self.leasingPool = nil
        guard let context = self.context, self.state.awaitsLease else {
            // Its requester has gone: back to the pool as it was.
            lease.returnUnused(reused: reused)
            return
        }
        self.upstream = lease
        lease.delegate = self
        self.run(self.state.leaseSucceeded(reused: reused), context: context)
        self.updateTimer(context: context)
    }

    func leaseFailed(_ error: GatewayError) {
        self.leasingPool = nil
        guard let context = self.context else { return }
        self.countUpstreamError(error)
        self.run(self.state.leaseFailed(error), context: context)
        self.updateTimer(context: context)
    }

    // MARK: Upstream events

    func upstreamClosed(protocolError: Bool) {
        guard let context = self.context else { return }
        self.upstream = nil
        let action = protocolError ? self.state.upstreamProtocolError() : self.state.upstreamFailed()
        self.run(action, context: context)
        self.updateTimer(context: context)
    }

    func upstreamWritabilityChanged(_ writable: Bool) {
        guard let context = self.context else { return }
        self.run(self.state.upstreamWritabilityChanged(writable), context: context)
    }

    var shouldReadFromUpstream: Bool { self.state.shouldReadFromUpstream }

    /// The backend's response head arrived: its latency, for the upstream histogram.
    func observeUpstreamLatency(_ exchange: Exchange, backend: String) {
        // The gateway's own endpoints are not backends.
        guard let sentAt = exchange.upstreamSentAt, exchange.plan?.local == nil else { return }
        self.environment.metrics.observeUpstreamDuration(
            backend: backend, seconds: Double((NIODeadline.now() - sentAt).nanoseconds) / 1e9)
    }

    // MARK: Finishing

    /// Ends the exchange in flight (metrics, access log, trace: `Exchange.finish`).
    func finishExchange(status: Int, error: GatewayError?) {
        self.closeStream()
        guard let exchange = self.exchange else { return }
        self.exchange = nil
        exchange.finish(status: status, error: error, environment: self.environment, client: self.connection.peerIP)
    }

    /// The exchange gives up on its backend (`failForwarding`, `abandon`): a pending lease is
    /// cancelled and the connection or stream dropped — after a timeout, counted against the
    /// backend's URL (outlier detection, docs/forwarding.md) — and `error`, if any, counted.
    func dropUpstream(after error: GatewayError?) {
        self.cancelLease()
        if error == GatewayError.upstreamTimeout { self.upstream?.timedOut() } else { self.upstream?.close() }
        self.upstream = nil
        if let error { self.countUpstreamError(error) }
    }

    /// The client left: whatever is in flight is dropped, and the exchange ends as 499
    /// (nginx's "client closed request", so the access log tells who gave up). The framing then
    /// closes the connection or resets the stream.
    func abandonExchange() {
        self.dropUpstream(after: nil)
        self.finishExchange(status: 499, error: nil)
    }

    func countUpstreamError(_ error: GatewayError) {
        guard let plan = self.exchange?.plan, plan.local == nil else { return }
        let backend = plan.route.backend
        self.environment.metrics.increment(.upstreamError(backend: backend, error))
    }
}
