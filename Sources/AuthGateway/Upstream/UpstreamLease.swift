import NIOCore
import NIOHPACK
import NIOHTTP1

/// Waits for an upstream from an `UpstreamPool`.
protocol UpstreamLeaseRequester: AnyObject {
    func leaseSucceeded(_ lease: UpstreamLease, reused: Bool)
    func leaseFailed(_ error: GatewayError)
}

/// One leased exchange with an upstream: a pooled HTTP/1.1 connection
/// (`UpstreamConnection`) or a stream of a pooled HTTP/2 connection (`UpstreamStream`). The
/// request goes out with `sendHead` / `sendBody` / `sendEnd`; what comes back reaches the
/// `delegate`. Used only on its event loop.
protocol UpstreamLease: AnyObject {
    /// The lease holder, nil while pooled.
    var delegate: UpstreamConnectionDelegate? { get set }
    /// Fit for another exchange once this one completes (HTTP/1.1: keep-alive agreed, the
    /// response framed as it said).
    var reusable: Bool { get }
    /// Writes a request head; its body follows with `sendBody` (chunk-framed on HTTP/1.1 when
    /// `chunkedBody`) and ends with `sendEnd`. `upgrade`: the request asks for a protocol
    /// upgrade, so a 101 may answer it. `secrets`: the fields an HTTP/2 upstream encodes
    /// never-indexed (HTTP/1.1 has no such encoding).
    func sendHead(_ head: UpstreamRequestHead, chunkedBody: Bool, upgrade: Bool, secrets: RequestSecrets)
    func sendBody(_ part: ByteBuffer)
    /// Ends the request body, with the client's `trailers` on an HTTP/2 upstream (an HTTP/1.1
    /// one gets the body without them); true when that wrote bytes (a flush is then needed).
    @discardableResult
    func sendEnd(trailers: HPACKHeaders?) -> Bool
    func flush()
    /// Gives the exchange up: the connection is closed (HTTP/1.1) or the stream reset (HTTP/2).
    func close()
    /// Gives the exchange up because the backend did not answer in time: as `close`, and the
    /// timeout counts against the URL (outlier detection, docs/forwarding.md).
    func timedOut()
    /// Backpressure: the delegate can take more again.
    func resumeReading()
    /// The exchange completed: back to the pool when `reusable`, else closed.
    func release(reusable: Bool)
    /// Leased but never used (its requester had gone): back to the pool as it was.
    func returnUnused(reused: Bool)
}

extension UpstreamLease {
    func sendHead(_ head: UpstreamRequestHead, chunkedBody: Bool, upgrade: Bool) {
        self.sendHead(head, chunkedBody: chunkedBody, upgrade: upgrade, secrets: RequestSecrets())
    }

    @discardableResult
    func sendEnd() -> Bool {
        self.sendEnd(trailers: nil)
    }
}

/// Which fields of a request an HTTP/2 upstream encodes never-indexed: the secret names, and
/// those the client itself sent never-indexed.
struct RequestSecrets {
    var names = SecretHeaderNames()
    var peerNeverIndexed: [String] = []
}

/// How an exchange with an upstream URL went, as outlier detection counts it (docs/forwarding.md).
enum UpstreamOutcome: Equatable {
    /// A final response head arrived with this status (502/503/504 are failures).
    case responded(Int)
    /// The connection or stream died under the exchange.
    case reset
    /// The backend did not answer within its response timeout.
    case timedOut
}

/// Receives what a leased upstream delivers. Implemented by `HTTP1ServerConnection` and
/// `HTTP2ServerStream` for forwarded requests and by `UpstreamClient` for the gateway's own
/// calls (auth service, JWKS).
protocol UpstreamConnectionDelegate: AnyObject {
    func upstreamResponseHead(_ head: UpstreamResponseHead)
    func upstreamResponseBody(_ body: ByteBuffer)
    /// Trailers of an HTTP/2 backend's response, just before its end.
    func upstreamResponseTrailers(_ trailers: HPACKHeaders)
    func upstreamResponseEnd()
    /// A read burst ended: the moment to flush what was written to the other side.
    func upstreamReadComplete()
    /// The connection closed or failed while leased. `protocolError` tells an invalid
    /// response (502) from a dead connection.
    func upstreamClosed(protocolError: Bool)
    func upstreamWritabilityChanged(_ writable: Bool)
    /// Backpressure: false while the receiving side cannot take more.
    var shouldReadFromUpstream: Bool { get }
}

extension UpstreamConnectionDelegate {
    /// Only HTTP/2 clients can be given trailers; the others drop them.
    func upstreamResponseTrailers(_ trailers: HPACKHeaders) {}
}
