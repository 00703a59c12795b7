import NIOCore
import NIOHPACK

/// One HTTP/2 stream of a client connection as a pure state machine: what only an HTTP/2
/// stream has, around the protocol-neutral `ExchangeStateMachine` of its one request — the
/// stream's two halves (the client's request, the gateway's response), the request's
/// `content-length` checked against its DATA, the response's frames held so that END_STREAM
/// rides on the last one, and the client's upload stopped when the response ends first.
/// Events in, actions out, no I/O: `HTTP2ServerStream` feeds it frames and the backend's
/// events, and runs what it returns. `HTTP1ConnectionStateMachine` is the same for an HTTP/1.1
/// connection.
///
/// In the shape of NIOHTTP2's own `HTTP2StreamStateMachine`: the states are those of RFC 9113
/// §5.1 as the server sees a stream its client opened, and each carries what is valid in it
/// (the request's `ContentLengthVerifier` while the client may still send DATA). NIOHTTP2
/// enforces the protocol; this machine is the gateway's framing of one request over it. The
/// stream's state gates every event; the request's `exchange` and the `response` half are its
/// two parts, each a state machine of its own, updated in place (measured: moving them in and
/// out of the state's enum cases on every event made a stream 2–3 % slower in the
/// `WholeHTTP2Stream` benchmark).
///
/// States and legal transitions:
/// - `idle`: the stream's first HEADERS is being read → `open` (the request head) |
///   `halfClosedRemote` (the head with END_STREAM) | `closed`
/// - `open`: the exchange runs and the client may still send DATA → `halfClosedRemote` (its
///   END_STREAM, on DATA or trailers; or the response ended first and the gateway stopped the
///   upload, RST_STREAM NO_ERROR) | `closed`
/// - `halfClosedRemote`: the request is complete; the exchange and its response go on →
///   `closed`
/// - any → `closed` when NIOHTTP2 closes the stream (both ends done, or a reset either way):
///   the exchange is abandoned if it was still going; `closed` is final, nothing more is
///   written.
///
/// The response half (`Response`) has its own states: `idle` → `headersHeld` (the backend's
/// head) → `streaming` (HEADERS written, the latest DATA held) → `ended`; or `idle` → `ended`
/// (the gateway's own answer, or a reset). Every event runs in one place, `apply`.
struct HTTP2StreamStateMachine: ExchangeEvents {
    enum State: Equatable {
        /// No request yet: every event but the head is refused.
        case idle
        /// The exchange runs; what the client's DATA must still add up to.
        case open(ContentLengthVerifier)
        /// The request is complete (or its upload was stopped); the exchange and the response
        /// go on.
        case halfClosedRemote
        /// Every event is refused.
        case closed
    }

    private(set) var state: State = .idle
    /// The request's life, whatever the framing; runs only from the head to the close (the
    /// one made at `init` is never driven).
    private(set) var exchange: ExchangeStateMachine
    /// The response half: what the gateway wrote to the client and what it holds back.
    private(set) var response: Response = .idle
    /// The request is gRPC: the gateway's own answers are Trailers-Only.
    private(set) var isGRPC = false
    /// The client's writability as the exchange was last told it (the stream's window and the
    /// connection's): only changes are reported.
    private(set) var clientWritable = true
    let maxBodyBytes: Int

    init(maxBodyBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
        self.exchange = ExchangeStateMachine(replayable: false, hasBody: false, maxBodyBytes: maxBodyBytes)
    }

    // MARK: Client events

    /// The request's HEADERS arrived and translate to a request head: plan it (`decide`).
    /// `contentLength`: the length its DATA must add up to, if it declared one.
    mutating func requestHead(
        replayable: Bool, hasBody: Bool, contentLength: Int?, isGRPC: Bool, endStream: Bool
    ) -> Action {
        switch self.state {
        case .idle:
            self.isGRPC = isGRPC
            self.exchange = ExchangeStateMachine(
                replayable: replayable, hasBody: hasBody, maxBodyBytes: self.maxBodyBytes)
            self.state = endStream ? .halfClosedRemote : .open(ContentLengthVerifier(contentLength: contentLength))
            return .decide
        case .open, .halfClosedRemote, .closed:
            // A later HEADERS frame carries trailers (`requestTrailers`).
            return .none
        }
    }

