import NIOCore

/// The connection's one timer, run as `ConnectionDeadlines` says.
extension HTTP1ServerConnection {
    var timeoutLimits: ConnectionDeadlines.Limits {
        let snapshot = self.environment.snapshot
        return ConnectionDeadlines.Limits(
            requestHeader: snapshot.requestHeaderTimeout,
            idle: snapshot.idleTimeout,
            response: self.exchange?.plan?.responseTimeout ?? .seconds(30),
            granularity: snapshot.timerGranularity
        )
    }

    /// The state may have changed: keep the timer armed for the deadline that applies now.
    func updateTimer(context: ChannelHandlerContext) {
        guard !self.state.isClosed else { return }
        if !self.streamOpen, self.deadlines.credentialDeadline != nil, !self.tunnelClose.isEnding {
            // The stream ended: its credential is no longer watched.
            _ = self.deadlines.setCredentialDeadline(nil, now: .now(), granularity: self.timeoutLimits.granularity)
        }
        let action = self.deadlines.update(
            for: self.state.timeout, isIdle: self.state.isIdle, now: .now(), limits: self.timeoutLimits)
        if case .arm(let at) = action { self.armTimer(at, context: context) }
    }

    func armTimer(_ deadline: NIODeadline, context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self.timerFired(context: context)
        }
    }

    private func timerFired(context: ChannelHandlerContext) {
        self.timer = nil
        switch self.deadlines.timerFired(
            now: .now(), isIdle: self.state.isIdle, granularity: self.environment.snapshot.timerGranularity)
        {
        case .none:
            break
        case .rearm(let at):
            self.armTimer(at, context: context)
        case .slowHeaders:
            // Slow headers (slowloris): tell the client and close, disturbing nobody else.
            self.exchange = self.bareExchange()
            self.run(self.state.protocolError(.requestTimeout), context: context)
        case .timedOut:
            self.run(self.state.timedOut(), context: context)
        case .credentialExpired:
            self.credentialDeadlinePassed(context: context)
        }
    }
}
