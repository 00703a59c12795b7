import NIOCore
import NIOHTTP1
import Tracing

/// OpenTelemetry tracing of requests (docs/operations.md), built once from `tracing`: a tracer
/// (swift-otel's, exporting over OTLP/HTTP in batches off the request path) behind the gateway's
/// own sampling decision, so that a request that is not traced creates nothing — without `tracing`
/// there is no `GatewayTracing` at all and an incoming `traceparent` is forwarded as any header.
///
/// Sampling is parent-based: a client's `traceparent` decides (its sampled flag), otherwise a
/// new trace is recorded with probability `sampleRatio`.
final class GatewayTracing: Sendable {
    private let tracer: any Tracer
    let sampleRatio: Double
    let recordSubject: Bool

    init(tracer: any Tracer, sampleRatio: Double, recordSubject: Bool) {
        self.tracer = tracer
        self.sampleRatio = sampleRatio
        self.recordSubject = recordSubject
    }

    /// The trace of a request, or nil when it is not sampled.
    func start(_ head: HTTPRequestHead, protocol wireProtocol: ClientProtocol) -> RequestTrace? {
        let incoming = head.headers.first(name: "traceparent").flatMap(TraceParent.init(parsing:))
        if let incoming {
            guard incoming.sampled else { return nil }
        } else if self.sampleRatio < 1 {
            // No random draw at all at 0 (tracing configured, nothing sampled).
            guard self.sampleRatio > 0, Double.random(in: 0..<1) < self.sampleRatio else { return nil }
        }
        var context = ServiceContext.topLevel
        if incoming != nil { self.tracer.extract(head.headers, into: &context, using: HeaderExtractor()) }
        let span = self.tracer.startSpan(head.method.rawValue, context: context, ofKind: .server)
        span.attributes["http.request.method"] = head.method.rawValue
        span.attributes["network.protocol.name"] = wireProtocol == .h2 ? "http/2" : "http/1.1"
        return RequestTrace(tracer: self.tracer, server: span, recordSubject: self.recordSubject)
    }
}

/// One traced request: its server span and the child spans around what it waits for
/// (signature verification on a cache miss, refresh, profile fetch, the upstream call).
/// Attributes are the route, status, protocol and auth outcome — never a token, a cookie, or a
/// user identifier (the verified `sub` only with `tracing.recordSubject`).
final class RequestTrace: Sendable {
    private let tracer: any Tracer
    let server: any Span
    private let recordSubject: Bool

    init(tracer: any Tracer, server: any Span, recordSubject: Bool) {
        self.tracer = tracer
        self.server = server
        self.recordSubject = recordSubject
    }

    /// The W3C trace id (for the access log).
    var traceID: String? { self.traceParent(of: self.server)?.traceID }

    func child(_ name: String, kind: SpanKind = .internal) -> any Span {
        self.tracer.startSpan(name, context: self.server.context, ofKind: kind)
    }

    /// A child span that began at `start` (opened only once it is known to be worth one).
    func child(_ name: String, startedAt start: DefaultTracerClock.Instant) -> any Span {
        self.tracer.startSpan(name, context: self.server.context, ofKind: .internal, at: start)
    }

    /// `traceparent` and `tracestate` naming `span` as the parent, for the backend.
    func propagationHeaders(for span: any Span) -> HeaderFields {
        var headers = HTTPHeaders()
        self.tracer.inject(span.context, into: &headers, using: HeaderInjector())
        return headers.map { ($0.name, $0.value) }
    }

    private func traceParent(of span: any Span) -> TraceParent? {
        var headers = HTTPHeaders()
        self.tracer.inject(span.context, into: &headers, using: HeaderInjector())
        return headers.first(name: "traceparent").flatMap(TraceParent.init(parsing:))
    }

    /// Ends the server span with what the request came to.
    func finish(status: Int, route: String?, error: GatewayError?, subject: String?) {
        let span = self.server
        span.attributes["http.response.status_code"] = status
        if let route { span.attributes["http.route"] = route }
        span.attributes["auth.outcome"] = error?.errorType ?? "ok"
        if self.recordSubject, let subject { span.attributes["enduser.id"] = subject }
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
        span.end()
    }
}

/// A W3C `traceparent` (Trace Context §3.2): `00-<32 hex>-<16 hex>-<2 hex>`.
struct TraceParent: Equatable {
    let traceID: String
    let parentID: String
    let sampled: Bool

    init?(parsing value: String) {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[0] != "ff", parts[1].count == 32, parts[2].count == 16,
            parts[3].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy(Self.isLowerHex) }),
            parts[1].contains(where: { $0 != "0" }), parts[2].contains(where: { $0 != "0" }),
            let flags = UInt8(parts[3], radix: 16)
        else { return nil }
        // Version 00 has exactly four fields.
        if parts[0] == "00" && parts.count != 4 { return nil }
        self.traceID = String(parts[1])
        self.parentID = String(parts[2])
        self.sampled = flags & 1 == 1
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
    }
}

private struct HeaderExtractor: Extractor {
    func extract(key: String, from carrier: HTTPHeaders) -> String? { carrier.first(name: key) }
}

private struct HeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPHeaders) {
        carrier.replaceOrAdd(name: key, value: value)
    }
}
