import NIOCore

/// One HTTP/1.1 client connection as a pure state machine: what only HTTP/1.1 has, around the
/// protocol-neutral `ExchangeStateMachine` of the request in flight — keep-alive (the
/// connection waits for the next request or closes), `Expect: 100-continue`, the WebSocket
/// tunnel after a 101, and drain. Pipelined requests are held back by `HTTP1ServerConnection` until the
/// response in flight has ended (`mayReadFromClient`), so requests here are strictly
/// sequential.
///
/// States and legal transitions:
/// - `idle` → `exchange` (a request head arrived)
/// - `exchange` → `idle` (its exchange ended and the connection is kept) | `closed` (ended and
///   the connection closes: the client or the response asked, drain, an unread body, a
///   failure) | `tunnel` (a WebSocket upgrade answered 101)
/// - `tunnel`: bytes relayed both ways, unparsed, until either side closes or the tunnel is
///   idle for `idleSeconds` → `closed`
/// - any → `closed` (client went away, protocol error); `closed` is final.
///
/// Draining (`quiesce`) closes an idle connection at once and makes every later answer on it
/// the last (`Connection: close`).
struct HTTP1ConnectionStateMachine: ExchangeEvents {
    /// What HTTP/1.1 knows of the request in flight, beside its exchange.
    struct Request {
        /// The client may send another request on this connection afterwards.
        var keepAlive: Bool
        /// The client sent `Expect: 100-continue` and waits for our go-ahead.
        var expectsContinue: Bool
        /// The response's framing (a body delimited by close) or a drain requires closing.
        var responseMustClose = false
    }

    enum State {
        case idle
        case exchange(Request)
        /// After a `101 Switching Protocols`: client bytes go upstream as "body", upstream bytes
        /// to the client as "response body", neither parsed nor limited.
        case tunnel
        case closed
    }

    enum Action: Equatable {
        case none
        /// Route and authenticate the new request, then report `decided…`.
        case decide
        /// Run the exchange's action as both framings do.
        case exchange(ExchangeStateMachine.Action)
        /// The exchange ended with this action (its answer, or the end of its response): then
        /// the connection closes when `close`, else it reads the next request.
        case endExchange(ExchangeStateMachine.Action, close: Bool)
        /// `100 Continue` to the client, then the request upstream (`sendRequest`).
        case sendContinueAndRequest(body: [ByteBuffer], end: Bool)
        /// Nothing is in flight: close the connection now (draining, idle timeout).
        case closeConnection
    }

    private(set) var state: State = .idle
    /// The request in flight's exchange (nil when idle, in a tunnel, closed).
    private(set) var current: ExchangeStateMachine?
    /// The connection closes after the response in flight (draining).
    private(set) var closeRequested = false
    /// Writability, as the tunnel needs it (an exchange tracks its own).
    private var clientWritable = true
    private var upstreamWritable = true
    let maxBodyBytes: Int

    init(maxBodyBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
    }

    // MARK: Client events

    mutating func requestHead(keepAlive: Bool, expectsContinue: Bool, replayable: Bool, hasBody: Bool) -> Action {
        switch self.state {
        case .idle:
            self.current = ExchangeStateMachine(
                replayable: replayable, hasBody: hasBody, maxBodyBytes: self.maxBodyBytes)
            self.state = .exchange(Request(keepAlive: keepAlive, expectsContinue: expectsContinue && hasBody))
            return .decide
        case .exchange, .tunnel:
            // `HTTP1ServerConnection` never parses a second head before the first response ends.
            return self.fail(.malformedRequest("Unexpected request"))
        case .closed:
            return .none
        }
    }

    mutating func requestBody(_ part: ByteBuffer) -> Action {
        switch self.state {
        case .exchange: return self.translate(self.current!.requestBody(part), forceClose: true)
        case .tunnel: return .exchange(.forwardBody(part))
        case .idle, .closed: return .none
        }
    }

    mutating func requestEnd() -> Action {
        guard case .exchange = self.state else { return .none }
        return self.translate(self.current!.requestEnd())
    }

