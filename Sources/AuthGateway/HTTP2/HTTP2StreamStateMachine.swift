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
/// enforces the protocol; this machine is the gateway's framing of one request over it.
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
/// - `modifying`: only inside an event, while it runs on the exchange (never seen outside).
///
/// The response half (`Response`) has its own states: `idle` → `headersHeld` (the backend's
/// head) → `streaming` (HEADERS written, the latest DATA held) → `ended`; or `idle` → `ended`
/// (the gateway's own answer, or a reset).
///
/// An event for the exchange runs on it in place: the state is `modifying` meanwhile, so
/// neither the exchange's buffered body nor the held frames are copied (`withStream`).
struct HTTP2StreamStateMachine: ExchangeEvents {
    enum State {
        /// No request yet.
        case idle
        /// The exchange, what the client's DATA must still add up to, the response half.
        case open(ExchangeStateMachine, ContentLengthVerifier, Response)
        /// The request is complete (or its upload stopped): the exchange, the response half.
        case halfClosedRemote(ExchangeStateMachine, Response)
        case closed
        /// Only while an event runs on the exchange (`withStream`).
        case modifying
    }

    enum Action: Equatable {
        case none
        /// Plan the new request (route, authenticate), then report `decided…`.
        case decide
        /// Run the exchange's action as both framings do.
        case exchange(ExchangeStateMachine.Action)
        /// Write the frame the response held back (a newer DATA part took its place, or the
        /// backend's read burst ended): `bodyBytes` more of the response body went to the
        /// stream.
        case writeHeld(HeldFrame, bodyBytes: Int)
        /// The backend's response is complete — the exchange's `finishResponse` or
        /// `finishResponseOnly` — and ends with `last`; then, when `stopUpload`, RST_STREAM
        /// NO_ERROR asks the client to stop sending (RFC 9113 §8.1).
        case endResponse(ExchangeStateMachine.Action, last: LastFrames, stopUpload: Bool)
        /// The exchange ended with this action (the gateway's own answer, a failure, the client
        /// gone); then, when `stopUpload`, RST_STREAM NO_ERROR asks the client to stop sending.
        case endExchange(ExchangeStateMachine.Action, stopUpload: Bool)
    }

    /// What to do with a DATA frame: hand its bytes on (`requestBody`, then `requestEnd` on
    /// END_STREAM), or nothing but `refuse`'s action, when they break `content-length`.
    enum DataCheck: Equatable {
        case deliver
        case refuse(Action)
    }

    private(set) var state: State = .idle
    /// The request is gRPC: the gateway's own answers are Trailers-Only.
    private(set) var isGRPC = false
    /// The client's writability as the exchange was last told it (the stream's window and the
    /// connection's): only changes are reported.
    private(set) var clientWritable = true
    let maxBodyBytes: Int

