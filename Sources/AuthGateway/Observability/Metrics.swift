import Foundation
import NIOConcurrencyHelpers

/// A metric sample's identity: family name plus its label pairs, already bounded in
/// cardinality by the callers (route names, status classes, failure reasons — never user ids
/// or raw paths; docs/architecture.md).
struct MetricKey: Hashable, Sendable {
    let name: String
    let labels: [String: String]

    init(_ name: String, _ labels: [String: String] = [:]) {
        self.name = name
        self.labels = labels
    }
}

/// Counters, gauges and histograms as plain values. Each event loop owns one (`WorkerMetrics`)
/// and mutates it without locking; a scrape collects a copy from every loop and merges them.
struct MetricsSnapshot: Sendable {
    /// `auth_gateway_requests_total` by (route, status class, protocol): kept apart from
    /// `counters` so the per-request increment builds no label dictionary.
    var requests: [RouteStatus: UInt64] = [:]
    var counters: [MetricKey: UInt64] = [:]
    var gauges: [MetricKey: Double] = [:]
    var histograms: [MetricKey: Histogram] = [:]

    struct RouteStatus: Hashable, Sendable {
        let route: String
        let statusClass: Int
        let wireProtocol: ClientProtocol
        /// An authorizer decision (docs/authorizer.md): labelled `mode="authorizer"`.
        var authorizer = false
    }

    mutating func merge(_ other: MetricsSnapshot) {
        self.requests.merge(other.requests, uniquingKeysWith: +)
        self.counters.merge(other.counters, uniquingKeysWith: +)
        self.gauges.merge(other.gauges, uniquingKeysWith: +)
        for (key, histogram) in other.histograms {
            self.histograms[key, default: Histogram(bounds: histogram.bounds)].merge(histogram)
        }
    }
}

/// One event loop's metrics. Only touched on that loop.
final class WorkerMetrics {
    private var recorded = MetricsSnapshot()
    /// The per-request histogram, keyed by backend name alone: hashing a `MetricKey` hashes
    /// its label dictionary (measured on the request path); merged into `values` when read.
    private var upstreamDurations: [String: Histogram] = [:]

    /// Everything recorded so far (read by the metrics endpoint, not per request).
    var values: MetricsSnapshot {
        var snapshot = self.recorded
        for (backend, histogram) in self.upstreamDurations {
            snapshot.histograms[
                MetricKey.upstreamDuration(backend: backend), default: Histogram(bounds: histogram.bounds)
            ].merge(histogram)
        }
        return snapshot
    }

    func countRequest(route: String, status: Int, protocol wireProtocol: ClientProtocol, authorizer: Bool = false) {
        self.recorded.requests[
            .init(route: route, statusClass: status / 100, wireProtocol: wireProtocol, authorizer: authorizer),
            default: 0] += 1
    }

    func increment(_ key: MetricKey, by amount: UInt64 = 1) {
        self.recorded.counters[key, default: 0] += amount
    }

    func observeUpstreamDuration(backend: String, seconds: Double) {
        self.upstreamDurations[backend, default: Histogram()].observe(seconds)
    }

    func observe(_ key: MetricKey, seconds: Double) {
        self.recorded.histograms[key, default: Histogram()].observe(seconds)
    }

    func addGauge(_ key: MetricKey, _ delta: Double) {
        self.recorded.gauges[key, default: 0] += delta
    }
}

@available(*, unavailable)
extension WorkerMetrics: Sendable {}

/// Metrics of work that is not per request and not tied to one loop (config reloads, JWKS
/// fetches, refresh calls). Behind a lock, which is fine at that rate.
final class ProcessMetrics: Sendable {
    private let box = NIOLockedValueBox(MetricsSnapshot())

    func increment(_ key: MetricKey, by amount: UInt64 = 1) {
        self.box.withLockedValue { $0.counters[key, default: 0] += amount }
    }

    func setGauge(_ key: MetricKey, _ value: Double) {
        self.box.withLockedValue { $0.gauges[key] = value }
    }

    func observe(_ key: MetricKey, seconds: Double) {
        self.box.withLockedValue { $0.histograms[key, default: Histogram()].observe(seconds) }
    }

    var snapshot: MetricsSnapshot { self.box.withLockedValue { $0 } }
}