    /// The request parser refused the input (400, 431): nothing more can be read reliably.
    mutating func protocolError(_ error: GatewayError) -> Action {
        switch self.state {
        case .idle:
            self.state = .closed
            return .endExchange(.respondWithError(error), close: true)
        case .exchange:
            return self.translate(self.current!.protocolError(error), forceClose: true)
        case .tunnel:
            return self.fail(nil)
        case .closed:
            return .none
        }
    }

    mutating func clientClosed() -> Action {
        switch self.state {
        case .idle, .closed:
            self.end()
            return .none
        case .exchange:
            return self.translate(self.current!.clientClosed())
        case .tunnel:
            self.end()
            return .exchange(.abandon)
        }
    }

    /// Draining: finish the request in flight (its response closes the connection), close an
    /// idle connection now — unless part of a request has already arrived (`partialRequest`),
    /// which then gets its answer, the last.
    mutating func quiesce(partialRequest: Bool) -> Action {
        self.closeRequested = true
        guard case .idle = self.state, !partialRequest else { return .none }
        self.end()
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
        case .exchange: return self.translate(self.current!.clientWritabilityChanged(writable))
        case .tunnel: return writable ? .exchange(.resumeUpstreamReads) : .none
        case .idle, .closed: return .none
        }
    }

    // MARK: Decision

    mutating func decidedToForward() -> Action {
        guard case .exchange = self.state else { return .none }
        return self.translate(self.current!.decidedToForward())
    }

    /// The gateway answers this request itself.
    mutating func decidedToRespondLocally() -> Action {
        self.decidedToRespondLocally(forceClose: false)
    }

    /// The gateway answers this request itself; `forceClose` for answers after which the
    /// connection must not be reused.
    mutating func decidedToRespondLocally(forceClose: Bool) -> Action {
        guard case .exchange = self.state else { return .none }
        let unreadBody = self.current!.hasUnreadBody
        return self.translate(self.current!.decidedToRespondLocally(), forceClose: forceClose || unreadBody)
    }

    // MARK: Upstream events

    var awaitsLease: Bool { self.current?.awaitsLease ?? false }

    mutating func leaseSucceeded(reused: Bool) -> Action {
        guard case .exchange(var request) = self.state else { return .none }
        let action = self.current!.leaseSucceeded(reused: reused)
        if case .sendRequest(let body, let end) = action, request.expectsContinue {
            request.expectsContinue = false
            self.state = .exchange(request)
            // The body is all here already: no go-ahead needed.
            return end ? .exchange(action) : .sendContinueAndRequest(body: body, end: end)
        }
        return self.translate(action)
    }

    mutating func leaseFailed(_ error: GatewayError) -> Action {
        guard case .exchange = self.state else { return .none }
        let unreadBody = self.current!.hasUnreadBody
        return self.translate(self.current!.leaseFailed(error), forceClose: unreadBody)
    }

    mutating func responseHead() -> Action {
        guard case .exchange = self.state else { return .none }
        return self.translate(self.current!.responseHead())
    }

    /// The backend accepted a protocol upgrade (101) of a bodiless request: from now on the
    /// connections are a tunnel.
    mutating func upgraded() -> Action {
        guard case .exchange = self.state, self.current!.mayUpgrade else { return self.upstreamProtocolError() }
        // The tunnel's backend is the exchange's upstream: its writability as the exchange saw it.
        self.upstreamWritable = self.current!.upstreamWritable
        self.current = nil
        self.state = .tunnel
        return .exchange(.writeResponseHead)
    }

    mutating func responseBody(_ part: ByteBuffer) -> Action {
        switch self.state {
        case .exchange: return self.translate(self.current!.responseBody(part))
        case .tunnel: return .exchange(.writeResponseBody(part))
        case .idle, .closed: return .none
        }
    }

    /// `upstreamKeepAlive`: the backend allows reuse; `clientMustClose`: the response framing
    /// (a body delimited by close) or a drain requires closing the client connection.
    mutating func responseEnd(upstreamKeepAlive: Bool, clientMustClose: Bool) -> Action {
        switch self.state {
        case .exchange(var request):
            request.responseMustClose = clientMustClose
            self.state = .exchange(request)
            return self.translate(self.current!.responseEnd(upstreamReusable: upstreamKeepAlive))
        case .tunnel:
            // The backend closed its side of the tunnel: what it sent reaches the client, then
            // the client's connection closes too.
            self.end()
            return .endExchange(.finishResponse(reuseUpstream: false), close: true)
        case .idle, .closed:
            return .none
        }
    }

    mutating func upstreamFailed() -> Action {
        switch self.state {
        case .exchange: return self.translate(self.current!.upstreamFailed())
        case .tunnel: return self.fail(nil)
        case .idle, .closed: return .none
        }
    }

    mutating func upstreamProtocolError() -> Action {
        switch self.state {
        case .exchange: return self.translate(self.current!.upstreamProtocolError())
        case .tunnel: return self.fail(nil)
        case .idle, .closed: return .none
        }
    }

    mutating func upstreamWritabilityChanged(_ writable: Bool) -> Action {
        self.upstreamWritable = writable
        switch self.state {
        case .exchange: return self.translate(self.current!.upstreamWritabilityChanged(writable))
        case .tunnel: return writable ? .exchange(.resumeClientReads) : .none
        case .idle, .closed: return .none
        }
    }

    // MARK: Time

    /// The timeout of the current state ran out.
    mutating func timedOut() -> Action {
        switch self.state {
        case .idle:
            self.end()
            return .closeConnection
        case .exchange:
            return self.translate(self.current!.timedOut())
        case .tunnel:
            return self.fail(nil)
        case .closed:
            return .none
        }
    }

    var timeout: ExchangeStateMachine.Timeout {
        switch self.state {
        case .idle: return .idle
        case .exchange: return self.current!.timeout
        // A tunnel lives while bytes move; activity on either side restarts the clock.
        case .tunnel: return .idle
        case .closed: return .none
        }
    }

    // MARK: Flow control

    /// Whether to read more from the client: not while a request waits for its decision or
    /// upstream (what arrived is buffered), nor while the backend cannot take more body.
    var shouldReadFromClient: Bool {
        switch self.state {
        case .idle: return true
        case .exchange: return self.current!.shouldReadFromClient
        case .tunnel: return self.upstreamWritable
        case .closed: return false
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

    /// The exchange's action, and where the connection goes when it ended the exchange:
    /// kept for the next request unless the client, the response, a drain or `forceClose` says
    /// close (callers force it when the answer leaves body bytes unread: they would be read as
    /// the next request). A failed exchange closes the connection: its response was cut
    /// short, or its answer ends it.
    private mutating func translate(_ action: ExchangeStateMachine.Action, forceClose: Bool = false) -> Action {
        let close: Bool
        switch action {
        case .none, .lease, .sendRequest, .forwardBody, .forwardEnd, .writeResponseHead, .writeResponseBody,
            .finishResponseOnly, .retry,
            .resumeClientReads, .resumeUpstreamReads:
            // The exchange goes on: most events, so they look at nothing else.
            return .exchange(action)
        case .failForwarding, .abandon:
            self.end()
            return .exchange(action)
        case .finishResponse, .forwardEndAndRelease:
            guard case .exchange(let request) = self.state else { return .exchange(action) }
            close = request.responseMustClose || !request.keepAlive
        case .writeLocalResponse, .respondWithError:
            guard case .exchange(let request) = self.state else { return .exchange(action) }
            close = forceClose || self.closeRequested || !request.keepAlive
        }
        if close {
            self.end()
        } else {
            self.current = nil
            self.state = .idle
        }
        return .endExchange(action, close: close)
    }

    /// Fails what is in flight, closing the connection.
    private mutating func fail(_ error: GatewayError?) -> Action {
        self.end()
        return .exchange(.failForwarding(error))
    }

    private mutating func end() {
        self.current = nil
        self.state = .closed
    }
}
