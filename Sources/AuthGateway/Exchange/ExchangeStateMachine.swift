import NIOCore

/// The life of one request, whatever its framing, as a pure state machine: events in, actions
/// out, no I/O, no clocks (docs/architecture.md). Each framing's own state machine carries one
/// and adds what only that framing has: `HTTP1ConnectionStateMachine`, one per request of an
/// HTTP/1.1 connection (keep-alive, pipelining, `Expect: 100-continue`, the WebSocket tunnel,
/// drain); `HTTP2StreamStateMachine`, the one request of an HTTP/2 stream (the stream's halves,
/// `content-length`, held frames).
///
/// States and legal transitions:
/// - `deciding` (the head arrived: route, authenticate) → `leasing` (authorized) | `done`
///   (answered locally)
/// - `leasing` → `forwarding` (got an upstream) | `done` (no upstream: answered with an error)
/// - `forwarding` → `done` (the response ended, or failed) | `leasing` (a safe retry); a
///   response that ends before the request body stays in `forwarding(.complete)` until the
///   body's end has gone upstream
/// - any → `done` (the client went away, a protocol error); `done` is final.
///
/// Body parts that arrive before an upstream is ready are buffered here (bounded by
/// `maxBodyBytes`, like every body).
struct ExchangeStateMachine: ExchangeEvents {
    struct Request {
        /// Idempotent and without body: may be replayed on a fresh connection.
        var replayable: Bool
        /// The request announced a body.
        var hasBody: Bool
        /// The request's end has been received.
        var bodyComplete = false
        /// Body parts that arrived before an upstream was ready.
        var bufferedBody: [ByteBuffer] = []
        var bodyBytes = 0
        var retries = 0

        /// Body bytes are still on their way.
        var hasUnreadBody: Bool { self.hasBody && !self.bodyComplete }
    }

    enum ResponsePhase {
        case awaitingHead
        case streaming
        /// The response ended before the request body did (a backend answering an upload
        /// early, as nginx's `return` does): the rest of the body still goes upstream, then
        /// the upstream is kept, as HAProxy does, instead of resetting the client.
        case complete(upstreamReusable: Bool)
    }

    enum State {
        case deciding(Request)
        case leasing(Request)
        case forwarding(Request, ResponsePhase, reusedUpstream: Bool)
        case done
    }

    enum Action: Equatable {
        case none
        /// Ask the pool for an upstream.
        case lease
        /// Send the request head upstream, then `body`, then the end when `end`.
        case sendRequest(body: [ByteBuffer], end: Bool)
        case forwardBody(ByteBuffer)
        case forwardEnd
        /// The response head is ready to go to the client.
        case writeResponseHead
        case writeResponseBody(ByteBuffer)
        /// The response is complete: release the upstream (reusable or not); the exchange ends.
        case finishResponse(reuseUpstream: Bool)
        /// The response is complete but the request body is not: end the client's response
        /// and keep forwarding the body.
        case finishResponseOnly
        /// The request body ended after its response: send the end upstream, then release the
        /// upstream; the exchange ends.
        case forwardEndAndRelease(reuseUpstream: Bool)
        /// Write the locally prepared response (an error or a health answer); the exchange ends.
        case writeLocalResponse
        /// Answer with `error`; the exchange ends.
        case respondWithError(GatewayError)
        /// Drop the upstream; answer `error` if given, else cut the client's response short
        /// (close the connection, reset the stream). The exchange ends.
        case failForwarding(GatewayError?)
        /// The upstream died before answering a replayable request: discard it, lease another.
        case retry
        /// The client left: drop whatever is in flight (pending lease, upstream).
        case abandon
        case resumeClientReads
        case resumeUpstreamReads
    }

    /// The timeout that applies now.
    enum Timeout: Equatable {
        case none
        /// Waiting for the client: `idleSeconds`.
        case idle
        /// Waiting on the backend: `responseTimeoutMilliseconds`.
        case response
    }

    private(set) var state: State
    private(set) var clientWritable = true
    private(set) var upstreamWritable = true
    let maxBodyBytes: Int

    /// A request whose head has arrived.
    init(replayable: Bool, hasBody: Bool, maxBodyBytes: Int) {
        self.state = .deciding(Request(replayable: replayable, hasBody: hasBody))
        self.maxBodyBytes = maxBodyBytes
    }

    // MARK: Client events