/// The protocol a client spoke for a request: a metric label and an access-log field.
enum ClientProtocol: String, Sendable {
    case http1 = "http/1.1"
    case h2
}

/// The metric families, named once.
enum MetricName {
    static let requests = "auth_gateway_requests_total"
    static let http2Abuse = "auth_gateway_http2_abuse_total"
    static let authFailures = "auth_gateway_auth_failures_total"
    static let upstreamDuration = "auth_gateway_upstream_duration_seconds"
    static let openConnections = "auth_gateway_open_connections"
    static let configReloads = "auth_gateway_config_reloads_total"
    static let refreshes = "auth_gateway_refreshes_total"
    static let refreshJoins = "auth_gateway_refresh_single_flight_joins_total"
    static let refreshGraceHits = "auth_gateway_refresh_grace_hits_total"
    static let profileCache = "auth_gateway_profile_cache_total"
    static let jwksFetches = "auth_gateway_jwks_fetches_total"
    static let jwksKeyAge = "auth_gateway_jwks_key_age_seconds"
    static let discoveryFetches = "auth_gateway_discovery_fetches_total"
    static let discoveryAge = "auth_gateway_discovery_document_age_seconds"
    static let authServiceDuration = "auth_gateway_auth_service_duration_seconds"
    static let upstreamErrors = "auth_gateway_upstream_errors_total"
    static let verifiedCacheEntries = "auth_gateway_verified_token_cache_entries"
    static let sharedStateErrors = "auth_gateway_shared_state_errors_total"
    static let sharedStateUp = "auth_gateway_shared_state_up"
    static let traceSpansDropped = "auth_gateway_trace_spans_dropped_total"
    static let introspections = "auth_gateway_introspections_total"
    static let backendUp = "auth_gateway_backend_up"
    static let backendEjections = "auth_gateway_backend_ejections_total"
    static let rateLimited = "auth_gateway_rate_limited_total"
    static let targetRefusals = "auth_gateway_request_target_refusals_total"
    static let signIns = "auth_gateway_sign_ins_total"
    static let signOuts = "auth_gateway_sign_outs_total"
    static let sessions = "auth_gateway_sessions"
    static let openStreams = "auth_gateway_open_streams"
    static let streamsClosed = "auth_gateway_streams_closed_total"
    static let signals = "auth_gateway_signals_total"
    static let exchanges = "auth_gateway_exchanges_total"
    static let assertionsSigned = "auth_gateway_assertions_signed_total"

