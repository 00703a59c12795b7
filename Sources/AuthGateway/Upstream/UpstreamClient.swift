import NIOCore
import NIOHTTP1

/// A request the gateway itself makes (to the auth service or a JWKS endpoint).
struct UpstreamRequest: Sendable {
    var method: HTTPMethod
    var path: String
    var headers: HTTPHeaders
    var body: ByteBuffer?
}

struct UpstreamResponse: Sendable {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: ByteBuffer
}

/// Why a call of the gateway's own failed: every case means "the service is unavailable".
enum UpstreamClientError: Error, Equatable {
    case unreachable
    case timeout
    case invalidResponse
    case responseTooLarge
}

/// Makes request/response calls over one of the loop's `UpstreamPool`s, buffering the
/// response (bounded). Runs on its pool's event loop; callers on that loop get futures of it.
final class UpstreamClient {
    let pool: UpstreamPool
    let timeout: TimeAmount
    /// `Host` header value for requests.
    let hostHeader: String
    static let maxResponseBytes = 1 << 20

    init(pool: UpstreamPool, timeout: TimeAmount, hostHeader: String) {
        self.pool = pool
        self.timeout = timeout
        self.hostHeader = hostHeader
    }

    var eventLoop: EventLoop { self.pool.eventLoop }

    /// Starts the call; must run on the pool's event loop.
    func execute(_ request: UpstreamRequest) -> EventLoopFuture<UpstreamResponse> {
        self.eventLoop.preconditionInEventLoop()
        let promise = self.eventLoop.makePromise(of: UpstreamResponse.self)
        var request = request
        request.headers.replaceOrAdd(name: "Host", value: self.hostHeader)
        let call = UpstreamCall(request: request, pool: self.pool, promise: promise)
        call.start(timeout: self.timeout)
        return promise.futureResult
    }
}

@available(*, unavailable)
extension UpstreamClient: Sendable {}

/// One call in flight: leases, writes, collects, releases. Completes its promise exactly once.
private final class UpstreamCall: UpstreamLeaseRequester, UpstreamConnectionDelegate {
    private let request: UpstreamRequest
    private let pool: UpstreamPool
    private var promise: EventLoopPromise<UpstreamResponse>?
    private var connection: UpstreamLease?
    private var timeoutTask: Scheduled<Void>?
    private var head: HTTPResponseHead?
    private var body: ByteBuffer?
    /// Keeps the call alive while the pool and connection hold it only weakly.
    private var retainSelf: UpstreamCall?

    init(request: UpstreamRequest, pool: UpstreamPool, promise: EventLoopPromise<UpstreamResponse>) {
        self.request = request
        self.pool = pool
        self.promise = promise
    }

    func start(timeout: TimeAmount) {
        self.retainSelf = self
        self.timeoutTask = self.pool.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
            self?.fail(.timeout)
        }
        switch self.pool.lease(for: self) {
        case .leased(let connection, let reused):
            self.leaseSucceeded(connection, reused: reused)
        case .pending:
            break
        }
    }

    func leaseSucceeded(_ connection: UpstreamLease, reused: Bool) {
        guard self.promise != nil else {
            connection.returnUnused(reused: reused)
            return
        }
        self.connection = connection
        connection.delegate = self
        var head = HTTPRequestHead(
            version: .http1_1, method: self.request.method, uri: self.request.path, headers: self.request.headers)
        if let body = self.request.body {
            head.headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
        }
        connection.sendHead(UpstreamRequestHead(head), chunkedBody: false, upgrade: false)
        if let body = self.request.body { connection.sendBody(body) }
        connection.sendEnd()
        connection.flush()
    }

    func leaseFailed(_ error: GatewayError) {
        self.fail(.unreachable)
    }

    func upstreamResponseHead(_ head: UpstreamResponseHead) {
        self.head = head.httpResponseHead
    }

    func upstreamResponseBody(_ part: ByteBuffer) {
        var part = part
        if self.body == nil {
            self.body = part
        } else {
            self.body!.writeBuffer(&part)
        }
        if self.body!.readableBytes > UpstreamClient.maxResponseBytes {
            self.fail(.responseTooLarge)
        }
    }

    func upstreamResponseEnd() {
        guard let head = self.head, let promise = self.promise else { return }
        self.promise = nil
        self.timeoutTask?.cancel()
        if let connection = self.connection {
            self.connection = nil
            connection.release(reusable: connection.reusable)
        }
        self.retainSelf = nil
        promise.succeed(UpstreamResponse(status: head.status, headers: head.headers, body: self.body ?? ByteBuffer()))
    }

    func upstreamReadComplete() {}

    func upstreamClosed(protocolError: Bool) {
        self.connection = nil
        self.fail(protocolError ? .invalidResponse : .unreachable)
    }

    func upstreamWritabilityChanged(_ writable: Bool) {}

    var shouldReadFromUpstream: Bool { true }

    private func fail(_ error: UpstreamClientError) {
        guard let promise = self.promise else { return }
        self.promise = nil
        self.timeoutTask?.cancel()
        if let connection = self.connection {
            self.connection = nil
            connection.close()
        } else {
            self.pool.cancelLease(for: self)
        }
        self.retainSelf = nil
        promise.fail(error)
    }
}