    mutating func requestBody(_ part: ByteBuffer) -> Action {
        switch self.state {
        case .deciding(var request):
            guard self.accept(part, into: &request) else { return self.tooLarge() }
            request.bufferedBody.append(part)
            self.state = .deciding(request)
            return .none
        case .leasing(var request):
            guard self.accept(part, into: &request) else { return self.tooLarge() }
            request.bufferedBody.append(part)
            self.state = .leasing(request)
            return .none
        case .forwarding(var request, let phase, let reused):
            guard !request.bodyComplete else { return .none }
            guard self.accept(part, into: &request) else { return self.tooLarge() }
            self.state = .forwarding(request, phase, reusedUpstream: reused)
            return .forwardBody(part)
        case .done:
            return .none
        }
    }

    mutating func requestEnd() -> Action {
        switch self.state {
        case .deciding(var request):
            request.bodyComplete = true
            self.state = .deciding(request)
            return .none
        case .leasing(var request):
            request.bodyComplete = true
            self.state = .leasing(request)
            return .none
        case .forwarding(var request, let phase, let reused):
            guard !request.bodyComplete else { return .none }
            request.bodyComplete = true
            if case .complete(let upstreamReusable) = phase {
                self.state = .done
                return .forwardEndAndRelease(reuseUpstream: upstreamReusable)
            }
            self.state = .forwarding(request, phase, reusedUpstream: reused)
            return .forwardEnd
        case .done:
            return .none
        }
    }

    /// The request is malformed (a parser's 400, DATA that disagrees with `content-length`):
    /// answered if nothing was forwarded yet, else the response is cut short.
    mutating func protocolError(_ error: GatewayError) -> Action {
        switch self.state {
        case .deciding, .leasing:
            self.state = .done
            return .respondWithError(error)
        case .forwarding(_, .awaitingHead, _):
            self.state = .done
            return .failForwarding(error)
        case .forwarding(_, .streaming, _), .forwarding(_, .complete, _):
            self.state = .done
            return .failForwarding(nil)
        case .done:
            return .none
        }
    }

    mutating func clientClosed() -> Action {
        switch self.state {
        case .deciding, .leasing, .forwarding:
            self.state = .done
            return .abandon
        case .done:
            return .none
        }
    }

    mutating func clientWritabilityChanged(_ writable: Bool) -> Action {
        self.clientWritable = writable
        guard case .forwarding = self.state else { return .none }
        return writable ? .resumeUpstreamReads : .none
    }

    // MARK: Decision

    mutating func decidedToForward() -> Action {
        guard case .deciding(let request) = self.state else { return .none }
        self.state = .leasing(request)
        return .lease
    }

    /// The gateway answers this request itself.
    mutating func decidedToRespondLocally() -> Action {
        guard case .deciding = self.state else { return .none }
        self.state = .done
        return .writeLocalResponse
    }

    // MARK: Upstream events

    /// A lease is pending: a lease that completes now is used (else it goes back unused).
    var awaitsLease: Bool {
        if case .leasing = self.state { return true }
        return false
    }

    mutating func leaseSucceeded(reused: Bool) -> Action {
        guard case .leasing(var request) = self.state else { return .none }
        let body = request.bufferedBody
        request.bufferedBody = []
        self.upstreamWritable = true
        self.state = .forwarding(request, .awaitingHead, reusedUpstream: reused)
        return .sendRequest(body: body, end: request.bodyComplete)
    }

    mutating func leaseFailed(_ error: GatewayError) -> Action {
        guard case .leasing = self.state else { return .none }
        self.state = .done
        return .respondWithError(error)
    }

    mutating func responseHead() -> Action {
        guard case .forwarding(let request, .awaitingHead, let reused) = self.state else { return .none }
        self.state = .forwarding(request, .streaming, reusedUpstream: reused)
        return .writeResponseHead
    }

    mutating func responseBody(_ part: ByteBuffer) -> Action {
        guard case .forwarding(_, .streaming, _) = self.state else { return .none }
        return .writeResponseBody(part)
    }

    /// `upstreamReusable`: the upstream may serve another exchange.
    mutating func responseEnd(upstreamReusable: Bool) -> Action {
        guard case .forwarding(let request, .streaming, let reused) = self.state else { return .none }
        if request.hasUnreadBody {
            self.state = .forwarding(request, .complete(upstreamReusable: upstreamReusable), reusedUpstream: reused)
            return .finishResponseOnly
        }
        self.state = .done
        return .finishResponse(reuseUpstream: upstreamReusable)
    }

