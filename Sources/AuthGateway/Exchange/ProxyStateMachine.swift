import NIOCore

/// The life of requests on one client connection, as a pure state machine: events in, actions
/// out, no I/O, no clocks (DESIGN.md habit 1). `ProxyHandler` (an HTTP/1.1 connection) and
/// `HTTP2ServerStream` (one HTTP/2 stream, one request, never kept alive) feed it and run its
/// actions.
///
/// Requests are strictly sequential here: `ProxyHandler` holds pipelined requests back until
/// the previous response has ended.
///
/// States and legal transitions:
/// - `idle` → `deciding` (a request head arrived)
/// - `deciding` → `leasing` (authorized) | `idle`/`closed` (answered locally)
/// - `leasing` → `forwarding` (got an upstream connection) | `idle`/`closed` (no connection)
/// - `forwarding` → `idle` (response ended, connection kept) | `leasing` (safe retry)
///   | `closed` (failed, or the client or response asked to close); a response that ends
///   before the request body stays in `forwarding(.complete)` until the body's end is sent
/// - `forwarding` → `tunnel` (a WebSocket upgrade answered 101): bytes relayed both ways,
///   unparsed, until either side closes or the tunnel is idle for `idleSeconds`
/// - any → `closed` (client went away, protocol error); `closed` is final.
///
/// Draining (`quiesce`) closes an idle connection at once and makes every later answer on it
/// the last (`Connection: close`). A pipelined request is held back (no reads) until the
/// response in flight has ended (`mayReadFromClient`).
struct ProxyStateMachine {
    /// What the state machine knows of the request in flight.
    struct Request {
        /// The client may send another request on this connection afterwards.
        var keepAlive: Bool
        /// The client sent `Expect: 100-continue` and waits for our go-ahead.
        var expectsContinue: Bool
        /// Idempotent and without body: may be replayed on a fresh connection.
        var replayable: Bool
        /// The request announced a body (Content-Length > 0 or chunked).
        var hasBody: Bool
        /// The request's end has been received.
        var bodyComplete: Bool
        /// Body parts that arrived before an upstream connection was ready.
        var bufferedBody: [ByteBuffer] = []
        var bodyBytes = 0
        var retries = 0

        /// Body bytes are still on their way: answering now means the connection cannot be
        /// reused (the rest of the body would be read as the next request).
        var hasUnreadBody: Bool { self.hasBody && !self.bodyComplete }
    }

    enum ResponsePhase {
        case awaitingHead
        case streaming
        /// The response ended before the request body did (a backend answering an upload
        /// early, as nginx's `return` does): the rest of the body still goes upstream, then
        /// both connections are kept, as HAProxy does, instead of resetting the client.
        case complete(upstreamKeepAlive: Bool, clientMustClose: Bool)
    }

    enum State {
        case idle
        case deciding(Request)
        case leasing(Request)
        case forwarding(Request, ResponsePhase, reusedConnection: Bool)
        /// After a `101 Switching Protocols`: client bytes go upstream as "body", upstream bytes
        /// to the client as "response body", neither parsed nor limited.
        case tunnel
        case closed
    }

    enum Action {
        case none
        /// Route and authenticate the new request, then report `decided…`.
        case decide
        /// Ask the pool for an upstream connection.
        case lease
        /// Send the request head upstream, then `body`, then the end when `end`; send the client
        /// `100 Continue` first when `sendContinue`.
        case sendRequest(body: [ByteBuffer], end: Bool, sendContinue: Bool)
        case forwardBody(ByteBuffer)
        case forwardEnd
        case writeResponseHead
        case writeResponseBody(ByteBuffer)
        /// The response is complete: keep or close the upstream connection and the client's.
        case finishResponse(reuseUpstream: Bool, closeClient: Bool)
        /// The response is complete but the request body is not: end the client's response
        /// and keep forwarding the body.
        case finishResponseOnly
        /// The request body ended after its response: send the end upstream, then keep or close
        /// both connections.
        case forwardEndAndRelease(reuseUpstream: Bool, closeClient: Bool)
        /// Write the locally prepared response (an error or a health answer); close after it
        /// when `close`.
        case writeLocalResponse(close: Bool)
        /// Answer with `error`, then close the client connection when `close`.
        case respondWithError(GatewayError, close: Bool)
        /// Close the upstream connection; answer `error` first if given, and close the client.
        case failForwarding(GatewayError?)
        /// The upstream connection died before answering a replayable request: discard it and
        /// lease another.
        case retry
        /// A lease completed for a request that is gone: return the connection unused.
        case returnUnusedConnection
        /// The client left: drop whatever is in flight (pending lease, upstream connection).
        case abandon
        /// Nothing is in flight: close the client connection now (draining).
        case closeConnection
        case resumeClientReads
        case resumeUpstreamReads
    }

