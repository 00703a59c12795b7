import NIOCore
import NIOHTTP2

/// An HTTP/2 client connection, at the frame level: NIOHTTP2Handler (no stream multiplexer)
/// keeps the protocol state machine, HPACK, header validation and its DoS protections, and
/// hands every frame and stream event to this one handler. It keeps the gateway's own stream
/// table (`HTTP2ServerStream`, one request each) instead of a child channel and pipeline per
/// stream, and does for all of them what each stream channel would do on its own:
///
/// - flow control: WINDOW_UPDATEs as request bodies are consumed, withheld for backpressure
///   (`InboundWindow`); each stream's response backlog watched (`OutboundBacklog`, fed by
///   NIOHTTP2's frame delegate);
/// - one deadline timer for the connection, armed for the earliest deadline of its streams
///   and of the connection itself: with no stream open for `idleSeconds` it is closed with
///   GOAWAY (`StreamDeadlines`; a timer per stream, or the connection manager's idle timer
///   rescheduled each time the last stream closes, cost an allocation and a heap operation per
///   request);
/// - one flush per read burst, and one per event-loop tick for what the backends answer
///   between bursts (each stream ending its response would otherwise cost a `write(2)`);
///   upstream writes made during a read burst are flushed once at its end.
///
/// Everything happens on the connection's event loop.
final class HTTP2ServerConnection: ChannelDuplexHandler, NIOHTTP2FrameDelegate {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// The windows the gateway advertises (RFC 9113's default initial window size).
    static let windowSize = 65_535

    let environment: any ExchangeEnvironment
    let connection: ClientConnectionInfo
    /// Told of each stream the gateway opens and closes (the connection manager, for its
    /// graceful GOAWAY on drain), instead of NIOHTTP2's raw stream events — those also close
    /// streams refused before they were ever open (a malformed HEADERS).
    private let streamDelegate: NIOHTTP2StreamDelegate?
    private(set) var context: ChannelHandlerContext?
    private var streams: [HTTP2StreamID: HTTP2ServerStream] = [:]
    /// The highest stream the client opened (for the GOAWAY of an idle close).
    private var lastStreamID = HTTP2StreamID.rootStream
    /// When the connection is closed for want of streams; nil while one is open.
    private var idleDeadline: NIODeadline?
    private var deadlines = StreamDeadlines()
    private var timer: Scheduled<Void>?
    private var inReadBurst = false
    private var flushPending = false
    private var flushScheduled = false
    /// The connection's receive window as NIOHTTP2 last reported it in this read burst.
    private var connectionWindow: Int?
    /// Streams that wrote to their backend during the read burst.
    private var upstreamsToFlush: [HTTP2ServerStream] = []
    /// The other list, swapped in at each read burst's end (`channelReadComplete`).
    private var spareUpstreamsToFlush: [HTTP2ServerStream] = []
    /// Response field texts seen lately on this connection (`FieldTextCache`).
    var fieldTexts = FieldTextCache()
    private(set) var isWritable = true

    init(
        environment: any ExchangeEnvironment, connection: ClientConnectionInfo, streamDelegate: NIOHTTP2StreamDelegate?
    ) {
        self.environment = environment
        self.connection = connection
        self.streamDelegate = streamDelegate
    }

