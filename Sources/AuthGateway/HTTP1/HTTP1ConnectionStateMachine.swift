import NIOCore

/// One HTTP/1.1 client connection as a pure state machine: what only HTTP/1.1 has, around the
/// protocol-neutral `ExchangeStateMachine` of the request in flight — keep-alive (the
/// connection waits for the next request or closes), `Expect: 100-continue`, the WebSocket
/// tunnel after a 101, and drain. Pipelined requests are held back by `HTTP1ServerConnection`
/// until the response in flight has ended (`mayReadFromClient`), so requests here are strictly
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
/// - `modifying`: only inside an event, while it runs on the exchange (never seen outside).
///
/// The `exchange` state carries the request's `ExchangeStateMachine` (AsyncHTTPClient's
/// `HTTP1ConnectionStateMachine` carries its request's state machine the same way), so there
/// is no exchange outside that state. An event for the exchange runs on it in place: the state
/// is `modifying` meanwhile, so its buffered body is never copied (`withExchange`).
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
        /// A request is in flight: its exchange, and what HTTP/1.1 knows of it.
        case exchange(ExchangeStateMachine, Request)
        /// After a `101 Switching Protocols`: client bytes go upstream as "body", upstream bytes
        /// to the client as "response body", neither parsed nor limited.
        case tunnel
        case closed
        /// Only while an event runs on the exchange (`withExchange`); never seen from outside.
        case modifying
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
        /// End the tunnel with a close frame each way, then `tunnelClosed` (docs/streams.md).
        case closeTunnel
    }

    private(set) var state: State = .idle
    /// The connection closes after the response in flight (draining).
    private(set) var closeRequested = false
    /// Writability, as the tunnel needs it (an exchange tracks its own).
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
            let exchange = ExchangeStateMachine(
                replayable: replayable, hasBody: hasBody, maxBodyBytes: self.maxBodyBytes)
            self.state = .exchange(exchange, Request(keepAlive: keepAlive, expectsContinue: expectsContinue && hasBody))
            return .decide
        case .exchange, .tunnel:
            // `HTTP1ServerConnection` never parses a second head before the first response ends.
            return self.fail(.malformedRequest("Unexpected request"))
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    mutating func requestBody(_ part: ByteBuffer) -> Action {
        switch self.state {
        case .exchange: return self.withExchange(forceClose: true) { exchange, _ in exchange.requestBody(part) }
        case .tunnel: return .exchange(.forwardBody(part))
        case .idle, .closed: return .none
        case .modifying: preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    mutating func requestEnd() -> Action {
        self.withExchange { exchange, _ in exchange.requestEnd() }
    }

    /// The request parser refused the input (400, 431): nothing more can be read reliably.
    mutating func protocolError(_ error: GatewayError) -> Action {
        switch self.state {
        case .idle:
            self.state = .closed
            return .endExchange(.respondWithError(error), close: true)
        case .exchange:
            return self.withExchange(forceClose: true) { exchange, _ in exchange.protocolError(error) }
        case .tunnel:
            return self.fail(nil)
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    mutating func clientClosed() -> Action {
        switch self.state {
        case .idle, .closed:
            self.end()
            return .none
        case .exchange:
            return self.withExchange { exchange, _ in exchange.clientClosed() }
        case .tunnel:
            self.end()
            return .exchange(.abandon)
        case .modifying:
            preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
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
        case .exchange: return self.withExchange { exchange, _ in exchange.clientWritabilityChanged(writable) }
        case .tunnel: return writable ? .exchange(.resumeUpstreamReads) : .none
        case .idle, .closed: return .none
        case .modifying: preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    // MARK: Decision

    mutating func decidedToForward() -> Action {
        self.withExchange { exchange, _ in exchange.decidedToForward() }
    }

    /// The gateway answers this request itself.
    mutating func decidedToRespondLocally() -> Action {
        self.decidedToRespondLocally(forceClose: false)
    }

    /// The gateway answers this request itself; `forceClose` for answers after which the
    /// connection must not be reused.
    mutating func decidedToRespondLocally(forceClose: Bool) -> Action {
        self.withExchange(forceClose: forceClose || self.hasUnreadBody) { exchange, _ in
            exchange.decidedToRespondLocally()
        }
    }

    // MARK: Upstream events

    var awaitsLease: Bool {
        guard case .exchange(let exchange, _) = self.state else { return false }
        return exchange.awaitsLease
    }

    mutating func leaseSucceeded(reused: Bool) -> Action {
        var sendContinue = false
        let action = self.withExchange { exchange, request in
            let action = exchange.leaseSucceeded(reused: reused)
            if case .sendRequest(_, let end) = action, request.expectsContinue {
                request.expectsContinue = false
                // When the body is all here already, no go-ahead is needed.
                sendContinue = !end
            }
            return action
        }
        guard sendContinue, case .exchange(.sendRequest(let body, let end)) = action else { return action }
        return .sendContinueAndRequest(body: body, end: end)
    }

    mutating func leaseFailed(_ error: GatewayError) -> Action {
        self.withExchange(forceClose: self.hasUnreadBody) { exchange, _ in exchange.leaseFailed(error) }
    }

    mutating func responseHead() -> Action {
        self.withExchange { exchange, _ in exchange.responseHead() }
    }

    /// The backend accepted a protocol upgrade (101) of a bodiless request: from now on the
    /// connections are a tunnel.
    mutating func upgraded() -> Action {
        guard case .exchange(let exchange, _) = self.state, exchange.mayUpgrade else {
            return self.upstreamProtocolError()
        }
        // The tunnel's backend is the exchange's upstream: its writability as the exchange saw it.
        self.upstreamWritable = exchange.upstreamWritable
        self.state = .tunnel
        return .exchange(.writeResponseHead)
    }

    mutating func responseBody(_ part: ByteBuffer) -> Action {
        switch self.state {
        case .exchange: return self.withExchange { exchange, _ in exchange.responseBody(part) }
        case .tunnel: return .exchange(.writeResponseBody(part))
        case .idle, .closed: return .none
        case .modifying: preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    /// `upstreamKeepAlive`: the backend allows reuse; `clientMustClose`: the response framing
    /// (a body delimited by close) or a drain requires closing the client connection.
    mutating func responseEnd(upstreamKeepAlive: Bool, clientMustClose: Bool) -> Action {
        switch self.state {
        case .exchange:
            return self.withExchange { exchange, request in
                request.responseMustClose = clientMustClose
                return exchange.responseEnd(upstreamReusable: upstreamKeepAlive)
            }
        case .tunnel:
            // The backend closed its side of the tunnel: what it sent reaches the client, then
            // the client's connection closes too.
            self.end()
            return .endExchange(.finishResponse(reuseUpstream: false), close: true)
        case .idle, .closed:
            return .none
        case .modifying:
            preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    mutating func upstreamFailed() -> Action {
        switch self.state {
        case .exchange: return self.withExchange { exchange, _ in exchange.upstreamFailed() }
        case .tunnel: return self.fail(nil)
        case .idle, .closed: return .none
        case .modifying: preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    mutating func upstreamProtocolError() -> Action {
        switch self.state {
        case .exchange: return self.withExchange { exchange, _ in exchange.upstreamProtocolError() }
        case .tunnel: return self.fail(nil)
        case .idle, .closed: return .none
        case .modifying: preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    mutating func upstreamWritabilityChanged(_ writable: Bool) -> Action {
        self.upstreamWritable = writable
        switch self.state {
        case .exchange: return self.withExchange { exchange, _ in exchange.upstreamWritabilityChanged(writable) }
        case .tunnel: return writable ? .exchange(.resumeClientReads) : .none
        case .idle, .closed: return .none
        case .modifying: preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
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
            return self.withExchange { exchange, _ in exchange.timedOut() }
        case .tunnel:
            return self.fail(nil)
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
    }

    // MARK: Helpers

    /// Runs an event on the exchange in flight and what HTTP/1.1 knows of its request, in
    /// place, and translates its action (see `translate` for `forceClose`); nothing happens
    /// outside the `exchange` state. The state is moved out meanwhile (`takeState`), so the
    /// exchange is neither copied nor shared — its buffered body is not copied on write — as
    /// AsyncHTTPClient's `avoidingStateMachineCoW` does. The closure does not escape and is
    /// inlined: no allocation. (Not private: `+Streams` runs its events through it too.)
    @inline(__always)
    mutating func withExchange(
        forceClose: Bool = false,
        _ event: (inout ExchangeStateMachine, inout Request) -> ExchangeStateMachine.Action
    ) -> Action {
        switch self.takeState() {
        case .exchange(var exchange, var request):
            let action = event(&exchange, &request)
            self.state = .exchange(exchange, request)
            return self.translate(action, request: request, forceClose: forceClose)
        case .idle:
            self.state = .idle
        case .tunnel:
            self.state = .tunnel
        case .closed:
            self.state = .closed
        case .modifying:
            preconditionFailure("HTTP1ConnectionStateMachine: event while modifying")
        }
        return .none
    }

    /// Moves the state out, leaving `modifying` in its place: `swap` moves, so nothing it
    /// holds is retained, released or copied.
    @inline(__always)
    private mutating func takeState() -> State {
        var state = State.modifying
        swap(&state, &self.state)
        return state
    }

    /// The exchange's action, and where the connection goes when it ended the exchange:
    /// kept for the next request unless the client, the response, a drain or `forceClose` says
    /// close (callers force it when the answer leaves body bytes unread: they would be read as
    /// the next request). A failed exchange closes the connection: its response was cut
    /// short, or its answer ends it.
    private mutating func translate(
        _ action: consuming ExchangeStateMachine.Action, request: Request, forceClose: Bool
    ) -> Action {
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
            close = request.responseMustClose || !request.keepAlive
        case .writeLocalResponse, .respondWithError:
            close = forceClose || self.closeRequested || !request.keepAlive
        }
        if close {
            self.end()
        } else {
            self.state = .idle
        }
        return .endExchange(action, close: close)
    }

    /// Body bytes of the request in flight are still on their way: answering now leaves them
    /// unread, to be read as the next request, so such an answer closes the connection.
    private var hasUnreadBody: Bool {
        guard case .exchange(let exchange, _) = self.state else { return false }
        return exchange.hasUnreadBody
    }

    /// Fails what is in flight, closing the connection.
    mutating func fail(_ error: GatewayError?) -> Action {
        self.end()
        return .exchange(.failForwarding(error))
    }

    private mutating func end() {
        self.state = .closed
    }
}
