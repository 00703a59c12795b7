import NIOCore
import Testing

@testable import AuthGateway

/// One flat, `Equatable` view of `HTTP1ConnectionStateMachine.Action`: the exchange's action
/// with what the connection does after it (`closeClient`, `close`) and whether `100 Continue`
/// goes first, so each step compares whole. The switches have no `default:`: a new action
/// fails to compile here.
enum ConnectionStep: Equatable {
    case none
    case decide
    case lease
    case sendRequest(body: [String], end: Bool, sendContinue: Bool)
    case forwardBody(String)
    case forwardEnd
    case writeResponseHead
    case writeResponseBody(String)
    case finishResponse(reuseUpstream: Bool, closeClient: Bool)
    case finishResponseOnly
    case forwardEndAndRelease(reuseUpstream: Bool, closeClient: Bool)
    case writeLocalResponse(close: Bool)
    case respondWithError(GatewayError, close: Bool)
    case failForwarding(GatewayError?)
    case retry
    case abandon
    case closeConnection
    case closeTunnel
    case resumeClientReads
    case resumeUpstreamReads

    init(_ action: HTTP1ConnectionStateMachine.Action) {
        switch action {
        case .none: self = .none
        case .decide: self = .decide
        case .exchange(let action): self.init(action, close: false)
        case .endExchange(let action, let close): self.init(action, close: close)
        case .sendContinueAndRequest(let body, let end):
            self = .sendRequest(body: body.map { String(buffer: $0) }, end: end, sendContinue: true)
        case .closeConnection: self = .closeConnection
        case .closeTunnel: self = .closeTunnel
        }
    }

    private init(_ action: ExchangeStateMachine.Action, close: Bool) {
        switch action {
        case .none: self = .none
        case .lease: self = .lease
        case .sendRequest(let body, let end):
            self = .sendRequest(body: body.map { String(buffer: $0) }, end: end, sendContinue: false)
        case .forwardBody(let part): self = .forwardBody(String(buffer: part))
        case .forwardEnd: self = .forwardEnd
        case .writeResponseHead: self = .writeResponseHead
        case .writeResponseBody(let part): self = .writeResponseBody(String(buffer: part))
        case .finishResponse(let reuseUpstream):
            self = .finishResponse(reuseUpstream: reuseUpstream, closeClient: close)
        case .finishResponseOnly: self = .finishResponseOnly
        case .forwardEndAndRelease(let reuseUpstream):
            self = .forwardEndAndRelease(reuseUpstream: reuseUpstream, closeClient: close)
        case .writeLocalResponse: self = .writeLocalResponse(close: close)
        case .respondWithError(let error): self = .respondWithError(error, close: close)
        case .failForwarding(let error): self = .failForwarding(error)
        case .retry: self = .retry
        case .abandon: self = .abandon
        case .resumeClientReads: self = .resumeClientReads
        case .resumeUpstreamReads: self = .resumeUpstreamReads
        }
    }
}

/// A short name of the connection's state (its exchange's state while one is in flight), for
/// comparisons.
func connectionStateName(_ machine: HTTP1ConnectionStateMachine) -> String {
    switch machine.state {
    case .idle: return "idle"
    case .exchange(let exchange, _): return exchangeStateName(exchange.state)
    case .tunnel: return "tunnel"
    case .closed: return "closed"
    case .modifying: return "modifying"
    }
}

func exchangeStateName(_ state: ExchangeStateMachine.State) -> String {
    switch state {
    case .deciding: return "deciding"
    case .leasing: return "leasing"
    case .forwarding(_, .awaitingHead, let reused):
        return reused ? "forwarding(awaitingHead, reused)" : "forwarding(awaitingHead)"
    case .forwarding(_, .streaming, let reused):
        return reused ? "forwarding(streaming, reused)" : "forwarding(streaming)"
    case .forwarding(_, .complete, _): return "forwarding(complete)"
    case .done: return "done"
    }
}