    /// The streams open now (for tests).
    var openStreamCount: Int { self.streams.count }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.scheduledFlush = { self.runScheduledFlush() }
        self.isWritable = context.channel.isWritable
        self.becameIdle()
    }

    func channelActive(context: ChannelHandlerContext) {
        if self.streams.isEmpty { self.becameIdle() }
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        // The flush task's hold on the connection ends here (a task already queued runs, finds
        // no context and does nothing).
        self.scheduledFlush = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        // Stream 0 (SETTINGS, PING, GOAWAY, WINDOW_UPDATE): NIOHTTP2 acted on it; the
        // connection manager watches PING acknowledgements.
        guard frame.streamID != .rootStream else {
            context.fireChannelRead(data)
            return
        }
        self.inReadBurst = true
        if let stream = self.streams[frame.streamID] {
            stream.received(frame.payload, context: context)
        } else if case .headers = frame.payload {
            // NIOHTTP2 lets a HEADERS frame through only for a new stream it accepted.
            let stream = HTTP2ServerStream(
                id: frame.streamID, server: self, environment: self.environment, connection: self.connection,
                windowSize: Self.windowSize)
            self.streams[frame.streamID] = stream
            self.lastStreamID = max(self.lastStreamID, frame.streamID)
            self.idleDeadline = nil
            self.streamDelegate?.streamCreated(frame.streamID, channel: context.channel)
            stream.received(frame.payload, context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.inReadBurst = false
        if let size = self.connectionWindow {
            self.connectionWindow = nil
            if let increment = InboundWindow.connectionIncrement(windowSize: size, target: Self.windowSize) {
                self.write(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment)))
            }
        }
        if !self.upstreamsToFlush.isEmpty {
            // Swapped with the spare list, not copied: emptying a copied array would allocate
            // a new one every read burst.
            var streams = self.spareUpstreamsToFlush
            swap(&streams, &self.upstreamsToFlush)
            for stream in streams {
                stream.upstreamFlushPending = false
                stream.upstream?.flush()
            }
            streams.removeAll(keepingCapacity: true)
            self.spareUpstreamsToFlush = streams
        }
        if self.flushPending {
            self.flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let closed as StreamClosedEvent:
            if let stream = self.streams.removeValue(forKey: closed.streamID) {
                stream.closed(context: context)
                self.streamDelegate?.streamClosed(closed.streamID, channel: context.channel)
                if self.streams.isEmpty { self.becameIdle() }
            }
            return
        case is NIOHTTP2StreamCreatedEvent:
            return
        case let window as NIOHTTP2WindowUpdatedEvent where window.streamID == .rootStream:
            // Acted on at the end of the read burst (the DATA that used the window came in one):
            // NIOHTTP2 reports the window again, as it was, while a WINDOW_UPDATE just written
            // still waits for the flush, so acting on every report would give it back twice.
            if let size = window.inboundWindowSize { self.connectionWindow = size }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.isWritable = context.channel.isWritable
        for stream in self.streams.values {
            stream.writabilityChanged(connectionWritable: self.isWritable, context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.timer = nil
        self.deadlines.cancel()
        let streams = self.streams.values
        self.streams.removeAll()
        for stream in streams { stream.closed(context: context) }
        context.fireChannelInactive()
    }

    // MARK: Frame delegate

    /// NIOHTTP2 wrote a frame to the socket: a DATA frame leaves its stream's backlog; a
    /// GOAWAY with COMPRESSION_ERROR is counted as abuse.
    func wroteFrame(_ frame: HTTP2Frame) {
        switch frame.payload {
        case .data(let data):
            guard let stream = self.streams[frame.streamID], let context = self.context else { return }
            if stream.backlog.sent(data.data.readableBytes) {
                stream.writabilityChanged(connectionWritable: self.isWritable, context: context)
            }
        case .goAway(_, let code, _) where code == .compressionError:
            // A header block that does not decompress within the advertised header list size
            // (an HPACK bomb), or does not decode at all. NIOHTTP2 answers it with this GOAWAY
            // but tells the pipeline only `UnableToParseFrame` (`HTTP2ConnectionMonitor` closes
            // the connection on it), so the kind is known only here.
            self.environment.metrics.increment(.http2Abuse(.hpackDecoding))
        default:
            return
        }
    }

    // MARK: Writing and flushing

    func write(_ frame: HTTP2Frame, promise: EventLoopPromise<Void>? = nil) {
        guard let context = self.context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(self.wrapOutboundOut(frame), promise: promise)
        self.flushPending = true
    }

    /// What was written goes out at the end of the read burst, or once at the end of this
    /// event-loop tick (the writes of every stream answered in it share one flush).
    func flushSoon() {
        guard !self.inReadBurst, !self.flushScheduled, let context = self.context, let task = self.scheduledFlush
        else { return }
        self.flushScheduled = true
        context.eventLoop.assumeIsolated().execute(task)
    }

    /// `flushSoon`'s task, made once per connection (`handlerAdded`): a new closure per call
    /// would be an allocation per answered stream. It holds the connection strongly until
    /// `handlerRemoved`: a weak reference gives an object a side table, and then every retain
    /// and release of the connection — each stream's `server`, every stream event — takes the
    /// slow path (measured, docs/benchmarks.md).
    private var scheduledFlush: (() -> Void)?

    private func runScheduledFlush() {
        self.flushScheduled = false
        guard self.flushPending, let context = self.context else { return }
        self.flushPending = false
        context.flush()
    }

    /// `stream` wrote to its backend: flushed at the end of the read burst, or now.
    func upstreamWritten(by stream: HTTP2ServerStream) {
        if self.inReadBurst {
            guard !stream.upstreamFlushPending else { return }
            stream.upstreamFlushPending = true
            self.upstreamsToFlush.append(stream)
        } else {
            stream.upstream?.flush()
        }
    }

    // MARK: Timer

    /// A stream's deadline is now `deadline`: the timer fires no later.
    func streamDeadlineSet(_ deadline: NIODeadline) {
        guard let context = self.context,
            let at = self.deadlines.deadlineSet(
                deadline, now: context.eventLoop.now, granularity: self.environment.snapshot.timerGranularity)
        else { return }
        self.arm(at)
    }

    private func arm(_ at: NIODeadline) {
        guard let context = self.context else { return }
        self.timer?.cancel()
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: at) {
            self.timerFired()
        }
    }

    /// No stream is open: the idle clock starts (no timer is scheduled for it unless it is
    /// the earliest deadline; the armed one finds it when it fires).
    private func becameIdle() {
        guard let context = self.context, context.channel.isActive else { return }
        let deadline = context.eventLoop.now + self.environment.snapshot.idleTimeout
        self.idleDeadline = deadline
        self.streamDeadlineSet(deadline)
    }

    private func timerFired() {
        self.timer = nil
        guard let context = self.context else { return }
        let now = context.eventLoop.now
        if let idle = self.idleDeadline, idle <= now, self.streams.isEmpty {
            // Idle: GOAWAY naming the last stream served, then close (RFC 9113 §6.8).
            self.idleDeadline = nil
            self.write(
                HTTP2Frame(
                    streamID: .rootStream,
                    payload: .goAway(lastStreamID: self.lastStreamID, errorCode: .noError, opaqueData: nil)))
            self.flushPending = false
            context.flush()
            context.close(promise: nil)
            return
        }
        for stream in self.streams.values {
            if let deadline = stream.deadline, deadline <= now { stream.timedOut(context: context) }
        }
        // After the time-outs: a stream may have a new deadline (a stalled upload timed out
        // waits no more; a reset one is gone).
        var earliest = self.streams.isEmpty ? self.idleDeadline : nil
        for stream in self.streams.values {
            if let deadline = stream.deadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        if let at = self.deadlines.fired(
            earliestPending: earliest, now: now, granularity: self.environment.snapshot.timerGranularity)
        {
            self.arm(at)
        }
    }
}

@available(*, unavailable)
extension HTTP2ServerConnection: Sendable {}