    init(maxBodyBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
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
            let exchange = ExchangeStateMachine(
                replayable: replayable, hasBody: hasBody, maxBodyBytes: self.maxBodyBytes)
            self.state =
                endStream
                ? .halfClosedRemote(exchange, .idle)
                : .open(exchange, ContentLengthVerifier(contentLength: contentLength), .idle)
            return .decide
        case .open, .halfClosedRemote, .closed:
            // A later HEADERS frame carries trailers (`requestTrailers`).
            return .none
        case .modifying:
            preconditionFailure("HTTP2StreamStateMachine: event while modifying")
        }
    }

    /// The request's HEADERS arrived but are no request (a malformed or refused head): answered
    /// with `error`, never planned.
    mutating func requestHeadRefused(_ error: GatewayError, isGRPC: Bool, endStream: Bool) -> Action {
        guard case .idle = self.state else { return .none }
        self.isGRPC = isGRPC
        let exchange = ExchangeStateMachine(replayable: false, hasBody: false, maxBodyBytes: self.maxBodyBytes)
        self.state =
            endStream
            ? .halfClosedRemote(exchange, .idle) : .open(exchange, ContentLengthVerifier(contentLength: nil), .idle)
        return self.withStream { exchange, _ in exchange.protocolError(error) }
    }

    /// A DATA frame of `length` bytes arrived (`endStream`: with END_STREAM). Checked first,
    /// before any of it goes on: a request whose DATA disagrees with its `content-length` is
    /// refused before a backend could read more (or less) than it declared.
    mutating func receivedData(length: Int, endStream: Bool) -> DataCheck {
        switch self.state {
        case .open(var exchange, var verifier, var response):
            self.state = .modifying
            let keepsToLength = verifier.receivedData(length: length) && (!endStream || verifier.endOfStream())
            if keepsToLength {
                self.state = .open(exchange, verifier, response)
                return .deliver
            }
            let action = exchange.protocolError(Self.contentLengthViolation)
            var requestOpen = true
            let result = Self.translate(action, response: &response, requestOpen: &requestOpen)
            self.state = requestOpen ? .open(exchange, verifier, response) : .halfClosedRemote(exchange, response)
            return .refuse(result)
        case .idle, .halfClosedRemote, .closed:
            // No DATA is expected here; NIOHTTP2 delivers none. Nothing to check.
            return .deliver
        case .modifying:
            preconditionFailure("HTTP2StreamStateMachine: event while modifying")
        }
    }

    /// Bytes of a DATA frame that `receivedData` let through.
    mutating func requestBody(_ part: ByteBuffer) -> Action {
        self.withStream { exchange, _ in exchange.requestBody(part) }
    }

    /// The client's END_STREAM, on its HEADERS or on DATA that `receivedData` let through.
    mutating func requestEnd() -> Action {
        if case .open(let exchange, _, let response) = self.state {
            self.state = .halfClosedRemote(exchange, response)
        }
        return self.withStream { exchange, _ in exchange.requestEnd() }
    }

    /// The client's trailers (HEADERS with END_STREAM after the head) end the request: its
    /// DATA must have added up to `content-length`.
    mutating func requestTrailers() -> Action {
        let complete: Bool
        switch self.state {
        case .open(let exchange, let verifier, let response):
            complete = verifier.endOfStream()
            self.state = .halfClosedRemote(exchange, response)
        case .idle, .halfClosedRemote, .closed:
            complete = true
        case .modifying:
            preconditionFailure("HTTP2StreamStateMachine: event while modifying")
        }
        return self.withStream { exchange, _ in
            complete ? exchange.requestEnd() : exchange.protocolError(Self.contentLengthViolation)
        }
    }

    /// The client reset the stream (RST_STREAM).
    mutating func clientClosed() -> Action {
        self.withStream { exchange, _ in exchange.clientClosed() }
    }

    /// NIOHTTP2 closed the stream (both ends done, or a reset either way): whatever is still
    /// in flight is abandoned, and nothing more can be written.
    mutating func streamClosed() -> Action {
        let action = self.withStream { exchange, _ in exchange.clientClosed() }
        self.state = .closed
        return action
    }

    /// The client's window for the stream, or the connection, changed writability.
    mutating func clientWritabilityChanged(_ writable: Bool) -> Action {
        guard writable != self.clientWritable else { return .none }
        self.clientWritable = writable
        return self.withStream { exchange, _ in exchange.clientWritabilityChanged(writable) }
    }

    // MARK: Decision

    mutating func decidedToForward() -> Action {
        self.withStream { exchange, _ in exchange.decidedToForward() }
    }

    /// The gateway answers this request itself.
    mutating func decidedToRespondLocally() -> Action {
        self.withStream { exchange, _ in exchange.decidedToRespondLocally() }
    }

    // MARK: Upstream events

    var awaitsLease: Bool {
        switch self.state {
        case .open(let exchange, _, _), .halfClosedRemote(let exchange, _): return exchange.awaitsLease
        case .idle, .closed: return false
        case .modifying: preconditionFailure("HTTP2StreamStateMachine: read while modifying")
        }
    }

    mutating func leaseSucceeded(reused: Bool) -> Action {
        self.withStream { exchange, _ in exchange.leaseSucceeded(reused: reused) }
    }

    mutating func leaseFailed(_ error: GatewayError) -> Action {
        self.withStream { exchange, _ in exchange.leaseFailed(error) }
    }

    /// The backend's response head, as the client's HEADERS: held until the first DATA, the
    /// end of the backend's read burst, or the end of the response.
    mutating func responseHead(_ headers: HPACKHeaders) -> Action {
        self.withStream { exchange, response in
            let action = exchange.responseHead()
            if case .writeResponseHead = action { response = .headersHeld(headers, trailers: nil) }
            return action
        }
    }

    mutating func responseBody(_ part: ByteBuffer) -> Action {
        self.withStream { exchange, _ in exchange.responseBody(part) }
    }

    /// Trailers from an HTTP/2 backend: kept for the end of the response, which they carry.
    mutating func responseTrailers(_ trailers: HPACKHeaders) {
        _ = self.withStream { _, response in
            response.keep(trailers)
            return .none
        }
    }

    /// `upstreamReusable`: the upstream may serve another exchange.
    mutating func responseEnd(upstreamReusable: Bool) -> Action {
        self.withStream { exchange, _ in exchange.responseEnd(upstreamReusable: upstreamReusable) }
    }

    /// The backend's read burst ended: what the response held goes out, so a client of a
    /// response whose rest is still to come sees what there is now.
    mutating func upstreamReadComplete() -> Action {
        guard self.hasRequest else { return .none }
        var released = HeldFrame.none
        _ = self.withStream { _, response in
            released = response.release()
            return .none
        }
        return .writeHeld(released, bodyBytes: 0)
    }

    mutating func upstreamFailed() -> Action {
        self.withStream { exchange, _ in exchange.upstreamFailed() }
    }

    mutating func upstreamProtocolError() -> Action {
        self.withStream { exchange, _ in exchange.upstreamProtocolError() }
    }

    mutating func upstreamWritabilityChanged(_ writable: Bool) -> Action {
        self.withStream { exchange, _ in exchange.upstreamWritabilityChanged(writable) }
    }

    // MARK: Time

    /// The timeout of the current state ran out.
    mutating func timedOut() -> Action {
        self.withStream { exchange, _ in exchange.timedOut() }
    }

    // MARK: Helpers

    static var contentLengthViolation: GatewayError { .malformedRequest("The DATA disagrees with content-length") }

    /// The stream carries a request and has not closed.
    private var hasRequest: Bool {
        switch self.state {
        case .open, .halfClosedRemote: return true
        case .idle, .closed, .modifying: return false
        }
    }

    /// Runs an event on the exchange and the response in place, and translates its action;
    /// nothing happens before the request head or once the stream has closed. The state is
    /// `modifying` meanwhile, so neither is shared and neither is copied on write
    /// (AsyncHTTPClient's `avoidingStateMachineCoW`). The closure does not escape and is
    /// inlined: no allocation.
    @inline(__always)
    private mutating func withStream(
        _ event: (inout ExchangeStateMachine, inout Response) -> ExchangeStateMachine.Action
    ) -> Action {
        switch self.state {
        case .open(var exchange, let verifier, var response):
            self.state = .modifying
            let action = event(&exchange, &response)
            var requestOpen = true
            let result = Self.translate(action, response: &response, requestOpen: &requestOpen)
            self.state = requestOpen ? .open(exchange, verifier, response) : .halfClosedRemote(exchange, response)
            return result
        case .halfClosedRemote(var exchange, var response):
            self.state = .modifying
            let action = event(&exchange, &response)
            var requestOpen = false
            let result = Self.translate(action, response: &response, requestOpen: &requestOpen)
            self.state = .halfClosedRemote(exchange, response)
            return result
        case .idle, .closed:
            return .none
        case .modifying:
            preconditionFailure("HTTP2StreamStateMachine: event while modifying")
        }
    }

    /// The exchange's action in HTTP/2 framing: a response body part takes the held frame's
    /// place; the response's end and the gateway's own answers end the response half, and
    /// stop an upload still under way (the request half then ends too). A reset (a failure
    /// after the response started, the client gone) ends both halves at once.
    private static func translate(
        _ action: ExchangeStateMachine.Action, response: inout Response, requestOpen: inout Bool
    ) -> Action {
        switch action {
        case .none:
            return .none
        case .lease, .sendRequest, .forwardBody, .forwardEnd, .forwardEndAndRelease, .writeResponseHead, .retry,
            .resumeClientReads, .resumeUpstreamReads:
            return .exchange(action)
        case .writeResponseBody(let part):
            return .writeHeld(response.hold(part), bodyBytes: part.readableBytes)
        case .finishResponse, .finishResponseOnly:
            let last = response.end()
            return .endResponse(action, last: last, stopUpload: Self.stopUpload(&requestOpen))
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
