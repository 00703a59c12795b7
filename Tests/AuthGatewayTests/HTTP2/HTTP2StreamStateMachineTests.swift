import NIOCore
import NIOHPACK
import Testing

@testable import AuthGateway

private func buffer(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

/// A short name of the stream's state — its half-closed-ness, its exchange's state, its
/// response half — for comparisons.
func streamStateName(_ machine: HTTP2StreamStateMachine) -> String {
    func response(_ response: HTTP2StreamStateMachine.Response) -> String {
        switch response {
        case .idle: return "idle"
        case .headersHeld: return "headersHeld"
        case .streaming(.some, _): return "streaming(held)"
        case .streaming(.none, _): return "streaming"
        case .ended: return "ended"
        }
    }
    let parts = "\(exchangeStateName(machine.exchange.state)), \(response(machine.response))"
    switch machine.state {
    case .idle: return "idle"
    case .open: return "open(\(parts))"
    case .halfClosedRemote: return "halfClosedRemote(\(parts))"
    case .closed: return "closed"
    }
}

/// `HTTP2StreamStateMachine` driven event by event, without I/O: what `HTTP2ServerStream`
/// feeds it (frames from the client, the backend's events) and the framing it decides — the
/// stream's halves, `content-length`, the frames held so END_STREAM rides on the last one, the
/// upload stopped when the response ends first. The exchange's own sequences are in
/// `ExchangeStateMachineTests`.
@Suite("HTTP2StreamStateMachine")
struct HTTP2StreamStateMachineTests {
    typealias Machine = HTTP2StreamStateMachine

    let headers = HPACKHeaders([(":status", "200")])
    let trailers = HPACKHeaders([("grpc-status", "0")])
    let violation = ContentLengthVerifier.violation

    /// A GET: HEADERS with END_STREAM, decided to be forwarded, its backend leased.
    private func get() -> Machine {
        var stream = Machine(maxBodyBytes: 1000)
        _ = stream.requestHead(replayable: true, hasBody: false, contentLength: nil, isGRPC: false, endStream: true)
        _ = stream.requestEnd()
        _ = stream.decidedToForward()
        _ = stream.leaseSucceeded(reused: false)
        return stream
    }

    /// A POST of `contentLength` bytes whose HEADERS arrived (no DATA yet).
    private func post(contentLength: Int? = 5, maxBodyBytes: Int = 1000) -> Machine {
        var stream = Machine(maxBodyBytes: maxBodyBytes)
        _ = stream.requestHead(
            replayable: false, hasBody: true, contentLength: contentLength, isGRPC: false, endStream: false)
        return stream
    }

    /// A POST forwarded: its backend leased, awaiting the response head, the upload going on.
    private func forwardedPost(contentLength: Int? = 5) -> Machine {
        var stream = self.post(contentLength: contentLength)
        _ = stream.decidedToForward()
        _ = stream.leaseSucceeded(reused: false)
        return stream
    }

    // MARK: Requests and responses

    @Test func aGetIsForwardedAndABodyReadInOneGoIsOneDataFrameThatEndsTheStream() {
        var stream = Machine(maxBodyBytes: 1000)
        #expect(stream.awaitsRequestHead)
        #expect(streamStateName(stream) == "idle")
        #expect(
            stream.requestHead(replayable: true, hasBody: false, contentLength: nil, isGRPC: false, endStream: true)
                == .decide)
        #expect(streamStateName(stream) == "halfClosedRemote(deciding, idle)", "END_STREAM on the HEADERS")
        #expect(!stream.awaitsRequestHead)
        #expect(stream.requestEnd() == .none)
        #expect(stream.decidedToForward() == .exchange(.lease))
        #expect(stream.awaitsLease)
        #expect(stream.leaseSucceeded(reused: false) == .exchange(.sendRequest(body: [], end: true)))
        #expect(stream.timeout == .response)
        #expect(stream.responseHead(self.headers) == .exchange(.writeResponseHead))
        #expect(streamStateName(stream) == "halfClosedRemote(forwarding(streaming), headersHeld)")
        #expect(stream.responseBody(buffer("hello")) == .writeHeld(.headers(self.headers), bodyBytes: 5))
        #expect(
            stream.responseEnd(upstreamReusable: true)
                == .endResponse(last: .data(buffer("hello")), reuseUpstream: true, stopUpload: false))
        #expect(streamStateName(stream) == "halfClosedRemote(done, ended)")
        #expect(stream.timeout == .none)
        #expect(stream.streamClosed() == .none)
        #expect(stream.isClosed)
    }

    @Test func aResponseWithoutBodyEndsOnItsHeaders() {
        var stream = self.get()
        _ = stream.responseHead(self.headers)
        #expect(
            stream.responseEnd(upstreamReusable: false)
                == .endResponse(last: .headers(self.headers), reuseUpstream: false, stopUpload: false))
    }

    @Test func aStreamedBodyGoesOutAtTheEndOfEachBackendReadAndEndsOnAnEmptyFrame() {
        var stream = self.get()
        _ = stream.responseHead(self.headers)
        #expect(stream.upstreamReadComplete() == .writeHeld(.headers(self.headers), bodyBytes: 0))
        #expect(streamStateName(stream) == "halfClosedRemote(forwarding(streaming), streaming)")
        #expect(stream.responseBody(buffer("a")) == .writeHeld(.none, bodyBytes: 1))
        #expect(stream.responseBody(buffer("bc")) == .writeHeld(.data(buffer("a")), bodyBytes: 2))
        #expect(stream.upstreamReadComplete() == .writeHeld(.data(buffer("bc")), bodyBytes: 0))
        #expect(stream.upstreamReadComplete() == .writeHeld(.none, bodyBytes: 0), "nothing more is held")
        #expect(
            stream.responseEnd(upstreamReusable: true)
                == .endResponse(last: .emptyData, reuseUpstream: true, stopUpload: false))
    }

    @Test func trailersFromTheBackendEndTheResponse() {
        var withBody = self.get()
        _ = withBody.responseHead(self.headers)
        _ = withBody.responseBody(buffer("x"))
        withBody.responseTrailers(self.trailers)
        #expect(
            withBody.responseEnd(upstreamReusable: true)
                == .endResponse(
                    last: .trailers(self.trailers, after: .data(buffer("x"))), reuseUpstream: true, stopUpload: false))

        var trailersOnly = self.get()
        _ = trailersOnly.responseHead(self.headers)
        trailersOnly.responseTrailers(self.trailers)
        #expect(
            trailersOnly.responseEnd(upstreamReusable: true)
                == .endResponse(
                    last: .trailers(self.trailers, after: .headers(self.headers)), reuseUpstream: true,
                    stopUpload: false))
    }

    @Test func anUploadIsCheckedThenHandedOnAndItsEndHalfClosesTheStream() {
        var stream = self.post(contentLength: 5)
        #expect(streamStateName(stream) == "open(deciding, idle)")
        #expect(stream.receivedData(length: 3, endStream: false) == .deliver)
        #expect(stream.requestBody(buffer("abc")) == .none, "buffered until an upstream is ready")
        #expect(!stream.shouldReadFromClient)
        #expect(stream.decidedToForward() == .exchange(.lease))
        #expect(stream.leaseSucceeded(reused: false) == .exchange(.sendRequest(body: [buffer("abc")], end: false)))
        #expect(stream.shouldReadFromClient)
        #expect(stream.timeout == .idle, "a stalled upload gets idleSeconds")
        #expect(stream.receivedData(length: 2, endStream: true) == .deliver)
        #expect(stream.requestBody(buffer("de")) == .exchange(.forwardBody(buffer("de"))))
        #expect(stream.requestEnd() == .exchange(.forwardEnd))
        #expect(streamStateName(stream) == "halfClosedRemote(forwarding(awaitingHead), idle)")
        #expect(stream.timeout == .response)
    }

    @Test func theClientsTrailersEndItsUpload() {
        var stream = self.forwardedPost(contentLength: 2)
        #expect(stream.receivedData(length: 2, endStream: false) == .deliver)
        _ = stream.requestBody(buffer("ab"))
        #expect(stream.requestTrailers() == .exchange(.forwardEnd))
        #expect(streamStateName(stream) == "halfClosedRemote(forwarding(awaitingHead), idle)")
    }

    // MARK: content-length

    @Test(
        "DATA that disagrees with content-length is refused before any of it goes on",
        arguments: [(4, false), (2, true)] as [(Int, Bool)])
    func contentLengthRefusedWhileDeciding(length: Int, endStream: Bool) {
        var stream = self.post(contentLength: 5)
        #expect(stream.receivedData(length: 2, endStream: false) == .deliver)
        // The upload is stopped (RST_STREAM NO_ERROR) after the answer: its client still sends.
        #expect(
            stream.receivedData(length: length, endStream: endStream)
                == .refuse(.endExchange(.respondWithError(self.violation), stopUpload: true)))
        #expect(streamStateName(stream) == "halfClosedRemote(done, ended)")
        #expect(stream.receivedData(length: 100, endStream: false) == .deliver, "nothing is expected any more")
        #expect(stream.requestBody(buffer("late")) == .none)
    }

    @Test func contentLengthRefusedOnceForwardedFailsTheExchangeOrResetsTheStream() {
        var awaiting = self.forwardedPost(contentLength: 1)
        #expect(
            awaiting.receivedData(length: 2, endStream: false)
                == .refuse(.endExchange(.failForwarding(self.violation), stopUpload: true)))

        var streaming = self.forwardedPost(contentLength: 1)
        _ = streaming.responseHead(self.headers)
        // The response has started: the stream is reset (which stops the upload too).
        #expect(
            streaming.receivedData(length: 2, endStream: false)
                == .refuse(.endExchange(.failForwarding(nil), stopUpload: false)))
        #expect(streamStateName(streaming) == "open(done, ended)")
    }

    @Test func trailersEndingAShortUploadAreRefused() {
        var stream = self.post(contentLength: 5)
        #expect(stream.receivedData(length: 4, endStream: false) == .deliver)
        _ = stream.requestBody(buffer("abcd"))
        // The client's END_STREAM came with the trailers: nothing to stop.
        #expect(stream.requestTrailers() == .endExchange(.respondWithError(self.violation), stopUpload: false))
        #expect(streamStateName(stream) == "halfClosedRemote(done, ended)")
    }

    @Test func withoutContentLengthAnyAmountOfDataIsHandedOn() {
        var stream = self.post(contentLength: nil)
        #expect(stream.receivedData(length: 900, endStream: false) == .deliver)
        #expect(stream.receivedData(length: 0, endStream: true) == .deliver)
    }

    // MARK: The response's end, and the gateway's own answers, stop an upload

    @Test func aResponseThatEndsBeforeTheUploadStopsIt() {
        var stream = self.forwardedPost()
        _ = stream.responseHead(self.headers)
        _ = stream.responseBody(buffer("early"))
        #expect(
            stream.responseEnd(upstreamReusable: true)
                == .endResponse(last: .data(buffer("early")), reuseUpstream: nil, stopUpload: true))
        #expect(streamStateName(stream) == "halfClosedRemote(forwarding(complete), ended)")
        // RST_STREAM NO_ERROR closes the stream: the exchange still going is abandoned.
        #expect(stream.streamClosed() == .endExchange(.abandon, stopUpload: false))
        #expect(streamStateName(stream) == "closed")
    }

    @Test func aLocalAnswerStopsAnUploadStillUnderWayOnly() {
        var uploading = self.post()
        #expect(uploading.decidedToRespondLocally() == .endExchange(.writeLocalResponse, stopUpload: true))
        #expect(streamStateName(uploading) == "halfClosedRemote(done, ended)")

        var complete = self.post()
        _ = complete.receivedData(length: 5, endStream: true)
        _ = complete.requestBody(buffer("abcde"))
        _ = complete.requestEnd()
        #expect(complete.decidedToRespondLocally() == .endExchange(.writeLocalResponse, stopUpload: false))
    }

    @Test(arguments: [false, true])
    func aMalformedHeadIsAnsweredNeverPlanned(endStream: Bool) {
        var stream = Machine(maxBodyBytes: 1000)
        let error = GatewayError.malformedRequest("bad")
        #expect(
            stream.requestHeadRefused(error, isGRPC: true, endStream: endStream)
                == .endExchange(.respondWithError(error), stopUpload: !endStream))
        #expect(stream.isGRPC)
        #expect(streamStateName(stream) == "halfClosedRemote(done, ended)")
        #expect(stream.requestEnd() == .none)
        #expect(stream.timeout == .none)
    }

    @Test func aFailureAfterTheResponseStartedResetsTheStream() {
        var stream = self.forwardedPost()
        _ = stream.responseHead(self.headers)
        #expect(stream.upstreamFailed() == .endExchange(.failForwarding(nil), stopUpload: false))
        #expect(streamStateName(stream) == "open(done, ended)")
    }

    @Test func aStalledUploadTimesOutWithItsOwnAnswer() {
        var stream = self.forwardedPost()
        #expect(stream.timeout == .idle)
        #expect(stream.timedOut() == .endExchange(.failForwarding(.requestTimeout), stopUpload: true))
    }

    // MARK: The stream's life

    @Test func aClientResetAbandonsTheExchangeAndAClosedStreamDoesNothingMore() {
        var stream = self.get()
        #expect(stream.clientClosed() == .endExchange(.abandon, stopUpload: false))
        #expect(stream.streamClosed() == .none)
        #expect(stream.isClosed)
        #expect(stream.timeout == .none)
        #expect(!stream.awaitsLease)
        #expect(!stream.shouldReadFromClient)
        #expect(stream.responseHead(self.headers) == .none)
        #expect(stream.responseBody(buffer("x")) == .none)
        #expect(stream.upstreamReadComplete() == .none)
        #expect(stream.leaseSucceeded(reused: false) == .none)
        #expect(stream.receivedData(length: 1, endStream: false) == .deliver)
        #expect(stream.streamClosed() == .none)
        #expect(streamStateName(stream) == "closed")
    }

    @Test func aStreamClosedWhileForwardingAbandonsItsExchange() {
        var stream = self.get()
        #expect(stream.streamClosed() == .endExchange(.abandon, stopUpload: false))
        #expect(stream.isClosed)
    }

    @Test func beforeItsHeadAStreamTakesNoEvents() {
        var stream = Machine(maxBodyBytes: 1000)
        #expect(stream.requestBody(buffer("x")) == .none)
        #expect(stream.requestEnd() == .none)
        #expect(stream.requestTrailers() == .none)
        #expect(stream.decidedToForward() == .none)
        #expect(stream.upstreamReadComplete() == .none)
        #expect(stream.timeout == .none)
        #expect(streamStateName(stream) == "idle")
    }

    @Test func aSecondHeadIsNoRequest() {
        var stream = self.post()
        #expect(
            stream.requestHead(replayable: true, hasBody: false, contentLength: nil, isGRPC: false, endStream: true)
                == .none)
        #expect(streamStateName(stream) == "open(deciding, idle)")
    }

    @Test func theClientsWritabilityIsReportedOnlyWhenItChanges() {
        var stream = self.get()
        _ = stream.responseHead(self.headers)
        #expect(stream.clientWritabilityChanged(true) == .none)
        #expect(stream.clientWritabilityChanged(false) == .none)
        #expect(!stream.shouldReadFromUpstream)
        #expect(stream.clientWritabilityChanged(false) == .none)
        #expect(stream.clientWritabilityChanged(true) == .exchange(.resumeUpstreamReads))
        #expect(stream.shouldReadFromUpstream)
        #expect(stream.clientWritabilityChanged(true) == .none, "once")
    }
}