    /// HELP text and type of every family, in the order they are rendered.
    static let families: [(name: String, type: String, help: String)] = [
        (requests, "counter", "Requests answered, by route, status class and client protocol"),
        (authFailures, "counter", "Requests refused by authentication or authorization, by reason"),
        (upstreamDuration, "histogram", "Time from sending a request to a backend until its response head arrived"),
        (upstreamErrors, "counter", "Backend failures, by backend and kind"),
        (openConnections, "gauge", "Open client connections"),
        (configReloads, "counter", "Configuration reloads, by result"),
        (refreshes, "counter", "Transparent session refreshes, by outcome"),
        (refreshJoins, "counter", "Requests that joined a refresh already in flight"),
        (refreshGraceHits, "counter", "Requests served from the refresh grace table"),
        (profileCache, "counter", "Profile cache lookups, by result"),
        (jwksFetches, "counter", "JWKS fetches, by issuer and result"),
        (jwksKeyAge, "gauge", "Seconds since the JWKS of an issuer was last fetched successfully"),
        (discoveryFetches, "counter", "OpenID Connect discovery document fetches, by issuer and result"),
        (discoveryAge, "gauge", "Seconds since the discovery document of an issuer was last fetched and accepted"),
        (authServiceDuration, "histogram", "Auth service call duration, by operation"),
        (signIns, "counter", "Browser sign-ins (callbacks), by outcome"),
        (signOuts, "counter", "Browser sessions ended, by kind: rp, backchannel, expired, refresh_rejected"),
        (sessions, "gauge", "Browser session records held by this instance"),
        (
            openStreams, "gauge",
            "Long-lived streams open (WebSocket tunnels, streamed responses, HTTP/2 streams), by route"
        ),
        (
            streamsClosed, "counter",
            "Long-lived streams the gateway ended, by reason: expiry, sign_out, backchannel, signal, reload"
        ),
        (signals, "counter", "Shared Signals events received, by event and outcome"),
        (verifiedCacheEntries, "gauge", "Entries in the verified-token cache"),
        (
            sharedStateErrors, "counter",
            "Failed shared-state database operations, by operation (the request fell back to the local table)"
        ),
        (
            sharedStateUp, "gauge",
            "1 while refreshes go through the shared-state database, 0 while they fall back to the local table"
        ),
        (
            http2Abuse, "counter",
            "HTTP/2 client connections closed for abuse (rapid reset, floods, oversized header blocks), by kind"
        ),
        (
            traceSpansDropped, "counter",
            "Sampled spans the trace exporter dropped, by reason (export_failed: collector down or refusing; queue_full)"
        ),
        (
            introspections, "counter",
            "Opaque-token introspections, by outcome: calls (active, inactive, unavailable) and answers without a call (cached, coalesced)"
        ),
        (backendUp, "gauge", "1 while a backend URL is healthy and not ejected (whatever panic routing does), else 0"),
        (backendEjections, "counter", "Times a backend URL was ejected by outlier detection"),
        (rateLimited, "counter", "Requests refused by a rate limit, by limit and route"),
        (
            targetRefusals, "counter",
            "Requests whose target was refused before any decision (an ambiguous path or host, or no target at all), by problem type"
        ),
        (
            exchanges, "counter",
            "Token exchanges for routes with exchange, by route and outcome: calls (exchanged, refused, unavailable) and answers without a call (cached, joined)"
        ),
        (assertionsSigned, "counter", "Identity assertions signed for backends (a reused assertion is not counted)"),
    ]
}

/// Renders merged metrics in the Prometheus text exposition format (version 0.0.4).
enum PrometheusText {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    static func render(_ metrics: MetricsSnapshot) -> String {
        var output = ""
        for family in MetricName.families {
            output += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.type)\n"
            if family.name == MetricName.requests {
                let rows = metrics.requests.sorted {
                    ($0.key.route, $0.key.statusClass, $0.key.wireProtocol.rawValue, $0.key.authorizer ? 1 : 0) < (
                        $1.key.route, $1.key.statusClass, $1.key.wireProtocol.rawValue, $1.key.authorizer ? 1 : 0
                    )
                }
                for (key, value) in rows {
                    // Only authorizer decisions carry `mode`: proxied requests' series stay as they were.
                    let mode = key.authorizer ? ",mode=\"authorizer\"" : ""
                    output +=
                        "\(family.name){route=\"\(Self.escape(key.route))\",status_class=\"\(key.statusClass)xx\",protocol=\"\(key.wireProtocol.rawValue)\"\(mode)} \(value)\n"
                }
                continue
            }
            switch family.type {
            case "counter":
                for (key, value) in Self.sorted(metrics.counters, family.name) {
                    output += "\(family.name)\(Self.labels(key.labels)) \(value)\n"
                }
            case "gauge":
                for (key, value) in Self.sorted(metrics.gauges, family.name) {
                    output += "\(family.name)\(Self.labels(key.labels)) \(Self.number(value))\n"
                }
            default:
                for (key, histogram) in Self.sorted(metrics.histograms, family.name) {
                    for row in histogram.cumulative {
                        var labels = key.labels
                        labels["le"] = row.bound
                        output += "\(family.name)_bucket\(Self.labels(labels)) \(row.count)\n"
                    }
                    output += "\(family.name)_sum\(Self.labels(key.labels)) \(Self.number(histogram.sum))\n"
                    output += "\(family.name)_count\(Self.labels(key.labels)) \(histogram.count)\n"
                }
            }
        }
        return output
    }

    private static func sorted<Value>(_ values: [MetricKey: Value], _ name: String) -> [(key: MetricKey, value: Value)]
    {
        values.filter { $0.key.name == name }.sorted { Self.labels($0.key.labels) < Self.labels($1.key.labels) }
    }

    static func labels(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        let pairs = labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escape($0.value))\"" }
        return "{" + pairs.joined(separator: ",") + "}"
    }

    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    static func number(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