private func buffer(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

/// Drives an HTTP/1.1 connection's state machine and checks each step.
struct ConnectionDriver {
    var machine: HTTP1ConnectionStateMachine

    init(maxBodyBytes: Int = 1000) {
        self.machine = HTTP1ConnectionStateMachine(maxBodyBytes: maxBodyBytes)
    }

    var state: String { connectionStateName(self.machine) }

    @discardableResult
    mutating func head(
        keepAlive: Bool = true, expectsContinue: Bool = false, replayable: Bool = true, hasBody: Bool = false
    ) -> ConnectionStep {
        ConnectionStep(
            self.machine.requestHead(
                keepAlive: keepAlive, expectsContinue: expectsContinue, replayable: replayable, hasBody: hasBody))
    }

    @discardableResult mutating func body(_ text: String) -> ConnectionStep {
        ConnectionStep(self.machine.requestBody(buffer(text)))
    }
    @discardableResult mutating func end() -> ConnectionStep { ConnectionStep(self.machine.requestEnd()) }
    @discardableResult mutating func forward() -> ConnectionStep { ConnectionStep(self.machine.decidedToForward()) }
    @discardableResult mutating func local(forceClose: Bool = false) -> ConnectionStep {
        ConnectionStep(self.machine.decidedToRespondLocally(forceClose: forceClose))
    }
    @discardableResult mutating func leased(reused: Bool = false) -> ConnectionStep {
        ConnectionStep(self.machine.leaseSucceeded(reused: reused))
    }
    @discardableResult mutating func leaseFailed(_ error: GatewayError = .upstreamUnreachable) -> ConnectionStep {
        ConnectionStep(self.machine.leaseFailed(error))
    }
    @discardableResult mutating func responseHead() -> ConnectionStep { ConnectionStep(self.machine.responseHead()) }
    @discardableResult mutating func upgraded() -> ConnectionStep { ConnectionStep(self.machine.upgraded()) }
    @discardableResult mutating func responseBody(_ text: String) -> ConnectionStep {
        ConnectionStep(self.machine.responseBody(buffer(text)))
    }
    @discardableResult mutating func responseEnd(
        upstreamKeepAlive: Bool = true, clientMustClose: Bool = false
    ) -> ConnectionStep {
        ConnectionStep(self.machine.responseEnd(upstreamKeepAlive: upstreamKeepAlive, clientMustClose: clientMustClose))
    }
    @discardableResult mutating func upstreamFailed() -> ConnectionStep {
        ConnectionStep(self.machine.upstreamFailed())
    }
    @discardableResult mutating func upstreamProtocolError() -> ConnectionStep {
        ConnectionStep(self.machine.upstreamProtocolError())
    }
    @discardableResult mutating func protocolError(_ error: GatewayError = .malformedRequest("bad")) -> ConnectionStep {
        ConnectionStep(self.machine.protocolError(error))
    }
    @discardableResult mutating func clientClosed() -> ConnectionStep { ConnectionStep(self.machine.clientClosed()) }
    @discardableResult mutating func timedOut() -> ConnectionStep { ConnectionStep(self.machine.timedOut()) }
    @discardableResult mutating func clientWritable(_ writable: Bool) -> ConnectionStep {
        ConnectionStep(self.machine.clientWritabilityChanged(writable))
    }
    @discardableResult mutating func upstreamWritable(_ writable: Bool) -> ConnectionStep {
        ConnectionStep(self.machine.upstreamWritabilityChanged(writable))
    }

    /// A GET forwarded up to the point where the backend is asked (awaiting its head).
    mutating func getAwaitingResponse(keepAlive: Bool = true, reused: Bool = false, replayable: Bool = true) {
        self.head(keepAlive: keepAlive, replayable: replayable)
        self.end()
        self.forward()
        self.leased(reused: reused)
    }

    /// A POST whose body has not ended, forwarded up to awaiting the backend's head.
    mutating func postAwaitingResponse(keepAlive: Bool = true) {
        self.head(keepAlive: keepAlive, replayable: false, hasBody: true)
        self.forward()
        self.leased()
    }
}

/// The states a test can put the machine in, and how to get there.
enum ConnectionSituation: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case idle, deciding, leasing, awaitingHead, streaming, closed

    var testDescription: String { self.rawValue }

    func driver(maxBodyBytes: Int = 1000, hasBody: Bool = true) -> ConnectionDriver {
        var driver = ConnectionDriver(maxBodyBytes: maxBodyBytes)
        switch self {
        case .idle:
            break
        case .deciding:
            driver.head(replayable: !hasBody, hasBody: hasBody)
        case .leasing:
            driver.head(replayable: !hasBody, hasBody: hasBody)
            driver.forward()
        case .awaitingHead:
            driver.head(replayable: !hasBody, hasBody: hasBody)
            driver.forward()
            driver.leased()
        case .streaming:
            driver.head(replayable: !hasBody, hasBody: hasBody)
            driver.forward()
            driver.leased()
            driver.responseHead()
        case .closed:
            driver.head()
            driver.clientClosed()
        }
        return driver
    }
}

@Suite("HTTP1ConnectionStateMachine")
struct HTTP1ConnectionStateMachineTests {
    // MARK: The happy paths

    @Test("a GET is decided, leased, forwarded, answered and the connection kept alive")
    func getKeptAlive() {
        var driver = ConnectionDriver()
        #expect(driver.state == "idle")
        #expect(driver.machine.timeout == .idle)
        #expect(driver.head() == .decide)
        #expect(driver.state == "deciding")
        #expect(driver.machine.timeout == .none)
        #expect(driver.end() == .none)
        #expect(driver.forward() == .lease)
        #expect(driver.state == "leasing")
        #expect(driver.leased(reused: false) == .sendRequest(body: [], end: true, sendContinue: false))
        #expect(driver.state == "forwarding(awaitingHead)")
        #expect(driver.machine.timeout == .response)
        #expect(driver.responseHead() == .writeResponseHead)
        #expect(driver.state == "forwarding(streaming)")
        #expect(driver.machine.timeout == .response)
        #expect(driver.responseBody("hello") == .writeResponseBody("hello"))
        #expect(driver.responseBody(" world") == .writeResponseBody(" world"))
        #expect(driver.responseEnd() == .finishResponse(reuseUpstream: true, closeClient: false))
        #expect(driver.state == "idle")
        #expect(driver.machine.isIdle)
        #expect(driver.machine.timeout == .idle)

        // The next request on the same connection starts afresh.
        #expect(driver.head() == .decide)
        #expect(driver.state == "deciding")
    }

