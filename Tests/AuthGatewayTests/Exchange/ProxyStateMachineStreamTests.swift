import Testing

@testable import AuthGateway

/// `ProxyStateMachine` driven event by event as an HTTP/2 stream (`HTTP2ServerStream`) drives
/// it: one request per machine, never kept alive, no `Expect: 100-continue`, the body's end in
/// the HEADERS or a DATA frame, the client's writability being the stream's window. The
/// HTTP/1.1 framing's sequences are in `ProxyStateMachineTests`.
@Suite("ProxyStateMachine, as an HTTP/2 stream drives it")
struct ProxyStateMachineStreamTests {
    @Test func aGetWithEndStreamOnItsHeadersIsForwardedAndEnds() {
        var stream = ProxyDriver()
        #expect(stream.head(keepAlive: false, replayable: true, hasBody: false) == .decide)
        // HEADERS with END_STREAM: the stream handler feeds the end at once.
        #expect(stream.end() == .none)
        #expect(stream.forward() == .lease)
        #expect(stream.leased() == .sendRequest(body: [], end: true, sendContinue: false))
        #expect(stream.machine.timeout == .response, "waiting on the backend: its response timeout")
        #expect(stream.responseHead() == .writeResponseHead)
        #expect(stream.responseBody("ok") == .writeResponseBody("ok"))
        #expect(stream.responseEnd(upstreamKeepAlive: true, clientMustClose: false) == .finishResponse(reuseUpstream: true, closeClient: true))
    }

    @Test func anUploadInDataFramesIsForwardedAsItComesAndHeldWhileTheBackendIsFull() {
        var stream = ProxyDriver()
        #expect(stream.head(keepAlive: false, replayable: false, hasBody: true) == .decide)
        // DATA before the decision: buffered, and no window is given back (reads are held).
        #expect(stream.body("a") == .none)
        #expect(!stream.machine.mayReadFromClient(holdingPipelinedRequest: false))
        #expect(stream.forward() == .lease)
        #expect(stream.leased() == .sendRequest(body: ["a"], end: false, sendContinue: false))
        #expect(stream.machine.mayReadFromClient(holdingPipelinedRequest: false), "forwarding: the stream's window is given back")
        #expect(stream.machine.timeout == .idle, "a stalled upload gets idleSeconds")
        #expect(stream.upstreamWritable(false) == .none)
        #expect(!stream.machine.mayReadFromClient(holdingPipelinedRequest: false), "the backend is full: WINDOW_UPDATEs are withheld")
        #expect(stream.body("b") == .forwardBody("b"), "what the window already allowed still goes")
        #expect(stream.upstreamWritable(true) == .resumeClientReads)
        // END_STREAM on the last DATA frame (or on trailers).
        #expect(stream.end() == .forwardEnd)
        #expect(stream.machine.timeout == .response)
    }

    @Test func aResetBeforeTheResponseAbandonsTheBackendRequest() {
        var stream = ProxyDriver()
        stream.getAwaitingResponse(keepAlive: false)
        // RST_STREAM from the client.
        #expect(stream.clientClosed() == .abandon)
        #expect(stream.state == "closed")
        // The backend's late answer finds nothing to do.
        #expect(stream.responseHead() == .none)
    }

    @Test func aStreamWhoseWindowIsExhaustedStopsReadingTheBackend() {
        var stream = ProxyDriver()
        stream.getAwaitingResponse(keepAlive: false)
        #expect(stream.responseHead() == .writeResponseHead)
        #expect(stream.clientWritable(false) == .none, "the stream's backlog passed its high watermark")
        #expect(!stream.machine.shouldReadFromUpstream)
        #expect(stream.clientWritable(true) == .resumeUpstreamReads)
        #expect(stream.machine.shouldReadFromUpstream)
    }

    @Test func aTimeoutBeforeTheHeadIs504AndAfterItAReset() {
        var waiting = ProxyDriver()
        waiting.getAwaitingResponse(keepAlive: false)
        #expect(waiting.timedOut() == .failForwarding(.upstreamTimeout), "answered 504 on the stream")
        var streaming = ProxyDriver()
        streaming.getAwaitingResponse(keepAlive: false)
        streaming.responseHead()
        #expect(streaming.timedOut() == .failForwarding(nil), "the response had started: the stream is reset")
    }
}
