import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One HTTP/2 stream of a client connection: one request, fed through the same phases as an
/// HTTP/1.1 request — `RequestPlanner` (route, authenticate, refresh, profile, requirements,
/// rewrite), the loop's `UpstreamPool` lease, `ProxyStateMachine` for the request's life and
/// `Exchange.finish` for metrics and the access log. Only the framing differs: frames in and
/// out instead of bytes (HPACK and flow control are NIOHTTP2's).
///
/// Lives in the stream's child channel; everything happens on the connection's event loop.
/// Backpressure both ways by HTTP/2 flow control: reads from the stream are withheld while the
/// backend cannot take more (no WINDOW_UPDATE goes out), and upstream reads are withheld while
/// the stream's send window is exhausted (the child channel is then not writable).
final class HTTP2StreamHandler: ChannelDuplexHandler, ExchangeHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    let worker: Worker
    let connection: ClientConnectionInfo
    /// A stream carries exactly one request: "keep-alive" is off, "closing the client" closes
    /// the stream channel (RST_STREAM when it has not ended).
    var state: ProxyStateMachine
    var deadlines = ConnectionDeadlines()
    var context: ChannelHandlerContext?
    var exchange: Exchange?
    var upstream: UpstreamLease?
    var leasingPool: UpstreamPool?
    var pendingRead = false
    var timer: Scheduled<Void>?
    /// The request is gRPC: the gateway's own answers are Trailers-Only.
    var isGRPC = false
    /// `grpc-timeout`, when it is shorter than the backend's response timeout.
    var grpcTimeout: TimeAmount?
    /// The response HEADERS, held until the first DATA or the end (which then carries
    /// END_STREAM on the HEADERS frame itself).
    var responseHeaders: HPACKHeaders?
    /// Trailers from an HTTP/2 backend, sent with the end of the response.
    var responseTrailers: HPACKHeaders?
    var requestHeadSeen = false
    /// The client's request trailers, for an HTTP/2 backend.
    var requestTrailers: HPACKHeaders?
    /// The client's END_STREAM arrived (or the stream was refused before it did).
    var requestEnded = false
    /// The request's `content-length`: the DATA must add up to it exactly, or the stream is
    /// refused before an HTTP/1.1 backend could read the excess as another request (NIOHTTP2
    /// checks this too; this keeps the guarantee local).
    var declaredLength: Int?
    var receivedLength = 0

    init(worker: Worker, connection: ClientConnectionInfo) {
        self.worker = worker
        self.connection = connection
        self.state = ProxyStateMachine(maxBodyBytes: worker.snapshot.configuration.limits.maxRequestBodyBytes)
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .headers(let headers):
            if !self.requestHeadSeen {
                self.requestHeadSeen = true
                if headers.endStream { self.requestEnded = true }
                self.receivedHead(headers.headers, endStream: headers.endStream, context: context)
                // A request without body ends with its HEADERS.
                if headers.endStream { self.run(self.state.requestEnd(), context: context) }
            } else if headers.endStream {
                // Request trailers: passed on to an HTTP/2 backend (SPEC §4.9); HTTP/1.1
                // backends get none. The body ends here, and must add up to content-length.
                self.requestEnded = true
                if let declared = self.declaredLength, self.receivedLength != declared {
                    self.run(self.state.protocolError(.malformedRequest("The DATA disagrees with content-length")), context: context)
                    return
                }
                if !headers.headers.isEmpty { self.requestTrailers = headers.headers }
                self.run(self.state.requestEnd(), context: context)
            }
        case .data(let data):
            guard case .byteBuffer(let bytes) = data.data else { return }
            self.receivedLength += bytes.readableBytes
            if let declared = self.declaredLength, self.receivedLength > declared || (data.endStream && self.receivedLength != declared) {
                self.run(self.state.protocolError(.malformedRequest("The DATA disagrees with content-length")), context: context)
                return
            }
            if bytes.readableBytes > 0 {
                self.exchange?.bytesIn += bytes.readableBytes
                self.run(self.state.requestBody(bytes), context: context)
            }
            if data.endStream {
                self.requestEnded = true
                self.run(self.state.requestEnd(), context: context)
            }
        case .rstStream:
            self.run(self.state.clientClosed(), context: context)
        default:
            break
        }
        self.updateTimer(context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.upstream?.flush()
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = nil
        self.deadlines.close()
        self.run(self.state.clientClosed(), context: context)
        self.context = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A stream error (NIOHTTP2 reset the stream): nothing more can happen on it.
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.run(self.state.clientWritabilityChanged(context.channel.isWritable), context: context)
        context.fireChannelWritabilityChanged()
    }

    /// Backpressure towards the client: no read, no WINDOW_UPDATE.
    func read(context: ChannelHandlerContext) {
        if self.state.mayReadFromClient(holdingPipelinedRequest: false) {
            context.read()
        } else {
            self.pendingRead = true
        }
    }

    // MARK: Running actions

    func run(_ action: ProxyStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none, .writeResponseHead, .returnUnusedConnection:
            // The head is held in `responseHeaders`; an unused lease is handed back where it
            // arrives (`leaseSucceeded`).
            break
        case .decide:
            assertionFailure("decide outside receivedHead")
        case .lease:
            self.lease(context: context)
        case .sendRequest(let body, let end, _):
            // `Expect: 100-continue` is an HTTP/1.1 matter: an HTTP/2 client sends its body.
            self.sendRequest(body: body, end: end, context: context)
        case .forwardBody(let part):
            self.upstream?.sendBody(part)
        case .forwardEnd:
            if let upstream = self.upstream, self.endUpstreamRequest(upstream) { upstream.flush() }
        case .writeResponseBody(let part):
            self.exchange?.bytesOut += part.readableBytes
            self.writeHeldHeaders(endStream: false, context: context)
            context.write(self.wrapOutboundOut(.data(.init(data: .byteBuffer(part)))), promise: nil)
        case .finishResponse(let reuseUpstream, _):
            self.releaseUpstream(reusable: reuseUpstream)
            self.endResponse(context: context)
        case .finishResponseOnly:
            self.endResponse(context: context)
        case .forwardEndAndRelease(let reuseUpstream, _):
            if let upstream = self.upstream {
                self.endUpstreamRequest(upstream)
                upstream.flush()
            }
            self.releaseUpstream(reusable: reuseUpstream)
        case .writeLocalResponse:
            self.writeLocalResponse(context: context)
        case .respondWithError(let error, _):
            self.cancelLease()
            self.respond(with: error, context: context)
        case .failForwarding(let error):
            self.cancelLease()
            // A timeout counts against the backend's URL (outlier detection, SPEC §4.11).
            if error == GatewayError.upstreamTimeout { self.upstream?.timedOut() } else { self.upstream?.close() }
            self.upstream = nil
            if let error {
                self.countUpstreamError(error)
                self.respond(with: error, context: context)
            } else {
                // The response had started: the stream is reset.
                self.finishExchange(status: self.exchange?.responseStatus ?? 502, error: nil)
                context.close(promise: nil)
            }
        case .retry:
            self.upstream?.close()
            self.upstream = nil
            self.lease(context: context)
        case .abandon:
            self.cancelLease()
            self.upstream?.close()
            self.upstream = nil
            self.finishExchange(status: 499, error: nil)
            context.close(promise: nil)
        case .closeConnection:
            context.close(promise: nil)
        case .resumeClientReads:
            if self.pendingRead {
                self.pendingRead = false
                context.read()
            }
        case .resumeUpstreamReads:
            self.upstream?.resumeReading()
        }
    }
}

@available(*, unavailable)
extension HTTP2StreamHandler: Sendable {}