    @Test("the end of a GET that arrives after the lease is forwarded then")
    func getEndAfterLease() {
        var driver = ConnectionDriver()
        driver.head()
        driver.forward()
        #expect(driver.leased() == .sendRequest(body: [], end: false, sendContinue: false))
        #expect(driver.machine.timeout == .idle)
        #expect(driver.end() == .forwardEnd)
        #expect(driver.machine.timeout == .response)
        #expect(driver.end() == .none)
    }

    @Test(
        "who closes at the end of a response",
        arguments: [
            // keepAlive, upstreamKeepAlive, clientMustClose → reuseUpstream, closeClient
            (true, true, false, true, false),
            (false, true, false, true, true),
            (true, false, false, false, false),
            (true, true, true, true, true),
            (false, false, true, false, true),
        ])
    func responseEndClosing(
        keepAlive: Bool, upstreamKeepAlive: Bool, clientMustClose: Bool, reuseUpstream: Bool, closeClient: Bool
    ) {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse(keepAlive: keepAlive)
        driver.responseHead()
        #expect(
            driver.responseEnd(upstreamKeepAlive: upstreamKeepAlive, clientMustClose: clientMustClose)
                == .finishResponse(reuseUpstream: reuseUpstream, closeClient: closeClient))
        #expect(driver.state == (closeClient ? "closed" : "idle"))
    }

    @Test("a POST's body parts that arrive before the lease are buffered and sent with the head")
    func postBufferedBody() {
        var driver = ConnectionDriver()
        #expect(driver.head(replayable: false, hasBody: true) == .decide)
        #expect(driver.body("a") == .none)
        #expect(driver.body("bc") == .none)
        #expect(driver.forward() == .lease)
        #expect(driver.body("def") == .none)
        #expect(driver.leased() == .sendRequest(body: ["a", "bc", "def"], end: false, sendContinue: false))
        #expect(driver.body("g") == .forwardBody("g"))
        #expect(driver.end() == .forwardEnd)
        #expect(driver.body("late") == .none)
        #expect(driver.end() == .none)
        driver.responseHead()
        #expect(driver.responseEnd() == .finishResponse(reuseUpstream: true, closeClient: false))
        #expect(driver.state == "idle")
    }

    @Test("a POST whose whole body arrived while leasing is sent complete, and the buffer is not sent twice")
    func postCompleteBeforeLease() {
        var driver = ConnectionDriver()
        driver.head(replayable: false, hasBody: true)
        driver.body("x")
        driver.forward()
        driver.body("y")
        #expect(driver.end() == .none)
        #expect(driver.leased() == .sendRequest(body: ["x", "y"], end: true, sendContinue: false))
        #expect(driver.end() == .none)
        #expect(driver.machine.timeout == .response)
    }

    // MARK: 100-continue

    @Test("100 Continue is sent when the request has a body that has not arrived")
    func continueSent() {
        var driver = ConnectionDriver()
        driver.head(expectsContinue: true, replayable: false, hasBody: true)
        driver.forward()
        #expect(driver.leased() == .sendRequest(body: [], end: false, sendContinue: true))
    }

    @Test("no 100 Continue without a body")
    func continueWithoutBody() {
        var driver = ConnectionDriver()
        driver.head(expectsContinue: true, replayable: false, hasBody: false)
        driver.end()
        driver.forward()
        #expect(driver.leased() == .sendRequest(body: [], end: true, sendContinue: false))
    }

    @Test("no 100 Continue when the client sent the whole body anyway")
    func continueAfterCompleteBody() {
        var driver = ConnectionDriver()
        driver.head(expectsContinue: true, replayable: false, hasBody: true)
        driver.body("data")
        driver.end()
        driver.forward()
        #expect(driver.leased() == .sendRequest(body: ["data"], end: true, sendContinue: false))
    }

    @Test("no 100 Continue when the request was not expecting one")
    func noExpectation() {
        var driver = ConnectionDriver()
        driver.head(expectsContinue: false, replayable: false, hasBody: true)
        driver.forward()
        #expect(driver.leased() == .sendRequest(body: [], end: false, sendContinue: false))
    }

    // MARK: Local answers

    @Test("a local answer keeps the connection when nothing is left to read")
    func localKeepAlive() {
        var driver = ConnectionDriver()
        driver.head()
        driver.end()
        #expect(driver.local() == .writeLocalResponse(close: false))
        #expect(driver.state == "idle")

        var withBody = ConnectionDriver()
        withBody.head(replayable: false, hasBody: true)
        withBody.body("x")
        withBody.end()
        #expect(withBody.local() == .writeLocalResponse(close: false))
        #expect(withBody.state == "idle")
    }

    @Test("a local answer closes when the body is unread, the client asked to close, or the answer requires it")
    func localClose() {
        var unread = ConnectionDriver()
        unread.head(replayable: false, hasBody: true)
        unread.body("part")
        #expect(unread.local() == .writeLocalResponse(close: true))
        #expect(unread.state == "closed")

        var waitingForContinue = ConnectionDriver()
        waitingForContinue.head(expectsContinue: true, replayable: false, hasBody: true)
        #expect(waitingForContinue.local() == .writeLocalResponse(close: true))

        var clientClose = ConnectionDriver()
        clientClose.head(keepAlive: false)
        clientClose.end()
        #expect(clientClose.local() == .writeLocalResponse(close: true))
        #expect(clientClose.state == "closed")

        var forced = ConnectionDriver()
        forced.head()
        forced.end()
        #expect(forced.local(forceClose: true) == .writeLocalResponse(close: true))
        #expect(forced.state == "closed")
    }

    @Test(
        "decisions outside the deciding state are ignored",
        arguments: [ConnectionSituation.idle, .leasing, .awaitingHead, .streaming, .closed])
    func decisionsOutsideDeciding(_ situation: ConnectionSituation) {
        var driver = situation.driver()
        let before = driver.state
        #expect(driver.forward() == .none)
        #expect(driver.local() == .none)
        #expect(driver.state == before)
    }

    // MARK: Lease failure

    @Test("a failed lease answers the error and keeps the connection when it can")
    func leaseFailureKeepAlive() {
        var driver = ConnectionDriver()
        driver.head()
        driver.end()
        driver.forward()
        #expect(driver.leaseFailed(.upstreamUnreachable) == .respondWithError(.upstreamUnreachable, close: false))
        #expect(driver.state == "idle")
    }

    @Test("a failed lease closes when the body is unread or the client asked to close")
    func leaseFailureClose() {
        var unread = ConnectionDriver()
        unread.head(replayable: false, hasBody: true)
        unread.forward()
        #expect(unread.leaseFailed(.upstreamBusy) == .respondWithError(.upstreamBusy, close: true))
        #expect(unread.state == "closed")

        var clientClose = ConnectionDriver()
        clientClose.head(keepAlive: false)
        clientClose.end()
        clientClose.forward()
        #expect(clientClose.leaseFailed() == .respondWithError(.upstreamUnreachable, close: true))
    }

    @Test(
        "lease results outside the leasing state",
        arguments: [ConnectionSituation.idle, .deciding, .awaitingHead, .streaming, .closed])
    func leaseResultsOutsideLeasing(_ situation: ConnectionSituation) {
        var failed = situation.driver()
        let before = failed.state
        #expect(failed.leaseFailed() == .none)
        #expect(failed.state == before)
        // A connection nobody waits for goes back unused (`ExchangeHandler.leaseSucceeded`).
        var succeeded = situation.driver()
        #expect(!succeeded.machine.awaitsLease)
        #expect(succeeded.leased() == .none)
        #expect(succeeded.state == before)
    }

    // MARK: Early responses

    @Test(
        "a response that ends before the request body: the client gets it at once, the rest of the body still goes upstream, both connections are kept"
    )
    func responseBeforeBodyEnd() {
        var driver = ConnectionDriver()
        driver.postAwaitingResponse()
        driver.body("partial")
        #expect(driver.responseHead() == .writeResponseHead)
        #expect(driver.responseBody("denied") == .writeResponseBody("denied"))
        #expect(driver.responseEnd(upstreamKeepAlive: true, clientMustClose: false) == .finishResponseOnly)
        #expect(driver.machine.timeout == .idle)
        #expect(driver.body("more") == .forwardBody("more"))
        #expect(driver.end() == .forwardEndAndRelease(reuseUpstream: true, closeClient: false))
        #expect(driver.state == "idle")
    }

    @Test("after an early response, a client that asked to close, or an upstream failure, closes")
    func responseBeforeBodyEndThenClose() {
        var closing = ConnectionDriver()
        closing.postAwaitingResponse()
        closing.responseHead()
        #expect(closing.responseEnd(upstreamKeepAlive: false, clientMustClose: true) == .finishResponseOnly)
        #expect(closing.end() == .forwardEndAndRelease(reuseUpstream: false, closeClient: true))
        #expect(closing.state == "closed")

        var failing = ConnectionDriver()
        failing.postAwaitingResponse()
        failing.responseHead()
        #expect(failing.responseEnd(upstreamKeepAlive: true, clientMustClose: false) == .finishResponseOnly)
        #expect(failing.upstreamFailed() == .failForwarding(nil))
        #expect(failing.state == "closed")
    }

    @Test("the request body keeps flowing while the response streams")
    func bodyDuringResponse() {
        var driver = ConnectionDriver()
        driver.postAwaitingResponse()
        driver.responseHead()
        #expect(driver.body("x") == .forwardBody("x"))
        #expect(driver.end() == .forwardEnd)
        #expect(driver.responseEnd() == .finishResponse(reuseUpstream: true, closeClient: false))
    }

    // MARK: Replay

    @Test("a replayable request is replayed exactly once after a reused connection fails before the response")
    func replayOnce() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse(reused: true)
        #expect(driver.upstreamFailed() == .retry)
        #expect(driver.state == "leasing")
        #expect(driver.machine.shouldReadFromClient == false)
        #expect(driver.leased(reused: true) == .sendRequest(body: [], end: true, sendContinue: false))
        #expect(driver.state == "forwarding(awaitingHead, reused)")
        #expect(driver.upstreamFailed() == .failForwarding(.upstreamUnreachable))
        #expect(driver.state == "closed")
    }

    @Test("a replayed request can succeed")
    func replayThenSuccess() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse(reused: true)
        #expect(driver.upstreamFailed() == .retry)
        driver.leased(reused: false)
        driver.responseHead()
        #expect(driver.responseEnd() == .finishResponse(reuseUpstream: true, closeClient: false))
        #expect(driver.state == "idle")
    }

    @Test("a replay whose lease fails answers the error")
    func replayLeaseFails() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse(reused: true)
        driver.upstreamFailed()
        #expect(driver.leaseFailed(.upstreamUnreachable) == .respondWithError(.upstreamUnreachable, close: false))
    }

    @Test("the replay allowance is per request, not per connection")
    func replayPerRequest() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse(reused: true)
        #expect(driver.upstreamFailed() == .retry)
        driver.leased(reused: true)
        driver.responseHead()
        driver.responseEnd()
        driver.getAwaitingResponse(reused: true)
        #expect(driver.upstreamFailed() == .retry)
    }

    @Test("a non-replayable request is never replayed")
    func noReplayForNonReplayable() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse(reused: true, replayable: false)
        #expect(driver.upstreamFailed() == .failForwarding(.upstreamUnreachable))
        #expect(driver.state == "closed")
    }

    @Test("a request on a fresh connection is never replayed")
    func noReplayOnFreshConnection() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse(reused: false, replayable: true)
        #expect(driver.upstreamFailed() == .failForwarding(.upstreamUnreachable))
    }

    @Test("once the response has started, an upstream failure just closes")
    func noReplayAfterResponseStarted() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse(reused: true)
        driver.responseHead()
        #expect(driver.upstreamFailed() == .failForwarding(nil))
        #expect(driver.state == "closed")
    }

    @Test(
        "upstream failures outside forwarding are ignored",
        arguments: [ConnectionSituation.idle, .deciding, .leasing, .closed])
    func upstreamFailureOutsideForwarding(_ situation: ConnectionSituation) {
        var driver = situation.driver()
        let before = driver.state
        #expect(driver.upstreamFailed() == .none)
        #expect(driver.upstreamProtocolError() == .none)
        #expect(driver.state == before)
    }

    @Test("an invalid backend response: 502 before the head, close after")
    func upstreamProtocolError() {
        var before = ConnectionDriver()
        before.getAwaitingResponse(reused: true)
        #expect(before.upstreamProtocolError() == .failForwarding(.upstreamProtocolError))
        #expect(before.state == "closed")

        var after = ConnectionDriver()
        after.getAwaitingResponse()
        after.responseHead()
        #expect(after.upstreamProtocolError() == .failForwarding(nil))
        #expect(after.state == "closed")
    }

    // MARK: Timeouts

    @Test("a backend that does not answer a complete request: 504")
    func timeoutAwaitingHead() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse()
        #expect(driver.machine.timeout == .response)
        #expect(driver.timedOut() == .failForwarding(.upstreamTimeout))
        #expect(driver.state == "closed")
    }

    @Test("a client that stops sending its body: the idle timeout applies, then 408 and the connection closes")
    func timeoutDuringUpload() {
        var driver = ConnectionDriver()
        driver.postAwaitingResponse()
        driver.body("x")
        #expect(driver.machine.timeout == .idle)
        #expect(driver.timedOut() == .failForwarding(.requestTimeout))
        #expect(driver.state == "closed")
    }

    @Test("a response that stalls mid-stream: close")
    func timeoutStreaming() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse()
        driver.responseHead()
        #expect(driver.machine.timeout == .response)
        #expect(driver.timedOut() == .failForwarding(nil))
        #expect(driver.state == "closed")
    }

    @Test("an idle connection times out")
    func timeoutIdle() {
        var driver = ConnectionDriver()
        #expect(driver.machine.timeout == .idle)
        #expect(driver.timedOut() == .closeConnection, "nothing is in flight: the connection just closes")
        #expect(driver.state == "closed")
        #expect(driver.machine.timeout == .none)
    }

    @Test(
        "no timeout while deciding or leasing (those have their own bounds)",
        arguments: [ConnectionSituation.deciding, .leasing, .closed])
    func noTimeout(_ situation: ConnectionSituation) {
        var driver = situation.driver()
        let before = driver.state
        #expect(driver.machine.timeout == .none)
        #expect(driver.timedOut() == .none)
        #expect(driver.state == before)
    }

    // MARK: Protocol errors

    @Test(
        "a protocol error before forwarding answers it and closes",
        arguments: [ConnectionSituation.idle, .deciding, .leasing])
    func protocolErrorBeforeForwarding(_ situation: ConnectionSituation) {
        var driver = situation.driver()
        #expect(driver.protocolError(.headersTooLarge) == .respondWithError(.headersTooLarge, close: true))
        #expect(driver.state == "closed")
    }

    @Test("a protocol error while awaiting the backend's head answers it and drops the upstream connection")
    func protocolErrorAwaitingHead() {
        var driver = ConnectionDriver()
        driver.postAwaitingResponse()
        #expect(
            driver.protocolError(.malformedRequest("Bad chunk size"))
                == .failForwarding(.malformedRequest("Bad chunk size")))
        #expect(driver.state == "closed")
    }

    @Test("a protocol error once the response streams can only close")
    func protocolErrorStreaming() {
        var driver = ConnectionSituation.streaming.driver()
        #expect(driver.protocolError() == .failForwarding(nil))
        #expect(driver.state == "closed")
    }

    @Test("a protocol error after close is ignored")
    func protocolErrorClosed() {
        var driver = ConnectionSituation.closed.driver()
        #expect(driver.protocolError() == .none)
    }

    @Test(
        "a second request head while one is in flight is a protocol violation",
        arguments: [ConnectionSituation.deciding, .leasing, .awaitingHead, .streaming])
    func unexpectedHead(_ situation: ConnectionSituation) {
        var driver = situation.driver()
        guard case .failForwarding(let error?) = driver.head() else {
            Issue.record("expected failForwarding with an error")
            return
        }
        #expect(error.status == .badRequest)
        #expect(driver.state == "closed")
    }

    // MARK: Body limit

    @Test(
        "a body over the limit before forwarding: 413 and close", arguments: [ConnectionSituation.deciding, .leasing])
    func bodyLimitBeforeForwarding(_ situation: ConnectionSituation) {
        var driver = situation.driver(maxBodyBytes: 10)
        #expect(driver.body("123456") == .none)
        #expect(driver.body("1234") == .none)  // exactly 10
        #expect(driver.body("x") == .respondWithError(.bodyTooLarge, close: true))
        #expect(driver.state == "closed")
        // The lease that was under way is returned unused.
        #expect(!driver.machine.awaitsLease)
        #expect(driver.leased() == .none)
    }

    @Test("a body over the limit before the backend answered: 413 and drop the upstream connection")
    func bodyLimitAwaitingHead() {
        var driver = ConnectionDriver(maxBodyBytes: 10)
        driver.head(replayable: false, hasBody: true)
        driver.body("12345")
        driver.forward()
        #expect(driver.leased() == .sendRequest(body: ["12345"], end: false, sendContinue: false))
        #expect(driver.body("12345") == .forwardBody("12345"))
        #expect(driver.body("6") == .failForwarding(.bodyTooLarge))
        #expect(driver.state == "closed")
    }

    @Test("a body over the limit while the response streams: abort")
    func bodyLimitStreaming() {
        var driver = ConnectionSituation.streaming.driver(maxBodyBytes: 4)
        #expect(driver.body("1234") == .forwardBody("1234"))
        #expect(driver.body("5") == .failForwarding(nil))
        #expect(driver.state == "closed")
    }

    @Test("the limit counts the whole body across buffering and forwarding")
    func bodyLimitAcrossPhases() {
        var driver = ConnectionDriver(maxBodyBytes: 6)
        driver.head(replayable: false, hasBody: true)
        driver.body("12")
        driver.forward()
        driver.body("34")
        driver.leased()
        #expect(driver.body("56") == .forwardBody("56"))
        #expect(driver.body("7") == .failForwarding(.bodyTooLarge))
    }

    @Test("a zero limit refuses any body byte but allows bodiless requests")
    func zeroLimit() {
        var empty = ConnectionDriver(maxBodyBytes: 0)
        empty.getAwaitingResponse()
        empty.responseHead()
        #expect(empty.responseEnd() == .finishResponse(reuseUpstream: true, closeClient: false))
        var withByte = ConnectionDriver(maxBodyBytes: 0)
        withByte.head(replayable: false, hasBody: true)
        #expect(withByte.body("x") == .respondWithError(.bodyTooLarge, close: true))
    }

    // MARK: Flow control

    @Test("no reading from the client while a request is decided or leased")
    func readsPausedWhileDeciding() {
        var driver = ConnectionDriver()
        #expect(driver.machine.shouldReadFromClient)
        driver.head(replayable: false, hasBody: true)
        #expect(!driver.machine.shouldReadFromClient)
        driver.forward()
        #expect(!driver.machine.shouldReadFromClient)
        driver.leased()
        #expect(driver.machine.shouldReadFromClient)
    }

    @Test("reading from the client follows the upstream's writability while the body flows")
    func readsFollowUpstreamWritability() {
        var driver = ConnectionDriver()
        driver.postAwaitingResponse()
        #expect(driver.machine.shouldReadFromClient)
        #expect(driver.upstreamWritable(false) == .none)
        #expect(!driver.machine.shouldReadFromClient)
        #expect(driver.upstreamWritable(true) == .resumeClientReads)
        #expect(driver.machine.shouldReadFromClient)
        // Once the body is complete there is nothing to resume.
        driver.end()
        #expect(driver.upstreamWritable(false) == .none)
        #expect(driver.upstreamWritable(true) == .none)
    }

    @Test("a new upstream connection starts writable")
    func leaseResetsUpstreamWritability() {
        var driver = ConnectionDriver()
        driver.head(replayable: false, hasBody: true)
        driver.forward()
        #expect(driver.upstreamWritable(false) == .none)
        driver.leased()
        #expect(driver.machine.shouldReadFromClient)
    }

    @Test(
        "upstream writability outside forwarding resumes nothing",
        arguments: [ConnectionSituation.idle, .deciding, .leasing, .closed])
    func upstreamWritabilityOutsideForwarding(_ situation: ConnectionSituation) {
        var driver = situation.driver()
        #expect(driver.upstreamWritable(false) == .none)
        #expect(driver.upstreamWritable(true) == .none)
    }

    @Test("reading from the upstream follows the client's writability")
    func upstreamReadsFollowClient() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse()
        driver.responseHead()
        #expect(driver.machine.shouldReadFromUpstream)
        #expect(driver.clientWritable(false) == .none)
        #expect(!driver.machine.shouldReadFromUpstream)
        #expect(driver.clientWritable(true) == .resumeUpstreamReads)
        #expect(driver.machine.shouldReadFromUpstream)
    }

    @Test("client writability outside forwarding resumes nothing but is remembered")
    func clientWritabilityOutsideForwarding() {
        var driver = ConnectionDriver()
        #expect(driver.clientWritable(false) == .none)
        #expect(!driver.machine.shouldReadFromUpstream)
        #expect(driver.clientWritable(true) == .none)
        #expect(driver.machine.shouldReadFromUpstream)
    }

    @Test("nothing is read from a closed connection")
    func closedReadsNothing() {
        let driver = ConnectionSituation.closed.driver()
        #expect(!driver.machine.shouldReadFromClient)
        #expect(driver.machine.isClosed)
    }

    // MARK: Client close

    @Test(
        "the client going away abandons whatever is in flight",
        arguments: [ConnectionSituation.deciding, .leasing, .awaitingHead, .streaming])
    func clientCloseInFlight(_ situation: ConnectionSituation) {
        var driver = situation.driver()
        #expect(driver.clientClosed() == .abandon)
        #expect(driver.state == "closed")
    }

    @Test("the client going away from an idle or closed connection needs nothing")
    func clientCloseIdle() {
        var idle = ConnectionDriver()
        #expect(idle.clientClosed() == .none)
        #expect(idle.state == "closed")
        #expect(idle.clientClosed() == .none)
    }

    @Test("after an abandoned lease, the connection that arrives is returned unused")
    func leaseAfterAbandon() {
        var driver = ConnectionSituation.leasing.driver()
        #expect(driver.machine.awaitsLease)
        driver.clientClosed()
        #expect(!driver.machine.awaitsLease)
        #expect(driver.leased() == .none)
        var deciding = ConnectionSituation.deciding.driver()
        deciding.clientClosed()
        #expect(deciding.forward() == .none)
    }

    // MARK: Closed is final

    @Test("every event in closed is ignored")
    func closedIgnoresEverything() {
        var driver = ConnectionSituation.closed.driver()
        #expect(driver.head() == .none)
        #expect(driver.body("x") == .none)
        #expect(driver.end() == .none)
        #expect(driver.forward() == .none)
        #expect(driver.local() == .none)
        #expect(driver.leaseFailed() == .none)
        #expect(driver.responseHead() == .none)
        #expect(driver.responseBody("x") == .none)
        #expect(driver.responseEnd() == .none)
        #expect(driver.upstreamFailed() == .none)
        #expect(driver.upstreamProtocolError() == .none)
        #expect(driver.protocolError() == .none)
        #expect(driver.clientClosed() == .none)
        #expect(driver.timedOut() == .none)
        #expect(driver.clientWritable(true) == .none)
        #expect(driver.upstreamWritable(true) == .none)
        #expect(driver.state == "closed")
    }

    // MARK: Out-of-order upstream events

    @Test("response events in the wrong phase are ignored")
    func responseEventsOutOfPhase() {
        var awaiting = ConnectionDriver()
        awaiting.getAwaitingResponse()
        #expect(awaiting.responseBody("x") == .none)
        #expect(awaiting.responseEnd() == .none)
        #expect(awaiting.state == "forwarding(awaitingHead)")

        var streaming = ConnectionSituation.streaming.driver()
        #expect(streaming.responseHead() == .none)
        #expect(streaming.state == "forwarding(streaming)")

        for situation in [ConnectionSituation.idle, .deciding, .leasing] {
            var driver = situation.driver()
            #expect(driver.responseHead() == .none)
            #expect(driver.responseBody("x") == .none)
            #expect(driver.responseEnd() == .none)
            #expect(driver.state == situation.driver().state)
        }
    }

    @Test("request body events with no request are ignored")
    func bodyWhenIdle() {
        var driver = ConnectionDriver()
        #expect(driver.body("x") == .none)
        #expect(driver.end() == .none)
        #expect(driver.state == "idle")
    }

    // MARK: Tunnels (WebSocket)

    /// A bodiless upgrade request answered 101.
    private func tunnel() -> ConnectionDriver {
        var driver = ConnectionDriver(maxBodyBytes: 4)
        driver.getAwaitingResponse()
        #expect(driver.upgraded() == .writeResponseHead)
        #expect(driver.state == "tunnel")
        return driver
    }

    @Test("a 101 turns a bodiless request into a tunnel: bytes flow both ways, unlimited")
    func tunnelRelaysBothWays() {
        var driver = tunnel()
        #expect(driver.body("client frame over the body limit") == .forwardBody("client frame over the body limit"))
        #expect(driver.responseBody("server frame") == .writeResponseBody("server frame"))
        #expect(driver.end() == .none)
        #expect(driver.machine.timeout == .idle)
        #expect(driver.state == "tunnel")
    }

    @Test("a tunnel ends with either side: the backend's close flushes then closes the client")
    func tunnelEnds() {
        var backendClosed = tunnel()
        #expect(
            backendClosed.responseEnd(upstreamKeepAlive: false, clientMustClose: true)
                == .finishResponse(reuseUpstream: false, closeClient: true))
        #expect(backendClosed.state == "closed")

        var clientClosed = tunnel()
        #expect(clientClosed.clientClosed() == .abandon)

        var failed = tunnel()
        #expect(failed.upstreamFailed() == .failForwarding(nil))

        var idle = tunnel()
        #expect(idle.timedOut() == .failForwarding(nil))
        #expect(idle.state == "closed")
    }

    @Test("backpressure in a tunnel follows each side's writability")
    func tunnelBackpressure() {
        var driver = tunnel()
        #expect(driver.upstreamWritable(false) == .none)
        #expect(!driver.machine.shouldReadFromClient)
        #expect(driver.upstreamWritable(true) == .resumeClientReads)
        #expect(driver.machine.shouldReadFromClient)
        #expect(driver.clientWritable(false) == .none)
        #expect(!driver.machine.shouldReadFromUpstream)
        #expect(driver.clientWritable(true) == .resumeUpstreamReads)
    }

    @Test("a tunnel starts with its backend's writability as the exchange last saw it")
    func tunnelKeepsUpstreamWritability() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse()
        #expect(driver.upstreamWritable(false) == .none)
        #expect(driver.upgraded() == .writeResponseHead)
        #expect(!driver.machine.shouldReadFromClient, "the backend cannot take the client's bytes yet")
        #expect(driver.upstreamWritable(true) == .resumeClientReads)
        #expect(driver.machine.shouldReadFromClient)
    }

    @Test("a 101 is refused for a request with a body or once the response has started")
    func upgradeOnlyForBodilessRequestsAwaitingTheHead() {
        var post = ConnectionDriver()
        post.postAwaitingResponse()
        #expect(post.upgraded() == .failForwarding(.upstreamProtocolError))
        #expect(post.state == "closed")

        var streaming = ConnectionSituation.streaming.driver()
        #expect(streaming.upgraded() == .failForwarding(nil))
    }

    // MARK: Drain and pipelining

    @Test("draining closes an idle connection at once, but not one with part of a request received")
    func quiesceIdle() {
        var idle = ConnectionDriver()
        #expect(ConnectionStep(idle.machine.quiesce(partialRequest: false)) == .closeConnection)
        #expect(idle.state == "closed")
        var partial = ConnectionDriver()
        #expect(ConnectionStep(partial.machine.quiesce(partialRequest: true)) == .none)
        #expect(partial.state == "idle")
        // That request gets its answer, the connection's last.
        partial.head()
        #expect(partial.local() == .writeLocalResponse(close: true))
        #expect(partial.state == "closed")
    }

    @Test("draining lets the request in flight finish, then its response closes the connection")
    func quiesceInFlight() {
        var driver = ConnectionDriver()
        driver.getAwaitingResponse()
        #expect(ConnectionStep(driver.machine.quiesce(partialRequest: false)) == .none)
        #expect(driver.machine.closeRequested)
        #expect(driver.state == "forwarding(awaitingHead)")
        var deciding = ConnectionDriver()
        deciding.head()
        deciding.machine.requestClose()
        #expect(deciding.local() == .writeLocalResponse(close: true))
    }

    @Test("a pipelined request is held (no reads) until the response in flight has ended")
    func pipelinedHold() {
        var driver = ConnectionDriver()
        #expect(driver.machine.mayReadFromClient(holdingPipelinedRequest: false))
        driver.getAwaitingResponse()
        // The GET's end was read; reading more is allowed, unless a pipelined request waits.
        #expect(driver.machine.mayReadFromClient(holdingPipelinedRequest: false))
        #expect(!driver.machine.mayReadFromClient(holdingPipelinedRequest: true))
        var deciding = ConnectionDriver()
        deciding.head()
        #expect(!deciding.machine.mayReadFromClient(holdingPipelinedRequest: false))
    }
}