    /// The timeout that applies now.
    enum Timeout: Equatable {
        case none
        /// Nothing to do but wait for the client: `idleSeconds`.
        case idle
        /// Waiting on the backend: `responseTimeoutMilliseconds`.
        case response
    }

    private(set) var state: State = .idle
    /// The connection closes after the response in flight (draining).
    private(set) var closeRequested = false
    private(set) var clientWritable = true
    private(set) var upstreamWritable = true
    let maxBodyBytes: Int

    init(maxBodyBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
    }

    // MARK: Client events

    mutating func requestHead(keepAlive: Bool, expectsContinue: Bool, replayable: Bool, hasBody: Bool) -> Action {
        switch self.state {
        case .idle:
            let request = Request(keepAlive: keepAlive, expectsContinue: expectsContinue && hasBody, replayable: replayable, hasBody: hasBody, bodyComplete: false)
            self.state = .deciding(request)
            return .decide
        case .deciding, .leasing, .forwarding, .tunnel:
            // `ProxyHandler` never parses a second head before the first response ends.
            self.state = .closed
            return .failForwarding(.malformedRequest("Unexpected request"))
        case .closed:
            return .none
        }
    }

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
            self.state = .forwarding(request, phase, reusedConnection: reused)
            return .forwardBody(part)
        case .tunnel:
            return .forwardBody(part)
        case .idle, .closed:
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
            if case .complete(let upstreamKeepAlive, let clientMustClose) = phase {
                let closeClient = clientMustClose || !request.keepAlive
                self.state = closeClient ? .closed : .idle
                return .forwardEndAndRelease(reuseUpstream: upstreamKeepAlive, closeClient: closeClient)
            }
            self.state = .forwarding(request, phase, reusedConnection: reused)
            return .forwardEnd
        case .idle, .tunnel, .closed:
            return .none
        }
    }

    /// The request parser refused the input (400, 431): nothing more can be read reliably.
    mutating func protocolError(_ error: GatewayError) -> Action {
        switch self.state {
        case .idle, .deciding, .leasing:
            self.state = .closed
            return .respondWithError(error, close: true)
        case .forwarding(_, .awaitingHead, _):
            self.state = .closed
            return .failForwarding(error)
        case .forwarding(_, .streaming, _), .forwarding(_, .complete, _), .tunnel:
            self.state = .closed
            return .failForwarding(nil)
        case .closed:
            return .none
        }
    }

    mutating func clientClosed() -> Action {
        switch self.state {
        case .idle, .closed:
            self.state = .closed
            return .none
        case .deciding, .leasing, .forwarding, .tunnel:
            self.state = .closed
            return .abandon
        }
    }

    /// Draining: finish the request in flight (its response closes the connection), close an
    /// idle connection now — unless part of a request has already arrived (`partialRequest`),
    /// which then gets its answer, the last.
    mutating func quiesce(partialRequest: Bool) -> Action {
        self.closeRequested = true
        guard case .idle = self.state, !partialRequest else { return .none }
        self.state = .closed
        return .closeConnection
    }

    /// The gateway started draining after this connection last looked: its next answer is
    /// its last.
    mutating func requestClose() {
        self.closeRequested = true
    }

    mutating func clientWritabilityChanged(_ writable: Bool) -> Action {
        self.clientWritable = writable
        switch self.state {
        case .forwarding, .tunnel: return writable ? .resumeUpstreamReads : .none
        case .idle, .deciding, .leasing, .closed: return .none
        }
    }

    // MARK: Decision

    mutating func decidedToForward() -> Action {
        guard case .deciding(let request) = self.state else { return .none }
        self.state = .leasing(request)
        return .lease
    }

    /// The gateway answers this request itself; `forceClose` for answers after which the
    /// connection must not be reused.
    mutating func decidedToRespondLocally(forceClose: Bool = false) -> Action {
        guard case .deciding(let request) = self.state else { return .none }
        let close = forceClose || self.closeRequested || !request.keepAlive || request.hasUnreadBody
        self.state = close ? .closed : .idle
        return .writeLocalResponse(close: close)
    }

    // MARK: Upstream events

    mutating func leaseSucceeded(reused: Bool) -> Action {
        guard case .leasing(var request) = self.state else { return .returnUnusedConnection }
        let body = request.bufferedBody
        request.bufferedBody = []
        let sendContinue = request.expectsContinue && !request.bodyComplete
        request.expectsContinue = false
        self.upstreamWritable = true
        self.state = .forwarding(request, .awaitingHead, reusedConnection: reused)
        return .sendRequest(body: body, end: request.bodyComplete, sendContinue: sendContinue)
    }

    mutating func leaseFailed(_ error: GatewayError) -> Action {
        guard case .leasing(let request) = self.state else { return .none }
        let close = !request.keepAlive || request.hasUnreadBody
        self.state = close ? .closed : .idle
        return .respondWithError(error, close: close)
    }

    mutating func responseHead() -> Action {
        guard case .forwarding(let request, .awaitingHead, let reused) = self.state else { return .none }
        self.state = .forwarding(request, .streaming, reusedConnection: reused)
        return .writeResponseHead
    }

    /// The backend accepted a protocol upgrade (101) of a bodiless request: from now on the
    /// connections are a tunnel.
    mutating func upgraded() -> Action {
        guard case .forwarding(let request, .awaitingHead, _) = self.state, request.bodyComplete, !request.hasBody else {
            return self.upstreamProtocolError()
        }
        self.state = .tunnel
        return .writeResponseHead
    }

    mutating func responseBody(_ part: ByteBuffer) -> Action {
        switch self.state {
        case .forwarding(_, .streaming, _), .tunnel: return .writeResponseBody(part)
        case .idle, .deciding, .leasing, .forwarding, .closed: return .none
        }
    }

    /// `upstreamKeepAlive`: the backend allows reuse; `clientMustClose`: the response framing
    /// (a body delimited by close) or a drain requires closing the client connection.
    mutating func responseEnd(upstreamKeepAlive: Bool, clientMustClose: Bool) -> Action {
        if case .tunnel = self.state {
            // The backend closed its side of the tunnel: what it sent reaches the client, then
            // the client's connection closes too.
            self.state = .closed
            return .finishResponse(reuseUpstream: false, closeClient: true)
        }
        guard case .forwarding(let request, .streaming, let reused) = self.state else { return .none }
        if request.hasUnreadBody {
            self.state = .forwarding(request, .complete(upstreamKeepAlive: upstreamKeepAlive, clientMustClose: clientMustClose), reusedConnection: reused)
            return .finishResponseOnly
        }
        let closeClient = clientMustClose || !request.keepAlive
        self.state = closeClient ? .closed : .idle
        return .finishResponse(reuseUpstream: upstreamKeepAlive, closeClient: closeClient)
    }

    /// The upstream connection closed or failed. Before any response byte, a replayable request
    /// on a reused connection is retried once (the keep-alive race: the backend closed an idle
    /// connection as we reused it); otherwise 502.
    mutating func upstreamFailed() -> Action {
        switch self.state {
        case .forwarding(var request, .awaitingHead, let reused):
            if reused && request.replayable && request.retries == 0 {
                request.retries += 1
                self.state = .leasing(request)
                return .retry
            }
            self.state = .closed
            return .failForwarding(.upstreamUnreachable)
        case .forwarding(_, .streaming, _), .forwarding(_, .complete, _), .tunnel:
            self.state = .closed
            return .failForwarding(nil)
        case .idle, .deciding, .leasing, .closed:
            return .none
        }
    }

    /// The backend sent something that is not a valid HTTP response.
    mutating func upstreamProtocolError() -> Action {
        switch self.state {
        case .forwarding(_, .awaitingHead, _):
            self.state = .closed
            return .failForwarding(.upstreamProtocolError)
        case .forwarding(_, .streaming, _), .forwarding(_, .complete, _), .tunnel:
            self.state = .closed
            return .failForwarding(nil)
        case .idle, .deciding, .leasing, .closed:
            return .none
        }
    }

    mutating func upstreamWritabilityChanged(_ writable: Bool) -> Action {
        self.upstreamWritable = writable
        guard writable else { return .none }
        switch self.state {
        case .forwarding(let request, _, _): return request.bodyComplete ? .none : .resumeClientReads
        case .tunnel: return .resumeClientReads
        case .idle, .deciding, .leasing, .closed: return .none
        }
    }

    // MARK: Time

    /// The timeout of the current state ran out.
    mutating func timedOut() -> Action {
        switch self.state {
        case .forwarding(let request, .awaitingHead, _) where request.bodyComplete:
            self.state = .closed
            return .failForwarding(.upstreamTimeout)
        case .forwarding(_, .awaitingHead, _):
            // The client stopped sending its body: say so before closing.
            self.state = .closed
            return .failForwarding(.requestTimeout)
        case .forwarding, .tunnel:
            self.state = .closed
            return .failForwarding(nil)
        case .idle:
            self.state = .closed
            return .abandon
        case .deciding, .leasing, .closed:
            return .none
        }
    }

    var timeout: Timeout {
        switch self.state {
        case .idle: return .idle
        case .forwarding(let request, .awaitingHead, _): return request.bodyComplete ? .response : .idle
        case .forwarding(_, .streaming, _): return .response
        // Only the client's upload is left.
        case .forwarding(_, .complete, _): return .idle
        // A tunnel lives while bytes move; activity on either side restarts the clock.
        case .tunnel: return .idle
        case .deciding, .leasing, .closed: return .none
        }
    }

    // MARK: Flow control

    /// Whether to read more from the client: not while a request waits for its decision or
    /// connection (what arrived is buffered), nor while the backend cannot take more body.
    var shouldReadFromClient: Bool {
        switch self.state {
        case .idle: return true
        case .deciding, .leasing, .closed: return false
        case .forwarding(let request, _, _): return request.bodyComplete || self.upstreamWritable
        case .tunnel: return self.upstreamWritable
        }
    }

    /// Whether to read more from the client, holding a pipelined request (already received,
    /// not yet parsed) until the response in flight has ended.
    func mayReadFromClient(holdingPipelinedRequest: Bool) -> Bool {
        self.shouldReadFromClient && !holdingPipelinedRequest
    }

    /// Whether to read more from the backend: only while the client keeps up.
    var shouldReadFromUpstream: Bool { self.clientWritable }

    var isIdle: Bool {
        if case .idle = self.state { return true }
        return false
    }

    var isClosed: Bool {
        if case .closed = self.state { return true }
        return false
    }

    /// Bytes are relayed unparsed (after a 101).
    var isTunnel: Bool {
        if case .tunnel = self.state { return true }
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
            self.state = .closed
            return .failForwarding(.bodyTooLarge)
        case .forwarding(_, .streaming, _), .forwarding(_, .complete, _):
            self.state = .closed
            return .failForwarding(nil)
        case .deciding, .leasing:
            self.state = .closed
            return .respondWithError(.bodyTooLarge, close: true)
        case .idle, .tunnel, .closed:
            return .none
        }
    }
}
