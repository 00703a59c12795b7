import NIOCore

/// The stream's timer: a stalled upload gets `idleSeconds`, the backend its response timeout
/// (shortened by `grpc-timeout`), as `ConnectionDeadlines` says.
extension HTTP2StreamHandler {
    private var timeoutLimits: ConnectionDeadlines.Limits {
        let snapshot = self.worker.snapshot
        var response = self.exchange?.plan?.responseTimeout ?? .seconds(30)
        if let grpcTimeout = self.grpcTimeout, grpcTimeout < response { response = grpcTimeout }
        return ConnectionDeadlines.Limits(
            // The usual granularity even under a short `grpc-timeout`: an earlier deadline is
            // armed directly (`ConnectionDeadlines.update`); a granularity as short as the
            // client's timeout would re-arm the idle timer of an upload every millisecond.
            requestHeader: snapshot.requestHeaderTimeout, idle: snapshot.idleTimeout, response: response, granularity: snapshot.timerGranularity
        )
    }

    func updateTimer(context: ChannelHandlerContext) {
        guard !self.state.isClosed else { return }
        // A stream is never idle between requests: only its request's own waits are timed.
        let timeout = self.state.isIdle ? ProxyStateMachine.Timeout.none : self.state.timeout
        if case .arm(let at) = self.deadlines.update(for: timeout, isIdle: false, now: .now(), limits: self.timeoutLimits) {
            self.arm(at, context: context)
        }
    }

    private func arm(_ deadline: NIODeadline, context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.timerFired(context: context)
        }
    }

    private func timerFired(context: ChannelHandlerContext) {
        self.timer = nil
        switch self.deadlines.timerFired(now: .now(), isIdle: false, granularity: self.timeoutLimits.granularity) {
        case .none, .slowHeaders:
            break
        case .rearm(let at):
            self.arm(at, context: context)
        case .timedOut:
            self.run(self.state.timedOut(), context: context)
        }
    }
}