    /// The upstream closed or failed. Before any response byte, a replayable request on a
    /// reused upstream is retried once (the keep-alive race: the backend closed an idle
    /// connection as we reused it); otherwise 502.
    mutating func upstreamFailed() -> Action {
        switch self.state {
        case .forwarding(var request, .awaitingHead, let reused):
            if reused && request.replayable && request.retries == 0 {
                request.retries += 1
                self.state = .leasing(request)
                return .retry
            }
            self.state = .done
            return .failForwarding(.upstreamUnreachable)
        case .forwarding(_, .streaming, _), .forwarding(_, .complete, _):
            self.state = .done
            return .failForwarding(nil)
        case .deciding, .leasing, .done:
            return .none
        }
    }

    /// The backend sent something that is not a valid HTTP response.
    mutating func upstreamProtocolError() -> Action {
        switch self.state {
        case .forwarding(_, .awaitingHead, _):
            self.state = .done
            return .failForwarding(.upstreamProtocolError)
        case .forwarding(_, .streaming, _), .forwarding(_, .complete, _):
            self.state = .done
            return .failForwarding(nil)
        case .deciding, .leasing, .done:
            return .none
        }
    }

    mutating func upstreamWritabilityChanged(_ writable: Bool) -> Action {
        self.upstreamWritable = writable
        guard writable, case .forwarding(let request, _, _) = self.state else { return .none }
        return request.bodyComplete ? .none : .resumeClientReads
    }

    // MARK: Time

    /// The timeout of the current state ran out.
    mutating func timedOut() -> Action {
        switch self.state {
        case .forwarding(let request, .awaitingHead, _) where request.bodyComplete:
            self.state = .done
            return .failForwarding(.upstreamTimeout)
        case .forwarding(_, .awaitingHead, _):
            // The client stopped sending its body: say so before closing.
            self.state = .done
            return .failForwarding(.requestTimeout)
        case .forwarding:
            self.state = .done
            return .failForwarding(nil)
        case .deciding, .leasing, .done:
            return .none
        }
    }

    /// The credential of the request's long-lived stream ran out or was revoked
    /// (docs/streams.md): whatever is in flight is cut short — the upstream dropped, the
    /// client's connection closed or its stream reset (each framing says how).
    mutating func credentialEnded() -> Action {
        guard !self.isDone else { return .none }
        self.state = .done
        return .failForwarding(nil)
    }

    var timeout: Timeout {
        switch self.state {
        case .forwarding(let request, .awaitingHead, _): return request.bodyComplete ? .response : .idle
        case .forwarding(_, .streaming, _): return .response
        // Only the client's upload is left.
        case .forwarding(_, .complete, _): return .idle
        case .deciding, .leasing, .done: return .none
        }
    }

    // MARK: Flow control

    /// Whether to read more of the request: not while it waits for its decision or upstream
    /// (what arrived is buffered), nor while the upstream cannot take more body.
    var shouldReadFromClient: Bool {
        switch self.state {
        case .deciding, .leasing, .done: return false
        case .forwarding(let request, _, _): return request.bodyComplete || self.upstreamWritable
        }
    }

    /// Whether to read more from the backend: only while the client keeps up.
    var shouldReadFromUpstream: Bool { self.clientWritable }

    /// Body bytes are still on their way (answering now leaves them unread).
    var hasUnreadBody: Bool {
        switch self.state {
        case .deciding(let request), .leasing(let request), .forwarding(let request, _, _): return request.hasUnreadBody
        case .done: return false
        }
    }

    /// Waiting for the backend's response head to a request that has fully gone upstream
    /// without a body: the only moment a protocol upgrade (101) may answer.
    var mayUpgrade: Bool {
        guard case .forwarding(let request, .awaitingHead, _) = self.state else { return false }
        return request.bodyComplete && !request.hasBody
    }

    var isDone: Bool {
        if case .done = self.state { return true }
        return false
    }

    // MARK: Helpers

    private func accept(_ part: ByteBuffer, into request: inout Request) -> Bool {
        request.bodyBytes += part.readableBytes
        return request.bodyBytes <= self.maxBodyBytes
    }

    private mutating func tooLarge() -> Action {
        switch self.state {
        case .forwarding(_, .awaitingHead, _):
            self.state = .done
            return .failForwarding(.bodyTooLarge)
        case .forwarding(_, .streaming, _), .forwarding(_, .complete, _):
            self.state = .done
            return .failForwarding(nil)
        case .deciding, .leasing:
            self.state = .done
            return .respondWithError(.bodyTooLarge)
        case .done:
            return .none
        }
    }
}