    /// The request's HEADERS arrived but are no request (a malformed or refused head): answered
    /// with `error`, never planned.
    mutating func requestHeadRefused(_ error: GatewayError, isGRPC: Bool, endStream: Bool) -> Action {
        guard case .idle = self.state else { return .none }
        self.isGRPC = isGRPC
        self.exchange = ExchangeStateMachine(replayable: false, hasBody: false, maxBodyBytes: self.maxBodyBytes)
        self.state = endStream ? .halfClosedRemote : .open(ContentLengthVerifier(contentLength: nil))
        return self.apply(.protocolError(error))
    }

    /// A DATA frame of `length` bytes arrived (`endStream`: with END_STREAM). Checked first,
    /// before any of it goes on: a request whose DATA disagrees with its `content-length` is
    /// refused before a backend could read more (or less) than it declared.
    mutating func receivedData(length: Int, endStream: Bool) -> DataCheck {
        switch self.state {
        case .open(var verifier):
            let keepsToLength = verifier.receivedData(length: length) && (!endStream || verifier.endOfStream())
            self.state = .open(verifier)
            return keepsToLength ? .deliver : .refuse(self.apply(.protocolError(ContentLengthVerifier.violation)))
        case .idle, .halfClosedRemote, .closed:
            // No DATA is expected here; NIOHTTP2 delivers none. Nothing to check.
            return .deliver
        }
    }

    /// Bytes of a DATA frame that `receivedData` let through.
    mutating func requestBody(_ part: ByteBuffer) -> Action {
        self.apply(.requestBody(part))
    }

    /// The client's END_STREAM, on its HEADERS or on DATA that `receivedData` let through.
    mutating func requestEnd() -> Action {
        self.apply(.requestEnd)
    }

    /// The client's trailers (HEADERS with END_STREAM after the head) end the request: its
    /// DATA must have added up to `content-length`.
    mutating func requestTrailers() -> Action {
        self.apply(.requestTrailers)
    }

    /// The client reset the stream (RST_STREAM).
    mutating func clientClosed() -> Action {
        self.apply(.clientClosed)
    }

    /// NIOHTTP2 closed the stream (both ends done, or a reset either way): whatever is still
    /// in flight is abandoned, and nothing more can be written.
    mutating func streamClosed() -> Action {
        let action = self.apply(.clientClosed)
        self.state = .closed
        return action
    }

    /// The client's window for the stream, or the connection, changed writability.
    mutating func clientWritabilityChanged(_ writable: Bool) -> Action {
        guard writable != self.clientWritable else { return .none }
        self.clientWritable = writable
        return self.apply(.clientWritabilityChanged(writable))
    }

    // MARK: Decision

    mutating func decidedToForward() -> Action {
        self.apply(.decidedToForward)
    }

    /// The gateway answers this request itself.
    mutating func decidedToRespondLocally() -> Action {
        self.apply(.decidedToRespondLocally)
    }

    // MARK: Upstream events

    mutating func leaseSucceeded(reused: Bool) -> Action {
        self.apply(.leaseSucceeded(reused: reused))
    }

    mutating func leaseFailed(_ error: GatewayError) -> Action {
        self.apply(.leaseFailed(error))
    }

    /// The backend's response head, as the client's HEADERS: held until the first DATA, the
    /// end of the backend's read burst, or the end of the response.
    mutating func responseHead(_ headers: HPACKHeaders) -> Action {
        self.apply(.responseHead(headers))
    }

