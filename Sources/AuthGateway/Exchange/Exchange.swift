import NIOCore
import NIOHTTP1

/// A request in flight and what has been learned about it, from its head to its finish. A
/// class: it is updated in place all through the request (as a struct, each update copied
/// it: measured, ~3 % of the CPU in retain/release).
///
/// It holds only what every framing has; what one framing alone keeps of a request lives in
/// that framing (`HTTP1ServerConnection`: the held response head, chunking, closing;
/// `HTTP2ServerStream`: never-indexed fields, `grpc-timeout`; `HTTP2StreamStateMachine`: held
/// frames, gRPC).
final class Exchange {
    let requestID: String
    let wireProtocol: ClientProtocol
    let method: HTTPMethod
    let uri: String
    let start: NIODeadline
    /// The request body is chunked (and goes upstream chunked).
    let requestChunked: Bool
    var plan: ForwardPlan?
    /// The matched route, once known (also for requests answered locally).
    var routeName: String?
    var local: LocalResponse?
    var responseStatus = 0
    var upstreamSentAt: NIODeadline?
    var bytesIn = 0
    var bytesOut = 0
    /// The request's trace when it is sampled (`tracing` on); nil otherwise.
    var trace: RequestTrace?

    /// The gateway's own answer with `error`. Once authentication has succeeded it carries
    /// the plan's response headers (new tokens, session cookies): a refresh already rotated
    /// the client's refresh token, and a 502 must not lose the new one (docs/authentication.md).
    func problem(_ error: GatewayError) -> LocalResponse {
        .problem(error, requestID: self.requestID, extraHeaders: self.plan?.responseHeaders ?? [])
    }

    init(
        requestID: String, protocol wireProtocol: ClientProtocol = .http1, method: HTTPMethod, uri: String,
        start: NIODeadline,
        requestChunked: Bool
    ) {
        self.requestID = requestID
        self.wireProtocol = wireProtocol
        self.method = method
        self.uri = uri
        self.start = start
        self.requestChunked = requestChunked
    }

    /// An exchange for input that never became a request head (parse error, slow headers).
    static func bare(requestID: String, protocol wireProtocol: ClientProtocol = .http1) -> Exchange {
        Exchange(
            requestID: requestID, protocol: wireProtocol, method: .GET, uri: "-", start: .now(), requestChunked: false)
    }

    /// The one place every request ends (docs/architecture.md): request metrics (under the
    /// matched route, "-" when none matched), the auth-failure reason, the access-log line.
    func finish(status: Int, error: GatewayError?, environment: any ExchangeEnvironment, client: String) {
        let metrics = environment.metrics
        let authorizer = self.local?.authorizer == true || self.plan?.local?.authorizer == true
        metrics.countRequest(
            route: self.routeName ?? "-", status: status, protocol: self.wireProtocol, authorizer: authorizer)
        if let trace = self.trace {
            self.plan?.upstreamSpan?.end()
            trace.finish(status: status, route: self.routeName, error: error, subject: self.plan?.subject)
        }
        if let reason = error?.authFailureReason {
            metrics.increment(.authFailure(reason: reason))
        }
        if let limit = error?.rateLimitName {
            metrics.increment(.rateLimited(limit: limit, route: self.routeName))
        }
        if let error, error.refusesTarget {
            metrics.increment(.targetRefused(error))
        }
        let accessLog = environment.accessLog
        guard accessLog.isEnabled else { return }
        let duration = Double((NIODeadline.now() - self.start).nanoseconds) / 1e9
        // A refused target is logged by its request id only (docs/forwarding.md).
        let path =
            error?.refusesTarget == true
            ? "-" : self.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? self.uri
        accessLog.record(
            AccessLog.Entry(
                requestID: self.requestID,
                method: self.method.rawValue,
                path: path,
                wireProtocol: self.wireProtocol,
                route: self.routeName,
                status: status,
                durationSeconds: duration,
                client: client,
                backend: self.plan?.route.backend,
                subject: self.plan?.subject,
                apiKey: self.plan?.apiKey,
                errorType: error?.errorType,
                bytesIn: self.bytesIn,
                bytesOut: self.bytesOut,
                traceID: self.trace?.traceID,
                rateLimit: error?.rateLimitName,
                authorizer: authorizer
            ),
            timestamp: environment.wallClock()
        )
    }
}

@available(*, unavailable)
extension Exchange: Sendable {}

extension HTTPMethod {
    /// RFC 9110 §9.2.2: repeating the request has the same effect as sending it once, so a
    /// bodiless one may be replayed on a fresh upstream (`ExchangeStateMachine.upstreamFailed`).
    var isIdempotent: Bool {
        switch self {
        case .GET, .HEAD, .OPTIONS, .PUT, .DELETE, .TRACE: return true
        default: return false
        }
    }
}
