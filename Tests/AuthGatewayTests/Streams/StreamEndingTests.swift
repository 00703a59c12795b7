import NIOCore
import NIOHPACK
import Testing

@testable import AuthGateway

/// How each framing's state machine ends a long-lived stream whose credential ran out or was
/// revoked (docs/streams.md), event by event without I/O.
@Suite("Ending streams: the state machines")
struct StreamEndingTests {
    let head = HPACKHeaders([(":status", "200"), ("content-type", "application/grpc")])

    /// A call (gRPC or not) forwarded, with the client still sending (bidirectional).
    private func call(grpc: Bool, endStream: Bool = false) -> HTTP2StreamStateMachine {
        var stream = HTTP2StreamStateMachine(maxBodyBytes: 1 << 20)
        _ = stream.requestHead(
            replayable: false, hasBody: !endStream, contentLength: nil, isGRPC: grpc, endStream: endStream)
        _ = stream.decidedToForward()
        _ = stream.leaseSucceeded(reused: false)
        return stream
    }

    @Test("a gRPC call whose response streams ends with the held frame, then grpc-status 16, then the upload stopped")
    func grpcStreaming() {
        var stream = self.call(grpc: true)
        _ = stream.responseHead(self.head)
        _ = stream.responseBody(ByteBuffer(string: "m1"))
        #expect(
            stream.credentialEnded()
                == .endCall(held: .data(ByteBuffer(string: "m1")), trailersOnly: false, stopUpload: true))
        #expect(stream.exchange.isDone)
        #expect(stream.state == .halfClosedRemote)
        #expect(stream.credentialEnded() == .none, "ended once")
    }

    @Test("a gRPC call with its head still held sends the head first; one without a head is Trailers-Only")
    func grpcHeadHeld() {
        var held = self.call(grpc: true, endStream: true)
        _ = held.responseHead(self.head)
        #expect(held.credentialEnded() == .endCall(held: .headers(self.head), trailersOnly: false, stopUpload: false))
        var none = self.call(grpc: true, endStream: true)
        #expect(none.credentialEnded() == .endCall(held: .none, trailersOnly: true, stopUpload: false))
    }

    @Test("any other HTTP/2 stream is reset: the exchange fails without an answer")
    func otherStream() {
        var stream = self.call(grpc: false, endStream: true)
        _ = stream.responseHead(HPACKHeaders([(":status", "200")]))
        _ = stream.upstreamReadComplete()
        #expect(stream.credentialEnded() == .endExchange(.failForwarding(nil), stopUpload: false))
    }

    @Test("a closed stream has nothing to end")
    func closedStream() {
        var stream = self.call(grpc: true)
        _ = stream.streamClosed()
        #expect(stream.credentialEnded() == .none)
    }

    @Test("HTTP/1.1: a tunnel ends by close frames, then both connections; a streamed response is cut")
    func http1() {
        var tunnel = HTTP1ConnectionStateMachine(maxBodyBytes: 1000)
        _ = tunnel.requestHead(keepAlive: true, expectsContinue: false, replayable: true, hasBody: false)
        _ = tunnel.requestEnd()
        _ = tunnel.decidedToForward()
        _ = tunnel.leaseSucceeded(reused: false)
        _ = tunnel.upgraded()
        #expect(tunnel.credentialEnded() == .closeTunnel)
        #expect(tunnel.isTunnel, "the tunnel stays until its close frames are out")
        #expect(tunnel.tunnelClosed() == .exchange(.failForwarding(nil)))
        #expect(tunnel.isClosed)

        var response = HTTP1ConnectionStateMachine(maxBodyBytes: 1000)
        _ = response.requestHead(keepAlive: true, expectsContinue: false, replayable: true, hasBody: false)
        _ = response.requestEnd()
        _ = response.decidedToForward()
        _ = response.leaseSucceeded(reused: false)
        _ = response.responseHead()
        #expect(response.credentialEnded() == .exchange(.failForwarding(nil)))
        #expect(response.isClosed)
    }
}