    mutating func responseBody(_ part: ByteBuffer) -> Action {
        self.apply(.responseBody(part))
    }

    /// Trailers from an HTTP/2 backend: kept for the end of the response, which they carry.
    mutating func responseTrailers(_ trailers: HPACKHeaders) {
        _ = self.apply(.responseTrailers(trailers))
    }

    /// `upstreamReusable`: the upstream may serve another exchange.
    mutating func responseEnd(upstreamReusable: Bool) -> Action {
        self.apply(.responseEnd(upstreamReusable: upstreamReusable))
    }

    /// The backend's read burst ended: what the response held goes out, so a client of a
    /// response whose rest is still to come sees what there is now.
    mutating func upstreamReadComplete() -> Action {
        self.apply(.upstreamReadComplete)
    }

    mutating func upstreamFailed() -> Action {
        self.apply(.upstreamFailed)
    }

    mutating func upstreamProtocolError() -> Action {
        self.apply(.upstreamProtocolError)
    }

    mutating func upstreamWritabilityChanged(_ writable: Bool) -> Action {
        self.apply(.upstreamWritabilityChanged(writable))
    }

    // MARK: Time

    /// The timeout of the current state ran out.
    mutating func timedOut() -> Action {
        self.apply(.timedOut)
    }

    /// The credential of the stream ran out or was revoked (docs/streams.md): the exchange is
    /// cut short (the backend's stream reset). A gRPC call ends with the gateway's trailers
    /// (`endCall`: after the frame held, or Trailers-Only when no response began); any other
    /// stream — or a call whose response had ended — is reset.
    mutating func credentialEnded() -> Action {
        let requestOpen: Bool
        switch self.state {
        case .open: requestOpen = true
        case .halfClosedRemote: requestOpen = false
        case .idle, .closed: return .none
        }
        let action = self.exchange.credentialEnded()
        guard action != .none else { return .none }
        switch (self.isGRPC, self.response.cutShort()) {
        case (true, .notBegun):
            if requestOpen { self.state = .halfClosedRemote }
            return .endCall(held: .none, trailersOnly: true, stopUpload: requestOpen)
        case (true, .begun(let held)):
            if requestOpen { self.state = .halfClosedRemote }
            return .endCall(held: held, trailersOnly: false, stopUpload: requestOpen)
        case (false, _), (true, .ended):
            return .endExchange(action, stopUpload: false)
        }
    }

    // MARK: Helpers

    /// An event for the stream's exchange and response half, as `apply` runs it.
    private enum Event {
        case requestBody(ByteBuffer)
        case requestEnd
        case requestTrailers
        case protocolError(GatewayError)
        case clientClosed
        case clientWritabilityChanged(Bool)
        case decidedToForward
        case decidedToRespondLocally
        case leaseSucceeded(reused: Bool)
        case leaseFailed(GatewayError)
        case responseHead(HPACKHeaders)
        case responseBody(ByteBuffer)
        case responseTrailers(HPACKHeaders)
        case responseEnd(upstreamReusable: Bool)
        case upstreamReadComplete
        case upstreamFailed
        case upstreamProtocolError
        case upstreamWritabilityChanged(Bool)
        case timedOut
    }

    /// Runs an event on the stream's exchange and response half, in place; nothing happens
    /// before the request head or once the stream has closed. One function runs every event,
    /// so they share its code.
    private mutating func apply(_ event: Event) -> Action {
        var requestOpen: Bool
        let requestComplete: Bool
        switch self.state {
        case .open(let verifier):
            requestOpen = true
            requestComplete = verifier.endOfStream()
        case .halfClosedRemote:
            requestOpen = false
            requestComplete = true
        case .idle, .closed:
            return .none
        }
        let action = Self.handle(
            event, &self.exchange, &self.response, requestComplete: requestComplete, requestOpen: &requestOpen)
        if !requestOpen, case .open = self.state { self.state = .halfClosedRemote }
        return action
    }

