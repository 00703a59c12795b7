import NIOCore
import Testing

@testable import AuthGateway

private func buffer(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

/// `ExchangeStateMachine` driven event by event, as an HTTP/2 stream drives it (through
/// `HTTP2StreamStateMachine`): one request per machine, no keep-alive, no `Expect: 100-continue`,
/// the body's end on the HEADERS or on a DATA frame, the client's writability being the
/// stream's window. The framings' own sequences are in `HTTP1ConnectionStateMachineTests` and
/// `HTTP2StreamStateMachineTests`.
@Suite("ExchangeStateMachine")
struct ExchangeStateMachineTests {
    typealias Machine = ExchangeStateMachine

    private func get(maxBodyBytes: Int = 1000) -> Machine {
        Machine(replayable: true, hasBody: false, maxBodyBytes: maxBodyBytes)
    }

    private func post(maxBodyBytes: Int = 1000) -> Machine {
        Machine(replayable: false, hasBody: true, maxBodyBytes: maxBodyBytes)
    }

    /// A bodiless request forwarded up to awaiting the backend's head.
    private func awaitingHead(reused: Bool = false) -> Machine {
        var machine = self.get()
        _ = machine.requestEnd()
        _ = machine.decidedToForward()
        _ = machine.leaseSucceeded(reused: reused)
        return machine
    }

    @Test func aGetWithEndStreamOnItsHeadersIsForwardedAndEnds() {
        var stream = self.get()
        #expect(exchangeStateName(stream.state) == "deciding")
        #expect(stream.timeout == .none, "deciding is bounded by the auth service's own timeout")
        // HEADERS with END_STREAM: the stream handler feeds the end at once.
        #expect(stream.requestEnd() == .none)
        #expect(stream.decidedToForward() == .lease)
        #expect(stream.awaitsLease)
        #expect(stream.leaseSucceeded(reused: false) == .sendRequest(body: [], end: true))
        #expect(stream.timeout == .response, "waiting on the backend: its response timeout")
        #expect(stream.responseHead() == .writeResponseHead)
        #expect(stream.responseBody(buffer("ok")) == .writeResponseBody(buffer("ok")))
        #expect(stream.responseEnd(upstreamReusable: true) == .finishResponse(reuseUpstream: true))
        #expect(stream.isDone)
        #expect(stream.timeout == .none)
    }

    @Test func anUploadInDataFramesIsForwardedAsItComesAndHeldWhileTheBackendIsFull() {
        var stream = self.post()
        // DATA before the decision: buffered, and no window is given back (reads are held).
        #expect(stream.requestBody(buffer("a")) == .none)
        #expect(!stream.shouldReadFromClient)
        #expect(stream.decidedToForward() == .lease)
        #expect(stream.requestBody(buffer("b")) == .none)
        #expect(stream.leaseSucceeded(reused: false) == .sendRequest(body: [buffer("a"), buffer("b")], end: false))
        #expect(stream.shouldReadFromClient, "forwarding: the stream's window is given back")
        #expect(stream.timeout == .idle, "a stalled upload gets idleSeconds")
        #expect(stream.upstreamWritabilityChanged(false) == .none)
        #expect(!stream.shouldReadFromClient, "the backend is full: WINDOW_UPDATEs are withheld")
        #expect(
            stream.requestBody(buffer("c")) == .forwardBody(buffer("c")), "what the window already allowed still goes")
        #expect(stream.upstreamWritabilityChanged(true) == .resumeClientReads)
        // END_STREAM on the last DATA frame (or on trailers).
        #expect(stream.requestEnd() == .forwardEnd)
        #expect(stream.timeout == .response)
        #expect(stream.upstreamWritabilityChanged(true) == .none, "nothing left to resume")
    }

    @Test func aResponseThatEndsBeforeTheUploadEndsTheClientsResponseThenReleasesTheUpstream() {
        var stream = self.post()
        _ = stream.decidedToForward()
        _ = stream.leaseSucceeded(reused: false)
        _ = stream.responseHead()
        #expect(stream.responseEnd(upstreamReusable: true) == .finishResponseOnly)
        #expect(exchangeStateName(stream.state) == "forwarding(complete)")
        #expect(stream.timeout == .idle, "only the client's upload is left")
        #expect(stream.requestBody(buffer("rest")) == .forwardBody(buffer("rest")))
        #expect(stream.requestEnd() == .forwardEndAndRelease(reuseUpstream: true))
        #expect(stream.isDone)
    }

    @Test func aResetBeforeTheResponseAbandonsTheBackendRequest() {
        var stream = self.awaitingHead()
        // RST_STREAM from the client.
        #expect(stream.clientClosed() == .abandon)
        #expect(stream.isDone)
        // The backend's late answer finds nothing to do.
        #expect(stream.responseHead() == .none)
        #expect(stream.clientClosed() == .none)
    }

    @Test func aLeaseThatArrivesAfterTheClientLeftIsNotUsed() {
        var stream = self.get()
        _ = stream.decidedToForward()
        #expect(stream.awaitsLease)
        #expect(stream.clientClosed() == .abandon)
        #expect(!stream.awaitsLease, "the handler returns the lease unused")
        #expect(stream.leaseSucceeded(reused: true) == .none)
    }

    @Test func aStreamWhoseWindowIsExhaustedStopsReadingTheBackend() {
        var stream = self.awaitingHead()
        #expect(stream.responseHead() == .writeResponseHead)
        #expect(stream.clientWritabilityChanged(false) == .none, "the stream's backlog passed its high watermark")
        #expect(!stream.shouldReadFromUpstream)
        #expect(stream.clientWritabilityChanged(true) == .resumeUpstreamReads)
        #expect(stream.shouldReadFromUpstream)
    }

    @Test func aTimeoutBeforeTheHeadIs504AndAfterItAReset() {
        var waiting = self.awaitingHead()
        #expect(waiting.timedOut() == .failForwarding(.upstreamTimeout), "answered 504 on the stream")
        var uploading = self.post()
        _ = uploading.decidedToForward()
        _ = uploading.leaseSucceeded(reused: false)
        #expect(uploading.timedOut() == .failForwarding(.requestTimeout), "the client stopped sending its body: 408")
        var streaming = self.awaitingHead()
        _ = streaming.responseHead()
        #expect(streaming.timedOut() == .failForwarding(nil), "the response had started: the stream is reset")
        var deciding = self.get()
        #expect(deciding.timedOut() == .none, "no timeout applies while deciding")
    }

    @Test func aReplayableRequestOnAReusedUpstreamIsRetriedOnceThen502() {
        var reused = self.awaitingHead(reused: true)
        #expect(reused.upstreamFailed() == .retry)
        #expect(reused.awaitsLease)
        #expect(reused.leaseSucceeded(reused: true) == .sendRequest(body: [], end: true))
        #expect(reused.upstreamFailed() == .failForwarding(.upstreamUnreachable), "one retry only")
        var fresh = self.awaitingHead(reused: false)
        #expect(
            fresh.upstreamFailed() == .failForwarding(.upstreamUnreachable),
            "a fresh connection's failure is the backend's")
        var post = self.post()
        _ = post.requestEnd()
        _ = post.decidedToForward()
        _ = post.leaseSucceeded(reused: true)
        #expect(
            post.upstreamFailed() == .failForwarding(.upstreamUnreachable), "a request with a body is never replayed")
    }

    @Test func protocolErrorsAreAnsweredBeforeForwardingAndCutTheResponseAfter() {
        var deciding = self.get()
        #expect(deciding.protocolError(.malformedRequest("x")) == .respondWithError(.malformedRequest("x")))
        var awaiting = self.awaitingHead()
        #expect(awaiting.protocolError(.malformedRequest("x")) == .failForwarding(.malformedRequest("x")))
        var streaming = self.awaitingHead()
        _ = streaming.responseHead()
        #expect(streaming.protocolError(.malformedRequest("x")) == .failForwarding(nil))
        #expect(streaming.protocolError(.malformedRequest("x")) == .none, "done is final")
        var badBackend = self.awaitingHead()
        #expect(badBackend.upstreamProtocolError() == .failForwarding(.upstreamProtocolError))
    }

    @Test func theBodyLimitCountsTheWholeBody() {
        var early = self.post(maxBodyBytes: 4)
        #expect(early.requestBody(buffer("1234")) == .none)
        #expect(early.requestBody(buffer("5")) == .respondWithError(.bodyTooLarge))
        var forwarded = self.post(maxBodyBytes: 4)
        _ = forwarded.requestBody(buffer("12"))
        _ = forwarded.decidedToForward()
        _ = forwarded.leaseSucceeded(reused: false)
        #expect(forwarded.requestBody(buffer("34")) == .forwardBody(buffer("34")))
        #expect(forwarded.requestBody(buffer("5")) == .failForwarding(.bodyTooLarge))
    }

    @Test func aLocalAnswerOrAFailedLeaseEndsTheExchange() {
        var local = self.post()
        _ = local.requestBody(buffer("x"))
        #expect(local.hasUnreadBody, "the HTTP/1.1 side closes the connection after such an answer")
        #expect(local.decidedToRespondLocally() == .writeLocalResponse)
        #expect(local.isDone)
        var failed = self.get()
        _ = failed.decidedToForward()
        #expect(failed.leaseFailed(.upstreamUnreachable) == .respondWithError(.upstreamUnreachable))
        #expect(failed.isDone)
    }

    @Test func onlyABodilessRequestAwaitingItsHeadMayBeUpgraded() {
        #expect(self.awaitingHead().mayUpgrade)
        var post = self.post()
        _ = post.requestEnd()
        _ = post.decidedToForward()
        _ = post.leaseSucceeded(reused: false)
        #expect(!post.mayUpgrade)
        var streaming = self.awaitingHead()
        _ = streaming.responseHead()
        #expect(!streaming.mayUpgrade)
    }
}