    /// `event` on a stream that carries a request. `requestComplete`: its DATA adds up to its
    /// `content-length` so far; `requestOpen`: the client may still send, false once the request
    /// half has ended.
    private static func handle(
        _ event: Event, _ exchange: inout ExchangeStateMachine, _ response: inout Response, requestComplete: Bool,
        requestOpen: inout Bool
    ) -> Action {
        let action: ExchangeStateMachine.Action
        switch event {
        case .requestBody(let part):
            action = exchange.requestBody(part)
        case .requestEnd:
            requestOpen = false
            action = exchange.requestEnd()
        case .requestTrailers:
            requestOpen = false
            action = requestComplete ? exchange.requestEnd() : exchange.protocolError(ContentLengthVerifier.violation)
        case .protocolError(let error):
            action = exchange.protocolError(error)
        case .clientClosed:
            action = exchange.clientClosed()
        case .clientWritabilityChanged(let writable):
            action = exchange.clientWritabilityChanged(writable)
        case .decidedToForward:
            action = exchange.decidedToForward()
        case .decidedToRespondLocally:
            action = exchange.decidedToRespondLocally()
        case .leaseSucceeded(let reused):
            action = exchange.leaseSucceeded(reused: reused)
        case .leaseFailed(let error):
            action = exchange.leaseFailed(error)
        case .responseHead(let headers):
            action = exchange.responseHead()
            if case .writeResponseHead = action { response = .headersHeld(headers, trailers: nil) }
        case .responseBody(let part):
            action = exchange.responseBody(part)
        case .responseTrailers(let trailers):
            response.keep(trailers)
            return .none
        case .responseEnd(let upstreamReusable):
            action = exchange.responseEnd(upstreamReusable: upstreamReusable)
        case .upstreamReadComplete:
            return .writeHeld(response.release(), bodyBytes: 0)
        case .upstreamFailed:
            action = exchange.upstreamFailed()
        case .upstreamProtocolError:
            action = exchange.upstreamProtocolError()
        case .upstreamWritabilityChanged(let writable):
            action = exchange.upstreamWritabilityChanged(writable)
        case .timedOut:
            action = exchange.timedOut()
        }
        return Self.translate(action, response: &response, requestOpen: &requestOpen)
    }

    /// The exchange's action in HTTP/2 framing: a response body part takes the held frame's
    /// place; the response's end and the gateway's own answers end the response half, and
    /// stop an upload still under way (the request half then ends too). A reset (a failure
    /// after the response started, the client gone) ends both halves at once.
    private static func translate(
        _ action: consuming ExchangeStateMachine.Action, response: inout Response, requestOpen: inout Bool
    ) -> Action {
        switch action {
        case .none:
            return .none
        case .lease, .sendRequest, .forwardBody, .forwardEnd, .forwardEndAndRelease, .writeResponseHead, .retry,
            .resumeClientReads, .resumeUpstreamReads:
            return .exchange(action)
        case .writeResponseBody(let part):
            return .writeHeld(response.hold(part), bodyBytes: part.readableBytes)
        case .finishResponse(let reusable):
            return .endResponse(
                last: response.end(), reuseUpstream: reusable, stopUpload: Self.stopUpload(&requestOpen))
        case .finishResponseOnly:
            return .endResponse(last: response.end(), reuseUpstream: nil, stopUpload: Self.stopUpload(&requestOpen))
        case .writeLocalResponse, .respondWithError, .failForwarding(.some):
            response = .ended
            return .endExchange(action, stopUpload: Self.stopUpload(&requestOpen))
        case .failForwarding(.none), .abandon:
            response = .ended
            return .endExchange(action, stopUpload: false)
        }
    }

    /// The response half has ended: the upload, if the client is still sending one, is stopped.
    private static func stopUpload(_ requestOpen: inout Bool) -> Bool {
        defer { requestOpen = false }
        return requestOpen
    }
}
